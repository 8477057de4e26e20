#pragma once
// GPUs for `tfjob run` (docs/local.md, "GPUs"): which devices this machine offers, and which of
// them each replica gets. The devices are ids as CUDA takes them in CUDA_VISIBLE_DEVICES
// (indices or UUIDs); nothing here talks to a GPU, so all of it is testable without one.
//   - the devices: the caller's CUDA_VISIBLE_DEVICES when it is set (read as CUDA reads it),
//     else the GPUs `nvidia-smi -L` lists (their UUIDs), else none; `--gpus LIST` overrides;
//   - a container asks for `nvidia.com/gpu: N` in its resources (limits; requests when there
//     are no limits). A replica (pod) needs the sum of its containers' GPUs, or the largest
//     init container's when that is more, as the kubelet's device manager counts a pod;
//   - each replica gets devices of its own, in replica order, kept across its restarts; each
//     container a slice of them (an init container the first N); a container without GPUs gets
//     CUDA_VISIBLE_DEVICES="" as in a pod without GPUs;
//   - a job that needs more than there are is refused before anything starts.
// Pure but for ProbeNvidiaSmi.

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "api/tfjob.h"
#include "common/status.h"

namespace tfjob::local {

inline constexpr std::string_view kGpuResource = "nvidia.com/gpu";

// The devices found and where they came from ("CUDA_VISIBLE_DEVICES=0,1", "nvidia-smi -L",
// "--gpus 0,1", "no nvidia-smi"), for messages.
struct GpuDevices {
  std::vector<std::string> ids;
  std::string source;
};

// CUDA_VISIBLE_DEVICES as CUDA reads it: a comma-separated list of indices or UUIDs
// ("GPU-...", "MIG-..."), blanks around an entry ignored; the list ends at the first entry that
// is neither (CUDA ignores it and everything after it); a repeated device counts once.
std::vector<std::string> ParseVisibleDevices(std::string_view value);
// `nvidia-smi -L`'s lines ("GPU 0: NVIDIA A100 (UUID: GPU-...)", indented "MIG ... (UUID:
// MIG-...)" lines below a GPU in MIG mode): the UUIDs, a GPU's MIG devices in place of it.
std::vector<std::string> ParseNvidiaSmiList(std::string_view text);
// `--gpus LIST`: comma-separated ids; "" or "none" for none. kInvalidArgument naming the flag for
// an empty entry.
StatusOr<std::vector<std::string>> ParseGpuFlag(std::string_view list);
// Runs `nvidia-smi -L` found on `path` (at most 10 s); its devices, or none (with the reason as
// the source) when it is missing or fails.
GpuDevices ProbeNvidiaSmi(const std::string& path);

// A container's GPU count from its JSON: `resources.limits["nvidia.com/gpu"]`, else the
// requests'. kInvalidArgument naming `path` for a value that is not a whole number >= 0.
StatusOr<int64_t> ContainerGpus(const nlohmann::json& container, const std::string& path);
// The `resources` fields of a container that a local run does not apply (every limit and
// request but nvidia.com/gpu, and `claims`), as "limits.cpu", "requests.memory", "claims".
std::vector<std::string> UnappliedResourceFields(const nlohmann::json& container);

// What one replica asks for.
struct GpuNeed {
  std::string replica;  // "<job>-worker-0"
  api::ReplicaType type = api::ReplicaType::kWorker;
  std::vector<int64_t> init_containers;  // GPUs of each init container
  std::vector<int64_t> containers;       // GPUs of each container
  int64_t Total() const;                 // what the pod needs
};

// One replica's devices: all of them, and each container's slice.
struct ReplicaGpus {
  std::vector<std::string> devices;
  std::vector<std::vector<std::string>> init_containers;
  std::vector<std::vector<std::string>> containers;
};

// Devices for every replica of `needs` (in their order) from `found`. kInvalidArgument naming
// the need by replica type and the devices found (and their source) when there are too few.
StatusOr<std::map<std::string, ReplicaGpus>> AssignGpus(const GpuDevices& found, const std::vector<GpuNeed>& needs);

// The environment a container gets for `devices`: CUDA_VISIBLE_DEVICES and
// NVIDIA_VISIBLE_DEVICES, the ids joined with commas ("" and "void" for none).
std::vector<std::pair<std::string, std::string>> GpuEnvironment(const std::vector<std::string>& devices);
// The ids joined with commas ("" for none).
std::string JoinDevices(const std::vector<std::string>& devices);

}  // namespace tfjob::local
