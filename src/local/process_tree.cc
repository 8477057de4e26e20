#include "local/process_tree.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cstdlib>
#include <deque>
#include <map>
#include <string>
#include <thread>

namespace tfjob::local {
namespace {

std::string ReadSmallFile(const std::string& path) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return {};
  std::string out;
  char buf[4096];
  ssize_t n;
  while ((n = read(fd, buf, sizeof buf)) > 0) out.append(buf, static_cast<size_t>(n));
  close(fd);
  return out;
}

// State and parent of a process from /proc/<pid>/stat ("pid (comm) S ppid ..."); the command
// name may hold spaces and parentheses, so parse from the last ')'.
bool StatOf(pid_t pid, char* state, pid_t* ppid) {
  std::string stat = ReadSmallFile("/proc/" + std::to_string(pid) + "/stat");
  size_t close = stat.rfind(')');
  if (close == std::string::npos || close + 4 >= stat.size()) return false;
  *state = stat[close + 2];
  *ppid = static_cast<pid_t>(std::strtol(stat.c_str() + close + 4, nullptr, 10));
  return true;
}

std::vector<pid_t> NumericEntries(const std::string& dir) {
  std::vector<pid_t> out;
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return out;
  while (dirent* e = readdir(d)) {
    char* end = nullptr;
    long v = std::strtol(e->d_name, &end, 10);
    if (end != e->d_name && *end == '\0' && v > 0) out.push_back(static_cast<pid_t>(v));
  }
  closedir(d);
  return out;
}

bool HasChildrenFiles() {
  static const bool has = access(("/proc/self/task/" + std::to_string(getpid()) + "/children").c_str(), R_OK) == 0;
  return has;
}

std::vector<pid_t> ChildrenOf(pid_t pid) {
  std::vector<pid_t> out;
  for (pid_t tid : NumericEntries("/proc/" + std::to_string(pid) + "/task")) {
    std::string text = ReadSmallFile("/proc/" + std::to_string(pid) + "/task/" + std::to_string(tid) + "/children");
    const char* p = text.c_str();
    char* end = nullptr;
    for (long v = std::strtol(p, &end, 10); end != p; v = std::strtol(p, &end, 10)) {
      out.push_back(static_cast<pid_t>(v));
      p = end;
    }
  }
  return out;
}

}  // namespace

std::vector<pid_t> Descendants(pid_t root) {
  std::vector<pid_t> out;
  std::multimap<pid_t, pid_t> by_parent;  // only for the scan fallback
  if (!HasChildrenFiles()) {
    for (pid_t pid : NumericEntries("/proc")) {
      char state;
      pid_t ppid;
      if (StatOf(pid, &state, &ppid) && state != 'Z') by_parent.emplace(ppid, pid);
    }
  }
  std::deque<pid_t> queue{root};
  while (!queue.empty()) {
    pid_t pid = queue.front();
    queue.pop_front();
    std::vector<pid_t> children;
    if (HasChildrenFiles()) {
      children = ChildrenOf(pid);
    } else {
      auto [lo, hi] = by_parent.equal_range(pid);
      for (auto it = lo; it != hi; ++it) children.push_back(it->second);
    }
    for (pid_t child : children) {
      char state = '?';
      pid_t ppid = 0;
      if (!StatOf(child, &state, &ppid)) continue;  // gone already
      if (state != 'Z') out.push_back(child);
      queue.push_back(child);  // a zombie's children are still ours until it is reaped
    }
  }
  return out;
}

bool KillDescendants(pid_t root, const std::function<void()>& reap, std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    std::vector<pid_t> found = Descendants(root);
    for (pid_t pid : found) kill(pid, SIGKILL);
    if (reap) reap();
    if (found.empty()) return true;
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
}

}  // namespace tfjob::local
