#include "cli/session.h"

#include <algorithm>
#include <cstdio>

#include "api/exit_codes.h"
#include "api/json_fields.h"
#include "api/labels.h"
#include "api/manifest.h"
#include "kube/resource_path.h"

namespace tfjob::cli {

using nlohmann::json;

void Output::Line(const std::string& line) {
  MutexLock lock(mu_);
  *out_ << line << "\n" << std::flush;
}

void Output::Raw(const std::string& text) {
  MutexLock lock(mu_);
  *out_ << text << std::flush;
}

int Fail(const Session& s, const Status& status, std::ostream& err, const std::string& what) {
  if (status.code() == StatusCode::kUnavailable || status.code() == StatusCode::kDeadlineExceeded) {
    err << "tfjob: cannot reach the API server " << s.config.server << " (" << s.config.source
        << "): " << status.message() << "\n";
    return api::kExitUsage;
  }
  if (status.code() == StatusCode::kCancelled) return api::kExitInterrupted;
  if (status.code() == StatusCode::kDataLoss) {  // too large or undecodable: the server's fault (docs/cli.md)
    err << "tfjob: the API server " << s.config.server << " (" << s.config.source
        << ") sent an answer tfjob refuses: " << status.message() << "\n";
    return api::kExitUsage;
  }
  std::string m = status.message();
  if (status.code() == StatusCode::kNotFound &&
      m.find("the server could not find the requested resource") != std::string::npos)
    err << "tfjob: the API server " << s.config.server
        << " does not serve TFJobs (kubeflow.org/v1): install the CRD with `tfjob crd | kubectl apply -f -`\n";
  else
    err << "tfjob: " << (what.empty() ? "" : what + ": ") << m << "\n";
  return api::kExitFailed;
}

int JobGetFailed(const Session& s, const std::string& name, const Status& status, std::ostream& err) {
  if (IsNotFound(status) &&
      status.message().find("the server could not find the requested resource") == std::string::npos) {
    err << "tfjob: " << JobRef(s.ns, name) << " not found\n";
    return api::kExitFailed;
  }
  return Fail(s, status, err);
}

void SayGaveUp(const Session& s, const std::string& why, std::ostream& err) {
  err << "tfjob: the API server " << s.config.server << " (" << s.config.source << "): " << Esc(why) << "\n";
}

StatusOr<std::unique_ptr<Session>> Connect(const ConnectionArgs& args, const CliIo& io) {
  auto config = kube::ResolveClientConfig(args.kubeconfig, args.context, io.env);
  if (!config.ok()) return config.status();
  auto s = std::make_unique<Session>();
  s->config = std::move(*config);
  s->transport = std::make_unique<kube::CurlTransport>(s->config, s->clock);
  kube::RestClientOptions options;
  options.qps = 50;
  options.burst = 100;
  options.max_retries = 2;
  options.request_timeout = args.request_timeout;
  options.call_timeout = args.request_timeout;  // --request-timeout: the whole call, retries included
  s->client = std::make_unique<kube::RestClient>(*s->transport, s->clock, options);
  s->ns = args.all_namespaces ? "" : !args.ns.empty() ? args.ns : !s->config.ns.empty() ? s->config.ns : "default";
  return s;
}

std::unique_ptr<Session> ConnectOrSay(const ConnectionArgs& args, const CliIo& io) {
  auto session = Connect(args, io);
  if (session.ok()) return std::move(*session);
  *io.err << "tfjob: " << session.status().message() << "\n";
  return nullptr;
}

std::string JobRef(const std::string& ns, const std::string& name) {
  return "TFJob " + Esc(ns) + "/" + Esc(name);
}

std::vector<PodView> JobPods(const std::vector<json>& pods, const std::string& job_uid) {
  std::vector<PodView> out;
  for (const auto& p : pods) {
    // Only pods the job owns (a same-named earlier job's pods being deleted are not its).
    bool owned = job_uid.empty();
    const json& meta = api::ObjectField(p, "metadata");
    if (auto refs = meta.find("ownerReferences"); refs != meta.end() && refs->is_array()) {
      for (const auto& r : *refs)
        if (api::StringField(r, "uid") == job_uid) owned = true;
    } else {
      owned = true;
    }
    if (owned) out.push_back(DecodePodView(p));
  }
  std::sort(out.begin(), out.end(), [](const PodView& a, const PodView& b) { return a.name < b.name; });
  return out;
}

std::string JobPodSelector(const std::string& job) {
  return std::string(api::kLabelJobName) + "=" + job;
}

std::string LogPath(const std::string& ns, const std::string& pod, const std::string& container,
                    const std::string& extra) {
  return kube::ResourcePath(kube::kPods, ns, pod, "log") + "?container=" + kube::UrlEncode(container) + extra;
}

std::string FormatMs(std::chrono::milliseconds d) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.0fs", std::chrono::duration<double>(d).count());
  return buf;
}

int WithStops(const CliIo& io, const std::function<int(std::stop_token, std::stop_token)>& body) {
  if (io.with_signal_stops) return io.with_signal_stops(body);
  return body({}, {});
}

}  // namespace tfjob::cli
