#pragma once
// Bounded reads of whole files: a kubeconfig, a certificate, a token, a job file. A byte cap
// makes a huge file, /dev/zero or an endless pipe a clear error instead of unbounded memory, and
// a directory an error instead of a silent empty string. The caps are listed in
// docs/operator.md (section 1) and the README (input rules).

#include <cstddef>
#include <string>

#include "common/status.h"

namespace tfjob {

// What a bounded read of an open descriptor found.
enum class ReadProblem {
  kNone,
  kDirectory,  // the descriptor is a directory
  kTooLarge,   // more than max_bytes (a regular file is refused by its size, before reading)
  kReadError,  // read(2) failed: `error` holds errno
};
struct BoundedRead {
  std::string bytes;  // the content when problem == kNone
  ReadProblem problem = ReadProblem::kNone;
  int error = 0;
};

// Reads `fd` to its end, never keeping more than max_bytes + 1 bytes. Does not close `fd`.
// The one read loop of the project: callers word the messages for their users.
BoundedRead ReadFdBounded(int fd, size_t max_bytes);

// The file's bytes. Errors name `path`:
//   kNotFound         the file does not exist, or cannot be opened (permission)
//   kInvalidArgument  it is a directory, or it holds more than `max_bytes` bytes
//   kDataLoss         a read error
// Opening a FIFO without a writer does not block. Thread-safe.
StatusOr<std::string> ReadFileBounded(const std::string& path, size_t max_bytes);

// "1 MiB", "64 KiB", "300 bytes": a byte count for messages.
std::string FormatBytes(size_t bytes);

}  // namespace tfjob
