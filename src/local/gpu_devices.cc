#include "local/gpu_devices.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <set>

#include "api/quantity.h"

extern char** environ;

namespace tfjob::local {
namespace {

std::string_view Trimmed(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

std::vector<std::string_view> SplitCommas(std::string_view s) {
  std::vector<std::string_view> out;
  for (;;) {
    size_t comma = s.find(',');
    out.push_back(Trimmed(s.substr(0, comma)));
    if (comma == std::string_view::npos) return out;
    s.remove_prefix(comma + 1);
  }
}

bool IsIndex(std::string_view s) {
  return !s.empty() && s.size() <= 9 &&
         std::all_of(s.begin(), s.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; });
}

// The UUID in "... (UUID: GPU-...)", or "".
std::string UuidIn(std::string_view line) {
  constexpr std::string_view kKey = "(UUID: ";
  size_t at = line.find(kKey);
  if (at == std::string_view::npos) return "";
  line.remove_prefix(at + kKey.size());
  size_t end = line.find(')');
  return end == std::string_view::npos ? "" : std::string(Trimmed(line.substr(0, end)));
}

std::string FindOnPath(const std::string& program, const std::string& path) {
  size_t start = 0;
  while (start <= path.size()) {
    size_t end = path.find(':', start);
    std::string dir = path.substr(start, end == std::string::npos ? std::string::npos : end - start);
    if (!dir.empty() && access((dir + "/" + program).c_str(), X_OK) == 0) return dir + "/" + program;
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return "";
}

// The output of `argv` (stdout only) and its exit status, at most `polls` x 100 ms.
bool RunAndRead(const std::vector<std::string>& argv, int polls, std::string* out, int* status) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return false;
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, fds[1], 1);
  posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t none;
  sigemptyset(&none);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK);
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = -1;
  int rc = posix_spawn(&pid, args[0], &actions, &attr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  close(fds[1]);
  if (rc != 0) {
    close(fds[0]);
    return false;
  }
  bool ended = false;
  for (int i = 0; i < polls && !ended; ++i) {
    pollfd p{fds[0], POLLIN, 0};
    if (poll(&p, 1, 100) <= 0) continue;
    char buf[4096];
    ssize_t n = read(fds[0], buf, sizeof buf);
    if (n > 0 && out->size() < (1u << 20)) out->append(buf, static_cast<size_t>(n));
    ended = n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN);
  }
  close(fds[0]);
  if (!ended) kill(pid, SIGKILL);
  while (waitpid(pid, status, 0) < 0 && errno == EINTR) {
  }
  return ended;
}

}  // namespace

std::vector<std::string> ParseVisibleDevices(std::string_view value) {
  std::vector<std::string> out;
  if (Trimmed(value).empty()) return out;
  std::set<std::string> seen;
  for (std::string_view entry : SplitCommas(value)) {
    const bool uuid = entry.starts_with("GPU-") || entry.starts_with("MIG-");
    if (!uuid && !IsIndex(entry)) break;  // CUDA stops at the first entry it cannot read
    if (seen.insert(std::string(entry)).second) out.emplace_back(entry);
  }
  return out;
}

std::vector<std::string> ParseNvidiaSmiList(std::string_view text) {
  std::vector<std::string> out;
  size_t gpu_at = 0;         // where the current GPU's entry is in `out`
  bool gpu_has_mig = false;  // its MIG devices replaced it
  while (!text.empty()) {
    size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
    std::string_view trimmed = Trimmed(line);
    std::string uuid = UuidIn(trimmed);
    if (uuid.empty()) continue;
    if (trimmed.starts_with("GPU ")) {
      gpu_at = out.size();
      gpu_has_mig = false;
      out.push_back(uuid);
    } else if (trimmed.starts_with("MIG ") && !out.empty()) {
      if (!gpu_has_mig) out.erase(out.begin() + static_cast<std::ptrdiff_t>(gpu_at));
      gpu_has_mig = true;
      out.push_back(uuid);
    }
  }
  return out;
}

StatusOr<std::vector<std::string>> ParseGpuFlag(std::string_view list) {
  std::vector<std::string> out;
  if (Trimmed(list).empty() || Trimmed(list) == "none") return out;
  for (std::string_view entry : SplitCommas(list)) {
    if (entry.empty()) return InvalidArgumentError("--gpus " + std::string(list) + ": an empty device id");
    if (std::find(out.begin(), out.end(), entry) == out.end()) out.emplace_back(entry);
  }
  return out;
}

GpuDevices ProbeNvidiaSmi(const std::string& path) {
  const std::string smi = FindOnPath("nvidia-smi", path);
  if (smi.empty()) return {{}, "no nvidia-smi on PATH"};
  std::string out;
  int status = 0;
  if (!RunAndRead({smi, "-L"}, 100, &out, &status)) return {{}, "nvidia-smi -L did not answer"};
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return {{}, "nvidia-smi -L failed"};
  return {ParseNvidiaSmiList(out), "nvidia-smi -L"};
}

StatusOr<int64_t> ContainerGpus(const nlohmann::json& container, const std::string& path) {
  auto resources = container.find("resources");
  if (resources == container.end() || !resources->is_object()) return 0;
  for (const char* list : {"limits", "requests"}) {
    auto l = resources->find(list);
    if (l == resources->end() || !l->is_object()) continue;
    auto v = l->find(std::string(kGpuResource));
    if (v == l->end()) continue;
    const std::string field = path + ".resources." + list + "[" + std::string(kGpuResource) + "]";
    std::optional<api::Quantity> q;
    if (v->is_string()) q = api::Quantity::Parse(v->get<std::string>());
    if (v->is_number_integer()) q = api::Quantity::Parse(std::to_string(v->get<int64_t>()));
    if (!q || q->milli() < 0 || q->milli() % 1000 != 0)
      return InvalidArgumentError(field + ": Invalid value: " + v->dump() + ": must be a whole number of GPUs");
    return q->milli() / 1000;
  }
  return 0;
}

std::vector<std::string> UnappliedResourceFields(const nlohmann::json& container) {
  std::vector<std::string> out;
  auto resources = container.find("resources");
  if (resources == container.end() || !resources->is_object()) return out;
  for (const char* list : {"limits", "requests"}) {
    auto l = resources->find(list);
    if (l == resources->end() || !l->is_object()) continue;
    for (auto it = l->begin(); it != l->end(); ++it)
      if (it.key() != kGpuResource) out.push_back(std::string(list) + "." + it.key());
  }
  if (auto claims = resources->find("claims"); claims != resources->end() && !claims->empty()) out.push_back("claims");
  return out;
}

int64_t GpuNeed::Total() const {
  int64_t sum = 0, init = 0;
  for (int64_t n : containers) sum += n;
  for (int64_t n : init_containers) init = std::max(init, n);
  return std::max(sum, init);
}

StatusOr<std::map<std::string, ReplicaGpus>> AssignGpus(const GpuDevices& found, const std::vector<GpuNeed>& needs) {
  int64_t total = 0;
  std::map<api::ReplicaType, std::pair<int64_t, int64_t>> by_type;  // type -> (replicas needing, GPUs)
  for (const auto& n : needs) {
    const int64_t t = n.Total();
    total += t;
    if (t > 0) {
      by_type[n.type].first += 1;
      by_type[n.type].second += t;
    }
  }
  if (total > static_cast<int64_t>(found.ids.size())) {
    std::string what;
    for (const auto& [type, count] : by_type)
      what += (what.empty() ? "" : ", ") + std::to_string(count.second) + " for " + std::to_string(count.first) + " " +
              std::string(api::ReplicaTypeName(type));
    std::string devices =
        found.ids.empty() ? "none" : std::to_string(found.ids.size()) + " (" + JoinDevices(found.ids) + ")";
    return InvalidArgumentError("this job needs " + std::to_string(total) + " GPUs (" + std::string(kGpuResource) +
                                ": " + what + ") but this machine offers " + devices + ", from " + found.source +
                                "; give the devices with --gpus LIST or CUDA_VISIBLE_DEVICES, or ask for fewer");
  }
  std::map<std::string, ReplicaGpus> out;
  size_t next = 0;
  for (const auto& n : needs) {
    ReplicaGpus& r = out[n.replica];
    const auto total_n = static_cast<size_t>(n.Total());
    r.devices.assign(found.ids.begin() + static_cast<std::ptrdiff_t>(next),
                     found.ids.begin() + static_cast<std::ptrdiff_t>(next + total_n));
    next += total_n;
    for (int64_t k : n.init_containers)
      r.init_containers.emplace_back(r.devices.begin(), r.devices.begin() + static_cast<std::ptrdiff_t>(k));
    size_t at = 0;
    for (int64_t k : n.containers) {
      r.containers.emplace_back(r.devices.begin() + static_cast<std::ptrdiff_t>(at),
                                r.devices.begin() + static_cast<std::ptrdiff_t>(at + static_cast<size_t>(k)));
      at += static_cast<size_t>(k);
    }
  }
  return out;
}

std::string JoinDevices(const std::vector<std::string>& devices) {
  std::string out;
  for (const auto& d : devices) out += (out.empty() ? "" : ",") + d;
  return out;
}

std::vector<std::pair<std::string, std::string>> GpuEnvironment(const std::vector<std::string>& devices) {
  const std::string list = JoinDevices(devices);
  return {{"CUDA_VISIBLE_DEVICES", list}, {"NVIDIA_VISIBLE_DEVICES", devices.empty() ? "void" : list}};
}

}  // namespace tfjob::local
