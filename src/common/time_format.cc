#include "common/time_format.h"

#include <cstdio>
#include <ctime>

namespace tfjob {

std::string FormatRfc3339(std::chrono::system_clock::time_point t, int fraction_digits) {
  const auto secs = std::chrono::floor<std::chrono::seconds>(t);
  std::time_t tt = std::chrono::system_clock::to_time_t(secs);
  std::tm tm{};
  gmtime_r(&tt, &tm);
  char buf[64];
  int n = std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                        tm.tm_hour, tm.tm_min, tm.tm_sec);
  std::string out(buf, static_cast<size_t>(n > 0 ? n : 0));
  if (fraction_digits > 0) {
    if (fraction_digits > 9) fraction_digits = 9;
    long long fraction = std::chrono::duration_cast<std::chrono::nanoseconds>(t - secs).count();
    for (int i = fraction_digits; i < 9; ++i) fraction /= 10;
    std::snprintf(buf, sizeof buf, ".%0*lld", fraction_digits, fraction);
    out += buf;
  }
  return out + "Z";
}

}  // namespace tfjob
