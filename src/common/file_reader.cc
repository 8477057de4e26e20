#include "common/file_reader.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace tfjob {

std::string FormatBytes(size_t bytes) {
  constexpr size_t kKiB = 1024, kMiB = 1024 * 1024;
  if (bytes >= kMiB && bytes % kMiB == 0) return std::to_string(bytes / kMiB) + " MiB";
  if (bytes >= kKiB && bytes % kKiB == 0) return std::to_string(bytes / kKiB) + " KiB";
  return std::to_string(bytes) + " bytes";
}

StatusOr<std::string> ReadFileBounded(const std::string& path, size_t max_bytes) {
  // O_NONBLOCK: opening a FIFO without a writer must not block; it is cleared before reading.
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    int err = errno;
    if (err == EISDIR) return InvalidArgumentError(path + " is a directory, not a file");
    return NotFoundError("cannot read " + path + ": " + std::strerror(err));
  }
  struct stat st {};
  if (::fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
    ::close(fd);
    return InvalidArgumentError(path + " is a directory, not a file");
  }
  if (int flags = ::fcntl(fd, F_GETFL); flags >= 0) ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
  const std::string too_large = path + " is larger than the limit of " + FormatBytes(max_bytes);
  if (S_ISREG(st.st_mode) && static_cast<unsigned long long>(st.st_size) > max_bytes) {
    ::close(fd);
    return InvalidArgumentError(too_large);
  }
  std::string out;
  char buf[65536];
  for (;;) {
    size_t want = std::min(sizeof buf, max_bytes + 1 - out.size());
    ssize_t n = ::read(fd, buf, want);
    if (n < 0) {
      if (errno == EINTR) continue;
      int err = errno;
      ::close(fd);
      if (err == EISDIR) return InvalidArgumentError(path + " is a directory, not a file");
      return DataLossError("reading " + path + ": " + std::strerror(err));
    }
    if (n == 0) break;
    out.append(buf, static_cast<size_t>(n));
    if (out.size() > max_bytes) {
      ::close(fd);
      return InvalidArgumentError(too_large);
    }
  }
  ::close(fd);
  return out;
}

}  // namespace tfjob
