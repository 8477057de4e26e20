#pragma once
// ResourcePath: the URL path of a Kubernetes resource, collection or subresource
// ("/api/v1/namespaces/ns/pods/name", "/apis/kubeflow.org/v1/namespaces/ns/tfjobs/x/status")
// and the query of list/watch calls. Concrete value type; the only place that builds API paths.

#include <chrono>
#include <optional>
#include <string>

namespace tfjob::kube {

struct GroupVersionResource {
  std::string group;  // "" for the core group
  std::string version;
  std::string resource;  // plural, lower case
  friend bool operator==(const GroupVersionResource&, const GroupVersionResource&) = default;
};

inline const GroupVersionResource kPods{"", "v1", "pods"};
inline const GroupVersionResource kServices{"", "v1", "services"};
inline const GroupVersionResource kEvents{"", "v1", "events"};
inline const GroupVersionResource kConfigMaps{"", "v1", "configmaps"};
inline const GroupVersionResource kNamespaces{"", "v1", "namespaces"};
inline const GroupVersionResource kLeases{"coordination.k8s.io", "v1", "leases"};
inline const GroupVersionResource kCrds{"apiextensions.k8s.io", "v1", "customresourcedefinitions"};

struct ListOptions {
  std::string label_selector;
  std::string field_selector;
  std::string resource_version;
  std::string continue_token;
  int64_t limit = 0;
  bool watch = false;
  bool allow_watch_bookmarks = false;
  std::optional<std::chrono::seconds> timeout;  // server-side timeoutSeconds
};

// "" namespace = cluster scope (or all namespaces for a namespaced collection).
std::string ResourcePath(const GroupVersionResource& gvr, const std::string& ns, const std::string& name = "",
                         const std::string& subresource = "");
// The discovery document of a named API group: "/apis/<group>".
std::string ApiGroupPath(const std::string& group);
// "?labelSelector=...&limit=..." (empty when no option is set). Values are percent-encoded.
std::string ListQuery(const ListOptions& options);
std::string UrlEncode(const std::string& value);

}  // namespace tfjob::kube
