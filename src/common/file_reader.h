#pragma once
// ReadFileBounded: the whole of a small file (a kubeconfig, a certificate, a token) read with a
// byte cap, so that a huge file, /dev/zero or a directory gives a clear error instead of
// unbounded memory or a silent empty string. The caps of the files the operator reads are
// listed in docs/operator.md (section 1).

#include <cstddef>
#include <string>

#include "common/status.h"

namespace tfjob {

// The file's bytes. Errors name `path`:
//   kNotFound         the file does not exist, or cannot be opened (permission)
//   kInvalidArgument  it is a directory, or it holds more than `max_bytes` bytes (reading stops
//                     after max_bytes + 1 bytes, so /dev/zero and endless pipes end too)
//   kDataLoss         a read error
// Thread-safe.
StatusOr<std::string> ReadFileBounded(const std::string& path, size_t max_bytes);

// "1 MiB", "64 KiB", "300 bytes": a byte count for messages.
std::string FormatBytes(size_t bytes);

}  // namespace tfjob
