#pragma once
// What a replica becomes on this machine: the pod the operator would create, with TF_CONFIG
// pointing at 127.0.0.1 ports, reduced to what a process needs: for each init container and
// each container, its command + args, env and working directory, with Kubernetes' `$(VAR)`
// references expanded as the kubelet does (local/var_expansion.h). The `tensorflow` container
// (or the first) is the replica's main container: its exit code is the replica's. Pure: the
// caller picks the ports.

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "api/tfjob.h"
#include "common/status.h"
#include "tfjob/core/render.h"

namespace tfjob::local {

struct LocalContainer {
  std::string name;
  std::vector<std::string> argv;                         // command + args, expanded
  std::vector<std::pair<std::string, std::string>> env;  // the container's own, expanded, in order
  std::string working_dir;
  int64_t gpus = 0;                              // nvidia.com/gpu of its resources (local/gpu_devices.h)
  std::vector<std::string> unapplied_resources;  // its resources fields a local run does not apply
};

struct LocalReplica {
  std::string name;  // "<job>-worker-0"
  api::ReplicaType type;
  int32_t index = 0;
  std::vector<LocalContainer> init_containers;  // run one after the other, each to completion
  std::vector<LocalContainer> containers;       // run side by side
  size_t main = 0;                              // index into `containers`: `tensorflow`, else the first
  std::string image;                            // ignored locally, reported once
  // The pod's own `resources` fields (pod-level resources), none of which a local run applies:
  // "pod limits.cpu", ...
  std::vector<std::string> unapplied_pod_resources;

  const LocalContainer& main_container() const { return containers[main]; }
};

// Ports of each replica: (type, index) -> port on 127.0.0.1.
using PortMap = std::map<std::pair<api::ReplicaType, int32_t>, int32_t>;

// REQUIRES: `job` defaulted and valid. kInvalidArgument names the field: a container without
// `command`, an env var with `valueFrom`, `envFrom`, a GPU count that is not a whole number.
StatusOr<LocalReplica> LocalReplicaFor(const api::TfJob& job, api::ReplicaType type, int32_t index,
                                       const PortMap& ports);
// The same for many replicas, through one renderer of the job built by the caller over
// LocalRenderOptions(ports): its TF_CONFIG generator names every replica, so building one per
// replica cost O(replicas^2) (issue 25 item 6).
StatusOr<LocalReplica> LocalReplicaFor(const core::PodRenderer& renderer, api::ReplicaType type, int32_t index);
// The render options that put `ports` (borrowed: it must outlive them) in TF_CONFIG.
core::RenderOptions LocalRenderOptions(const PortMap& ports);

// Every replica's (type, index), in render order.
std::vector<std::pair<api::ReplicaType, int32_t>> AllReplicas(const api::TfJob& job);

// The environment a container's process gets: `base` (tfjob's own environment, or the minimal one
// of --clean-env) with the container's variables set over it (a container's value wins).
std::vector<std::string> ProcessEnvironment(const std::vector<std::pair<std::string, std::string>>& base,
                                            const std::vector<std::pair<std::string, std::string>>& container);

// The variables --clean-env keeps from tfjob's environment: what a shell needs to find programs
// and print text, nothing about the user's session or tools.
bool KeptByCleanEnv(std::string_view name);

}  // namespace tfjob::local
