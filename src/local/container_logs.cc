#include "local/container_logs.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

namespace tfjob::local {

ContainerLogs::~ContainerLogs() {
  for (auto& [key, fd] : files_) close(fd);
}

int ContainerLogs::Find(const std::string& key) const {
  auto it = files_.find(key);
  return it == files_.end() ? -1 : it->second;
}

Status ContainerLogs::OpenOne(int dir_fd, const std::string& dir, const std::string& key) {
  const std::string file = key + ".log";
  // Never through a link put there beforehand, never into a FIFO or a device.
  int fd = openat(dir_fd, file.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0644);
  if (fd < 0) {
    std::string why = errno == ELOOP ? "is a symbolic link (not followed)" : std::strerror(errno);
    return InvalidArgumentError("--logs-dir: " + dir + "/" + file + ": " + why);
  }
  struct stat fst {};
  if (fstat(fd, &fst) != 0 || !S_ISREG(fst.st_mode)) {
    close(fd);
    return InvalidArgumentError("--logs-dir: " + dir + "/" + file + ": not a regular file");
  }
  fcntl(fd, F_SETFL, 0);
  files_[key] = fd;
  return OkStatus();
}

Status ContainerLogs::Open(const std::string& dir, const std::map<std::string, LocalReplica>& replicas) {
  struct stat st {};
  if (stat(dir.c_str(), &st) == 0 && !S_ISDIR(st.st_mode))
    return InvalidArgumentError("--logs-dir " + dir + ": not a directory");
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return InvalidArgumentError("--logs-dir " + dir + ": cannot create it: " + ec.message());
  int dir_fd = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir_fd < 0) return InvalidArgumentError("--logs-dir " + dir + ": " + std::strerror(errno));
  Status opened = OkStatus();
  for (const auto& [name, r] : replicas) {
    for (const auto& c : r.init_containers)
      if (opened.ok()) opened = OpenOne(dir_fd, dir, name + "." + c.name);
    for (size_t i = 0; i < r.containers.size(); ++i)
      if (opened.ok()) opened = OpenOne(dir_fd, dir, i == r.main ? name : name + "." + r.containers[i].name);
  }
  close(dir_fd);
  return opened;
}

}  // namespace tfjob::local
