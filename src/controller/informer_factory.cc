#include "controller/informer_factory.h"

#include "api/json_fields.h"
#include "kube/tfjob_resources.h"

namespace tfjob::controller {

std::string ClusterScopedKey(const nlohmann::json& object) {
  return api::StringField(api::ObjectField(object, "metadata"), "name");
}

std::string InformerFactory::IdOf(const ListWatchSpec& spec) {
  const std::string version = spec.gvr_source ? "*" : spec.gvr.version;
  std::string id = spec.gvr.group + "/" + version + "/" + spec.gvr.resource + "|" + spec.ns + "|" +
                   spec.label_selector + "|" + spec.field_selector;
  // Informers that cut different parts of their objects are not the same informer.
  if (!spec.watch_prune.empty()) {
    id += "|" + spec.watch_prune.field + ":";
    for (const std::string& k : spec.watch_prune.keep) id += k + ",";
  }
  if (!spec.protobuf.empty()) id += "|protobuf:" + spec.protobuf.name;
  return id;
}

void InformerFactory::Start() {
  MutexLock lock(mu_);
  for (const std::string& id : order_) {
    Entry& e = entries_.at(id);
    if (e.started) continue;
    e.started = true;
    e.start();
  }
}

bool InformerFactory::HasSynced() const {
  MutexLock lock(mu_);
  for (const auto& [id, e] : entries_)
    if (!e.synced()) return false;
  return true;
}

void InformerFactory::Stop() {
  MutexLock lock(mu_);
  for (const std::string& id : order_) entries_.at(id).stop();
}

Runnable InformerFactory::AsRunnable() {
  return Runnable{.name = "informers",
                  .start =
                      [this] {
                        Start();
                        return OkStatus();
                      },
                  .ready = [this] { return HasSynced(); },
                  .stop = [this] { Stop(); },
                  .readiness = [this] { return HasSynced() ? OkStatus() : UnavailableError("caches not synced"); }};
}

size_t InformerFactory::size() const {
  MutexLock lock(mu_);
  return entries_.size();
}

size_t InformerFactory::CountOf(const std::string& resource) const {
  MutexLock lock(mu_);
  const std::string needle = "/" + resource + "|";
  size_t n = 0;
  for (const auto& [id, e] : entries_)
    if (id.find(needle) != std::string::npos) ++n;
  return n;
}

Informer<api::PriorityClass>& PriorityClassInformer(InformerFactory& factory) {
  return factory.For<api::PriorityClass>(ListWatchSpec{kube::kPriorityClasses, ""}, api::DecodePriorityClass,
                                         ClusterScopedKey);
}

}  // namespace tfjob::controller
