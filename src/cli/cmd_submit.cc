// `tfjob submit FILE [--wait [--follow]]` (docs/cli.md): creates the TFJobs of a file; with --wait
// follows the one job until it ends (job_wait.h).
#include <CLI/CLI.hpp>

#include "api/exit_codes.h"
#include "api/json_fields.h"
#include "api/manifest.h"
#include "cli/job_view.h"
#include "cli/job_wait.h"
#include "cli/session.h"
#include "common/file_reader.h"
#include "kube/tfjob_resources.h"

namespace tfjob::cli {
namespace {

using api::kExitFailed;
using api::kExitOk;
using api::kExitUsage;
using kube::kTfJobs;
using nlohmann::json;

// The manifest's bytes: the file, or the standard input with "-".
StatusOr<std::string> ReadManifestText(const std::string& file) {
  if (file != "-") return ReadFileBounded(file, api::kMaxManifestBytes);
  BoundedRead r = ReadFdBounded(0, api::kMaxManifestBytes);
  if (r.problem == ReadProblem::kTooLarge) return InvalidArgumentError(api::InputTooLargeMessage());
  if (r.problem != ReadProblem::kNone) return UnavailableError("cannot read the standard input");
  return std::move(r.bytes);
}

// The TFJobs of the manifest; every other document is skipped with a warning.
std::vector<json> SelectTfJobs(const std::vector<api::ManifestDocument>& docs, const std::string& file,
                               std::ostream& err) {
  std::vector<json> jobs;
  for (size_t i = 0; i < docs.size(); ++i) {
    const json& o = docs[i].object;
    if (!o.is_object()) continue;
    if (api::StringField(o, "kind") == "TFJob" && api::StringField(o, "apiVersion") == "kubeflow.org/v1")
      jobs.push_back(o);
    else
      err << file << ": warning: document " << i + 1 << ": skipped: kind \"" << Esc(api::StringField(o, "kind"))
          << "\" is not TFJob (submit creates TFJobs only)\n";
  }
  return jobs;
}

// Creates one TFJob, setting `ns` and `name` to where it was created; an exit code if it was not.
std::optional<int> CreateJob(Session& s, const CliArgs& a, const CliIo& io, json& j, std::string& ns,
                             std::string& name) {
  std::ostream& err = *io.err;
  json& meta = j["metadata"];
  if (!meta.is_object()) meta = json::object();
  std::string object_ns = api::StringField(meta, "namespace");
  if (!object_ns.empty() && !a.conn.ns.empty() && object_ns != a.conn.ns) {
    err << a.file << ": the namespace of TFJob " << Esc(api::StringField(meta, "name")) << " (\"" << Esc(object_ns)
        << "\") does not match -n \"" << Esc(a.conn.ns) << "\"\n";
    return kExitUsage;
  }
  ns = object_ns.empty() ? s.ns : object_ns;
  std::vector<std::string> warnings;
  auto created = s.client->CreateWithWarnings(kTfJobs, ns, j, "Warn", &warnings);
  for (const auto& w : warnings) err << "Warning: " << WarningText(w) << "\n";
  if (!created.ok()) {
    std::string n = api::StringField(meta, "name");
    if (IsAlreadyExists(created.status())) {
      err << "tfjob: " << JobRef(ns, n) << " already exists (`" << io.program << " delete " << Esc(n)
          << "` first, or another name)\n";
      return kExitFailed;
    }
    return Fail(s, created.status(), err, "creating " + JobRef(ns, n));
  }
  name = api::StringField(api::ObjectField(*created, "metadata"), "name");
  *io.out << JobRef(ns, name) << " created\n" << std::flush;
  return std::nullopt;
}

int Submit(const CliArgs& a, const CliIo& io) {
  std::ostream& err = *io.err;
  StatusOr<std::string> text = ReadManifestText(a.file);
  if (!text.ok()) {
    err << a.file << ": " << text.status().message() << "\n";
    return kExitUsage;
  }
  auto docs = api::ParseManifest(*text);
  if (!docs.ok()) {
    err << a.file << ": " << docs.status().message() << "\n";
    return kExitFailed;
  }
  std::vector<json> jobs = SelectTfJobs(*docs, a.file, err);
  if (jobs.empty()) {
    err << a.file << ": no TFJob found\n";
    return kExitFailed;
  }
  if (a.wait && jobs.size() != 1) {
    err << a.file << ": --wait follows one TFJob; the file has " << jobs.size() << "\n";
    return kExitUsage;
  }
  auto session = Connect(a.conn, io);
  if (!session.ok()) {
    err << "tfjob: " << session.status().message() << "\n";
    return kExitUsage;
  }
  Session& s = **session;
  std::string ns, name;
  for (auto& j : jobs)
    if (auto rc = CreateJob(s, a, io, j, ns, name)) return *rc;
  if (!a.wait) return kExitOk;
  WaitOptions w;
  w.follow = a.follow;
  w.max_log_requests = a.max_log_requests;
  w.timeout = a.timeout;
  w.delete_on_interrupt = a.delete_on_interrupt;
  return WithStops(io, [&](std::stop_token stop, std::stop_token) { return WaitForJob(s, ns, name, w, io, stop); });
}

class SubmitCommand : public ClusterCommand {
 public:
  explicit SubmitCommand(CLI::App& root)
      : ClusterCommand(
            root, "submit",
            "Create the TFJobs of a file in the cluster; --wait: the live replica table until the job ends") {
    CLI::App& app = this->app();
    app.add_option("FILE", args_.file, "TFJob manifest (YAML or JSON; - for standard input)")->required();
    app.add_flag("--wait", args_.wait,
                 "Wait for the job to end, showing its replicas; exit 0 Succeeded, 1 Failed, 124 timeout");
    app.add_flag("--follow", args_.follow, "With --wait: stream every replica's logs, prefixed");
    app.add_option("--timeout", timeout_,
                   "With --wait: stop waiting after this long (exit 124; the job keeps running)");
    app.add_flag("--delete-on-interrupt", args_.delete_on_interrupt,
                 "With --wait: Ctrl-C deletes the job (default: Ctrl-C stops watching only)");
    AddMaxLogRequests("more containers wait for a slot");
  }
  Status Check() override {
    if (args_.follow) args_.wait = true;  // --follow implies --wait
    return ClusterCommand::Check();
  }

 protected:
  int RunCluster(const CliArgs& a, const CliIo& io) override { return Submit(a, io); }
};

}  // namespace

std::unique_ptr<Command> DefineSubmit(CLI::App& root) {
  return std::make_unique<SubmitCommand>(root);
}

}  // namespace tfjob::cli
