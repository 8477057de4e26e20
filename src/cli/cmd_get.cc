// `tfjob get [NAME] [-A] [-o yaml|json|wide] [--watch]` (docs/cli.md): the TFJob table.
#include <algorithm>
#include <map>
#include <optional>

#include <CLI/CLI.hpp>

#include "api/exit_codes.h"
#include "api/json_fields.h"
#include "api/manifest.h"
#include "cli/job_view.h"
#include "cli/session.h"
#include "cli/tracker.h"
#include "kube/tfjob_resources.h"

namespace tfjob::cli {
namespace {

using nlohmann::json;
using Ms = std::chrono::milliseconds;
using api::kExitOk;
using api::kExitUsage;
using kube::kTfJobs;

json Clean(json o) {
  if (o.contains("metadata") && o["metadata"].is_object()) o["metadata"].erase("managedFields");
  return o;
}

// The exit code of a failed GET of TFJob `name`: "not found" (1) when the TFJob is not there (not
// The TFJobs `get` shows: the one named, else every one of the namespace(s); an exit code if
// the request failed.
std::optional<int> FetchJobs(Session& s, const CliArgs& a, const CliIo& io, std::vector<json>& items) {
  if (!a.name.empty()) {
    auto j = s.client->Get(kTfJobs, s.ns, a.name);
    if (!j.ok()) return JobGetFailed(s, a.name, j.status(), *io.err);
    items.push_back(std::move(*j));
    return std::nullopt;
  }
  auto list = s.client->ListAll(kTfJobs, s.ns, {}, nullptr);
  if (!list.ok()) return Fail(s, list.status(), *io.err);
  items = std::move(*list);
  return std::nullopt;
}

// -o json|yaml: the object itself, or a List of them.
void PrintDocuments(const CliArgs& a, std::vector<json> items, std::ostream& out) {
  json doc;
  if (!a.name.empty()) {
    doc = Clean(items.front());
  } else {
    doc = {{"apiVersion", "v1"}, {"kind", "List"}, {"items", json::array()}};
    for (auto& i : items) doc["items"].push_back(Clean(std::move(i)));
  }
  out << (a.output == "json" ? doc.dump(2) + "\n" : api::ToYaml(doc));
}

// --watch: a row for every change of a TFJob, after the table of `views` (already printed).
int WatchTable(Session& s, const CliArgs& a, const CliIo& io, const GetTableOptions& t,
               const std::vector<JobView>& views) {
  return WithStops(io, [&](std::stop_token stop, std::stop_token) {
    Signal signal;
    Tracker tracker(*s.client, {kTfJobs, s.ns, "", a.name.empty() ? "" : "metadata.name=" + a.name},
                    [&] { signal.Notify(); });
    tracker.Start();
    // Rows keep the columns of the table above: each is formatted among every job seen.
    std::map<std::pair<std::string, std::string>, JobView> seen;
    for (const auto& v : views) seen[{v.ns, v.name}] = v;
    bool header = views.empty();
    while (!stop.stop_requested()) {
      signal.Wait(Ms(500));
      if (std::string why = tracker.GaveUp(); !why.empty()) {
        SayGaveUp(s, why, *io.err);
        return kExitUsage;
      }
      for (auto& [type, obj] : tracker.TakeEvents()) {
        JobView v = DecodeJobView(obj);
        auto key = std::make_pair(v.ns, v.name);
        seen[key] = v;
        std::vector<JobView> all;
        size_t at = 0;
        for (const auto& [k, j] : seen) {
          if (k == key) at = all.size();
          all.push_back(j);
        }
        auto lines = FormatGetTable(all, s.clock.Now(), t);
        if (header) *io.out << lines[0] << "\n";
        header = false;
        *io.out << lines[at + 1] << (type == kube::WatchEventType::kDeleted ? "   (deleted)" : "") << "\n";
        if (type == kube::WatchEventType::kDeleted) seen.erase(key);
        io.out->flush();
      }
    }
    return kExitOk;
  });
}

int Get(const CliArgs& a, const CliIo& io) {
  auto session = ConnectOrSay(a.conn, io);
  if (!session) return kExitUsage;
  Session& s = *session;
  std::vector<json> items;
  if (auto rc = FetchJobs(s, a, io, items)) return *rc;
  if (a.output == "json" || a.output == "yaml") {
    PrintDocuments(a, std::move(items), *io.out);
    return kExitOk;
  }
  GetTableOptions t;
  t.wide = a.output == "wide";
  t.namespaces = a.conn.all_namespaces;
  std::vector<JobView> views;
  for (const auto& i : items) views.push_back(DecodeJobView(i));
  std::sort(views.begin(), views.end(),
            [](const JobView& x, const JobView& y) { return std::tie(x.ns, x.name) < std::tie(y.ns, y.name); });
  if (views.empty() && !a.watch) {
    *io.err << "No TFJobs found" << (s.ns.empty() ? "" : " in namespace " + Esc(s.ns)) << ".\n";
    return kExitOk;
  }
  for (const auto& l : FormatGetTable(views, s.clock.Now(), t)) *io.out << l << "\n";
  io.out->flush();
  if (!a.watch) return kExitOk;
  return WatchTable(s, a, io, t, views);
}

class GetCommand : public ClusterCommand {
 public:
  explicit GetCommand(CLI::App& root)
      : ClusterCommand(root, "get", "List TFJobs of the cluster (state, age, replicas ready/total, restarts)") {
    CLI::App& app = this->app();
    app.add_option("NAME", args_.name, "A TFJob (default: all of the namespace)");
    app.add_flag("-A,--all-namespaces", args_.conn.all_namespaces, "TFJobs of every namespace");
    app.add_option("-o,--output", args_.output, "yaml, json or wide")->check(CLI::IsMember({"yaml", "json", "wide"}));
    app.add_flag("-w,--watch", args_.watch, "After the table, print a row whenever a TFJob changes (Ctrl-C ends)");
  }

 protected:
  int RunCluster(const CliArgs& a, const CliIo& io) override { return Get(a, io); }
};

}  // namespace

std::unique_ptr<Command> DefineGet(CLI::App& root) {
  return std::make_unique<GetCommand>(root);
}

}  // namespace tfjob::cli
