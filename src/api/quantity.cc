#include "api/quantity.h"

#include <cstdlib>

namespace tfjob::api {
namespace {

__extension__ typedef __int128 Int128;  // exact sums of milli-units without overflow

constexpr Int128 kLimit = static_cast<Int128>(9'200'000'000'000'000'000LL);

struct Suffix {
  std::string_view text;
  Int128 multiplier;  // in units
  Quantity::Format format;
};

constexpr Int128 P10(int n) {
  Int128 v = 1;
  for (int i = 0; i < n; ++i) v *= 10;
  return v;
}

const Suffix kSuffixes[] = {
    {"Ki", static_cast<Int128>(1) << 10, Quantity::Format::kBinarySI},
    {"Mi", static_cast<Int128>(1) << 20, Quantity::Format::kBinarySI},
    {"Gi", static_cast<Int128>(1) << 30, Quantity::Format::kBinarySI},
    {"Ti", static_cast<Int128>(1) << 40, Quantity::Format::kBinarySI},
    {"Pi", static_cast<Int128>(1) << 50, Quantity::Format::kBinarySI},
    {"Ei", static_cast<Int128>(1) << 60, Quantity::Format::kBinarySI},
    {"k", P10(3), Quantity::Format::kDecimalSI},
    {"M", P10(6), Quantity::Format::kDecimalSI},
    {"G", P10(9), Quantity::Format::kDecimalSI},
    {"T", P10(12), Quantity::Format::kDecimalSI},
    {"P", P10(15), Quantity::Format::kDecimalSI},
    {"E", P10(18), Quantity::Format::kDecimalSI},
};

std::string ToDecimal(Int128 v) {
  if (v == 0) return "0";
  bool neg = v < 0;
  if (neg) v = -v;
  std::string s;
  while (v > 0) {
    s.insert(s.begin(), static_cast<char>('0' + static_cast<int>(v % 10)));
    v /= 10;
  }
  return neg ? "-" + s : s;
}

}  // namespace

std::optional<Quantity> Quantity::Parse(std::string_view text) {
  if (text.empty() || text.size() > 64) return std::nullopt;
  size_t i = 0;
  bool neg = false;
  if (text[i] == '+' || text[i] == '-') neg = text[i++] == '-';
  Int128 whole = 0, frac = 0;
  int frac_digits = 0;
  size_t digits = 0;
  while (i < text.size() && text[i] >= '0' && text[i] <= '9') {
    whole = whole * 10 + (text[i++] - '0');
    if (whole > kLimit) return std::nullopt;
    ++digits;
  }
  if (i < text.size() && text[i] == '.') {
    ++i;
    while (i < text.size() && text[i] >= '0' && text[i] <= '9') {
      if (frac_digits < 18) {
        frac = frac * 10 + (text[i] - '0');
        ++frac_digits;
      }
      ++i;
      ++digits;
    }
  }
  if (digits == 0) return std::nullopt;
  std::string_view suffix = text.substr(i);
  // value = (whole + frac/10^frac_digits) * multiplier_num / multiplier_den, in milli-units.
  Int128 num = 1000, den = 1;
  Quantity q;
  q.format_ = Format::kDecimalSI;
  if (suffix.empty()) {
  } else if (suffix == "m") {
    num = 1;
  } else if (suffix[0] == 'e' || suffix[0] == 'E') {
    int exp = std::atoi(std::string(suffix.substr(1)).c_str());
    if (suffix.size() < 2 || exp > 18 || exp < -3) return std::nullopt;
    for (size_t k = 1; k < suffix.size(); ++k)
      if (!(suffix[k] >= '0' && suffix[k] <= '9') && !(k == 1 && (suffix[k] == '-' || suffix[k] == '+')))
        return std::nullopt;
    if (exp >= 0)
      num *= P10(exp);
    else
      den = P10(-exp);
  } else {
    bool found = false;
    for (const Suffix& s : kSuffixes) {
      if (s.text == suffix) {
        num *= s.multiplier;
        q.format_ = s.format;
        found = true;
      }
    }
    if (!found) return std::nullopt;
  }
  Int128 total = whole * num;
  if (total / (num == 0 ? 1 : num) != whole || total > kLimit * 1000) return std::nullopt;
  total += frac * num / P10(frac_digits);
  total /= den;
  if (total > kLimit) return std::nullopt;
  q.milli_ = static_cast<int64_t>(neg ? -total : total);
  return q;
}

bool Quantity::Add(const Quantity& other) {
  Int128 sum = static_cast<Int128>(milli_) + other.milli_;
  if (sum > kLimit || sum < -kLimit) return false;
  if (milli_ == 0) format_ = other.format_;
  milli_ = static_cast<int64_t>(sum);
  return true;
}

std::string Quantity::ToString() const {
  Int128 m = milli_;
  if (m % 1000 != 0) return ToDecimal(m) + "m";
  Int128 units = m / 1000;
  if (units == 0) return "0";
  std::string_view best;
  Int128 best_value = units;
  for (const Suffix& s : kSuffixes) {
    if (s.format != format_) continue;
    if (units % s.multiplier == 0) {
      best = s.text;
      best_value = units / s.multiplier;
    }
  }
  return ToDecimal(best_value) + std::string(best);
}

}  // namespace tfjob::api
