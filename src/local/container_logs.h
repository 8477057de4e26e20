#pragma once
// ContainerLogs: `tfjob run --logs-dir`'s files, one per container: <replica>.log for the main
// container, <replica>.<container>.log for the others (docs/local.md). Opened up front
// (never through a symbolic link, never a FIFO or a device) and kept open for the whole run.

#include <map>
#include <string>

#include "common/status.h"
#include "local/local_replica.h"

namespace tfjob::local {

class ContainerLogs {
 public:
  ContainerLogs() = default;
  ContainerLogs(const ContainerLogs&) = delete;
  ContainerLogs& operator=(const ContainerLogs&) = delete;
  ~ContainerLogs();

  // Creates `dir` when missing and opens (truncates) every container's file of `replicas` (by
  // name). kInvalidArgument naming --logs-dir and the path.
  Status Open(const std::string& dir, const std::map<std::string, LocalReplica>& replicas);
  // The file of "<replica>" (the main container) or "<replica>.<container>", -1 when none.
  int Find(const std::string& key) const;

 private:
  Status OpenOne(int dir_fd, const std::string& dir, const std::string& key);

  std::map<std::string, int> files_;  // key -> descriptor
};

}  // namespace tfjob::local
