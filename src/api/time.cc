#include "api/time.h"

#include <cstdio>
#include <ctime>

#include "common/time_format.h"

namespace tfjob::api {

std::string FormatTime(Time t) {
  return FormatRfc3339(t);
}

Time TruncateToSeconds(Time t) {
  return std::chrono::floor<std::chrono::seconds>(t);
}

std::optional<Time> ParseTime(std::string_view s) {
  auto digits = [&](size_t pos, size_t n, int* out) {
    if (pos + n > s.size()) return false;
    int v = 0;
    for (size_t i = pos; i < pos + n; ++i) {
      if (s[i] < '0' || s[i] > '9') return false;
      v = v * 10 + (s[i] - '0');
    }
    *out = v;
    return true;
  };
  int y, mo, d, h, mi, se;
  if (!digits(0, 4, &y) || s.size() < 20 || s[4] != '-' || !digits(5, 2, &mo) || s[7] != '-' || !digits(8, 2, &d) ||
      (s[10] != 'T' && s[10] != 't') || !digits(11, 2, &h) || s[13] != ':' || !digits(14, 2, &mi) || s[16] != ':' ||
      !digits(17, 2, &se))
    return std::nullopt;
  if (mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || se > 60) return std::nullopt;
  size_t pos = 19;
  std::chrono::nanoseconds frac{0};
  if (pos < s.size() && s[pos] == '.') {
    ++pos;
    long long scale = 100000000, ns = 0;
    size_t start = pos;
    while (pos < s.size() && s[pos] >= '0' && s[pos] <= '9') {
      ns += (s[pos] - '0') * scale;
      scale /= 10;
      ++pos;
    }
    if (pos == start) return std::nullopt;
    frac = std::chrono::nanoseconds(ns);
  }
  int offset_min = 0;
  if (pos < s.size() && (s[pos] == 'Z' || s[pos] == 'z')) {
    ++pos;
  } else if (pos < s.size() && (s[pos] == '+' || s[pos] == '-')) {
    int oh, om;
    if (!digits(pos + 1, 2, &oh) || pos + 3 >= s.size() || s[pos + 3] != ':' || !digits(pos + 4, 2, &om))
      return std::nullopt;
    offset_min = (oh * 60 + om) * (s[pos] == '-' ? -1 : 1);
    pos += 6;
  } else {
    return std::nullopt;
  }
  if (pos != s.size()) return std::nullopt;
  std::chrono::year_month_day ymd{std::chrono::year(y), std::chrono::month(static_cast<unsigned>(mo)),
                                  std::chrono::day(static_cast<unsigned>(d))};
  if (!ymd.ok()) return std::nullopt;
  auto secs = std::chrono::sys_days(ymd).time_since_epoch() + std::chrono::hours(h) + std::chrono::minutes(mi) +
              std::chrono::seconds(se) - std::chrono::minutes(offset_min);
  // Time counts nanoseconds in 64 bits: about 1678..2262. Anything outside is not a real
  // timestamp of a cluster object, and converting it would overflow.
  if (std::chrono::abs(std::chrono::duration_cast<std::chrono::seconds>(secs)) > std::chrono::seconds(9'000'000'000LL))
    return std::nullopt;
  Time t = Time(std::chrono::duration_cast<Time::duration>(secs));
  return t + std::chrono::duration_cast<Time::duration>(frac);
}

}  // namespace tfjob::api
