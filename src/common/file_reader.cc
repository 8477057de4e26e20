#include "common/file_reader.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace tfjob {

std::string FormatBytes(size_t bytes) {
  constexpr size_t kKiB = 1024, kMiB = 1024 * 1024;
  if (bytes >= kMiB && bytes % kMiB == 0) return std::to_string(bytes / kMiB) + " MiB";
  if (bytes >= kKiB && bytes % kKiB == 0) return std::to_string(bytes / kKiB) + " KiB";
  return std::to_string(bytes) + " bytes";
}

BoundedRead ReadFdBounded(int fd, size_t max_bytes) {
  BoundedRead out;
  struct stat st {};
  if (::fstat(fd, &st) == 0) {
    if (S_ISDIR(st.st_mode)) {
      out.problem = ReadProblem::kDirectory;
      return out;
    }
    // A regular file's size is known: refuse it before reading (a 3 GB sparse file costs nothing).
    if (S_ISREG(st.st_mode) && static_cast<unsigned long long>(st.st_size) > max_bytes) {
      out.problem = ReadProblem::kTooLarge;
      return out;
    }
  }
  // Devices, pipes and files that grow: read in chunks, never more than the cap plus one byte.
  std::string& text = out.bytes;
  for (;;) {
    size_t want = std::min<size_t>(size_t{1} << 16, max_bytes + 1 - text.size());
    size_t old = text.size();
    text.resize(old + want);
    ssize_t n = ::read(fd, text.data() + old, want);
    if (n < 0) {
      int err = errno;
      text.resize(old);
      if (err == EINTR) continue;
      out.problem = err == EISDIR ? ReadProblem::kDirectory : ReadProblem::kReadError;
      out.error = err;
      break;
    }
    text.resize(old + static_cast<size_t>(n));
    if (n == 0) break;
    if (text.size() > max_bytes) {
      out.problem = ReadProblem::kTooLarge;
      break;
    }
  }
  if (out.problem != ReadProblem::kNone) out.bytes.clear();
  return out;
}

StatusOr<std::string> ReadFileBounded(const std::string& path, size_t max_bytes) {
  // O_NONBLOCK: opening a FIFO without a writer must not block; it is cleared before reading.
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    int err = errno;
    if (err == EISDIR) return InvalidArgumentError(path + " is a directory, not a file");
    return NotFoundError("cannot read " + path + ": " + std::strerror(err));
  }
  if (int flags = ::fcntl(fd, F_GETFL); flags >= 0) ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
  BoundedRead read = ReadFdBounded(fd, max_bytes);
  ::close(fd);
  switch (read.problem) {
    case ReadProblem::kNone: return std::move(read.bytes);
    case ReadProblem::kDirectory: return InvalidArgumentError(path + " is a directory, not a file");
    case ReadProblem::kTooLarge:
      return InvalidArgumentError(path + " is larger than the limit of " + FormatBytes(max_bytes));
    case ReadProblem::kReadError: break;
  }
  return DataLossError("reading " + path + ": " + std::strerror(read.error));
}

}  // namespace tfjob
