#pragma once
// What a replica becomes on this machine: the command, arguments, environment and working
// directory of its `tensorflow` container (or the first container), from the pod the operator
// would create, with TF_CONFIG pointing at 127.0.0.1 ports. Pure: the caller picks the ports.

#include <map>
#include <string>
#include <vector>

#include "api/tfjob.h"
#include "common/status.h"
#include "tfjob/core/render.h"

namespace tfjob::local {

struct LocalReplica {
  std::string name;  // "<job>-worker-0"
  api::ReplicaType type;
  int32_t index = 0;
  std::vector<std::string> argv;                         // command + args
  std::vector<std::pair<std::string, std::string>> env;  // in order; TF_CONFIG included when distributed
  std::string working_dir;
  std::string image;  // ignored locally, reported once
};

// Ports of each replica: (type, index) -> port on 127.0.0.1.
using PortMap = std::map<std::pair<api::ReplicaType, int32_t>, int32_t>;

// REQUIRES: `job` defaulted and valid. kInvalidArgument names the field: a container without
// `command`, an env var with `valueFrom`.
StatusOr<LocalReplica> LocalReplicaFor(const api::TfJob& job, api::ReplicaType type, int32_t index,
                                       const PortMap& ports);

// Every replica's (type, index), in render order.
std::vector<std::pair<api::ReplicaType, int32_t>> AllReplicas(const api::TfJob& job);

}  // namespace tfjob::local
