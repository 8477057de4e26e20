#pragma once
// The SupervisorSpec as bytes, for the pod zygote (local/pod_zygote.h): the runner encodes each
// pod's spec and sends it with the pod's file descriptors (SCM_RIGHTS); the zygote decodes it and
// forks the supervisor from it. In the bytes every descriptor is an index into the descriptors
// sent with them (-1: none), so the spec means the same on both sides of the socket.
//
// Format (every integer little-endian, fixed width): "TFZS" then version 1 (u32); parent (i64);
// status, port and start barrier (i32 indices); grace period in ms (i64); nofile_soft (u64); main
// (u64); uid (string); the init containers, then the containers, each a list (u32 count, then the
// items). A container: name (string), argv (list of strings), env (list of strings), working_dir
// (string), out (i32 index). A string is a u32 length and the bytes. Nothing may follow.

#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "local/pod_supervisor.h"

namespace tfjob::local {

struct EncodedSpec {
  std::string bytes;
  std::vector<int> fds;  // the spec's descriptors, each once, in the order the bytes index them
};

EncodedSpec EncodeSupervisorSpec(const SupervisorSpec& spec);

// The spec `bytes` describe, its descriptors taken from `fds` (what came with the bytes).
// kInvalidArgument naming what is wrong (truncated, a length past the end, an index past `fds`,
// no container, `main` past the containers, bytes left over) for anything EncodeSupervisorSpec
// does not make; never reads past `bytes`, and allocates no more than `bytes` can hold.
StatusOr<SupervisorSpec> DecodeSupervisorSpec(std::string_view bytes, const std::vector<int>& fds);

// A message on the zygote's socket (a SOCK_STREAM unix socket): a header of two u32, the body's
// length and the number of descriptors, sent with the descriptors (SCM_RIGHTS), then the body.
inline constexpr size_t kMaxSpecMessageBytes = 64u << 20;  // more than any spec a job can make
inline constexpr size_t kMaxSpecMessageFds = 250;          // below the kernel's SCM_MAX_FD (253)

// Sends `body` and `fds` (the sender keeps its own copies). kUnavailable with errno's text
// (EPIPE: the other side is gone), kInvalidArgument when over the limits above.
Status SendSpecMessage(int sock, std::string_view body, const std::vector<int>& fds);

struct SpecMessage {
  std::string body;
  std::vector<int> fds;  // the receiver's copies: the caller closes them
};
// Receives one message. kNotFound at a clean end of the stream (no byte of a message read);
// kInvalidArgument (a length or count over the limits, descriptors cut off) or kDataLoss (the
// stream ended inside a message) for a broken one, after which the stream is out of step and is
// to be closed; kUnavailable with errno's text. On an error no received descriptor stays open.
StatusOr<SpecMessage> ReceiveSpecMessage(int sock);

}  // namespace tfjob::local
