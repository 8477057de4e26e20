#include "api/field_error.h"

#include <cstdint>

namespace tfjob::api {

namespace {

// Runes Go's strconv.IsPrint rejects that matter in practice (a compact subset of its tables):
// controls, non-ASCII spaces, separators, format characters (bidi, zero-width), private use and
// noncharacters. Printable text of every script passes.
bool Hidden(char32_t r) {
  if (r < 0x20 || (r >= 0x7f && r <= 0xa0) || r == 0xad) return true;
  if (r >= 0x600 && r <= 0x605) return true;
  if (r == 0x61c || r == 0x6dd || r == 0x70f || r == 0x890 || r == 0x891 || r == 0x8e2) return true;
  if (r == 0x1680 || r == 0x180e) return true;
  if (r >= 0x2000 && r <= 0x200f) return true;  // spaces, zero-width, LRM/RLM
  if (r >= 0x2028 && r <= 0x202f) return true;  // separators, bidi embeddings/overrides, NNBSP
  if (r >= 0x205f && r <= 0x206f) return true;  // word joiner, invisible operators, bidi isolates
  if (r == 0x3000 || r == 0xfeff || (r >= 0xfff9 && r <= 0xfffb)) return true;
  if (r >= 0xd800 && r <= 0xf8ff) return true;  // surrogates (never decoded) and private use
  if ((r >= 0xfdd0 && r <= 0xfdef) || (r & 0xfffe) == 0xfffe) return true;
  if (r == 0x110bd || r == 0x110cd || (r >= 0x13430 && r <= 0x1343f)) return true;
  if ((r >= 0x1bca0 && r <= 0x1bca3) || (r >= 0x1d173 && r <= 0x1d17a)) return true;
  if (r == 0xe0001 || (r >= 0xe0020 && r <= 0xe007f) || r >= 0xf0000) return true;
  return false;
}

void AppendHex(std::string* out, const char* prefix, uint32_t v, int digits) {
  static constexpr char kHex[] = "0123456789abcdef";
  *out += prefix;
  for (int d = digits - 1; d >= 0; --d) *out += kHex[(v >> (4 * d)) & 0xf];
}

std::string Escape(std::string_view s, bool quote) {
  std::string out;
  out.reserve(s.size() + 2);
  if (quote) out += '"';
  for (size_t i = 0; i < s.size();) {
    char32_t r = 0;
    size_t n = DecodeUtf8(s, i, &r);
    if (n == 0) {  // not UTF-8: the byte itself
      AppendHex(&out, "\\x", static_cast<unsigned char>(s[i]), 2);
      ++i;
      continue;
    }
    if (quote && (r == '"' || r == '\\')) {
      out += '\\';
      out += static_cast<char>(r);
    } else if (!Hidden(r)) {
      out.append(s.substr(i, n));
    } else {
      switch (r) {
        case '\a': out += "\\a"; break;
        case '\b': out += "\\b"; break;
        case '\f': out += "\\f"; break;
        case '\n': out += "\\n"; break;
        case '\r': out += "\\r"; break;
        case '\t': out += "\\t"; break;
        case '\v': out += "\\v"; break;
        default:
          if (r < 0x80)
            AppendHex(&out, "\\x", r, 2);
          else if (r < 0x10000)
            AppendHex(&out, "\\u", r, 4);
          else
            AppendHex(&out, "\\U", r, 8);
      }
    }
    i += n;
  }
  if (quote) out += '"';
  return out;
}

}  // namespace

std::string QuoteValue(const std::string& s) {
  return Escape(s, true);
}

std::string EscapeNonPrintable(std::string_view s) {
  return Escape(s, false);
}

std::string FieldError::ToString() const {
  std::string out = field + ": ";
  switch (type) {
    case FieldErrorType::kRequired: out += "Required value"; break;
    case FieldErrorType::kInvalid: out += "Invalid value: " + value; break;
    case FieldErrorType::kNotSupported: out += "Unsupported value: " + value; break;
    case FieldErrorType::kForbidden: out += "Forbidden"; break;
    case FieldErrorType::kDuplicate: out += "Duplicate value: " + value; break;
  }
  if (!detail.empty()) out += ": " + detail;
  return EscapeNonPrintable(out);  // paths hold map keys as written
}

FieldError Required(std::string field, std::string detail) {
  return {FieldErrorType::kRequired, std::move(field), "", std::move(detail)};
}
FieldError Invalid(std::string field, std::string value, std::string detail) {
  return {FieldErrorType::kInvalid, std::move(field), std::move(value), std::move(detail)};
}
FieldError NotSupported(std::string field, std::string value, const std::vector<std::string>& supported) {
  std::string detail = "supported values: ";
  for (size_t i = 0; i < supported.size(); ++i) {
    if (i > 0) detail += ", ";
    detail += QuoteValue(supported[i]);
  }
  return {FieldErrorType::kNotSupported, std::move(field), std::move(value), std::move(detail)};
}
FieldError Forbidden(std::string field, std::string detail) {
  return {FieldErrorType::kForbidden, std::move(field), "", std::move(detail)};
}
FieldError Duplicate(std::string field, std::string value) {
  return {FieldErrorType::kDuplicate, std::move(field), std::move(value), ""};
}

std::string AggregateMessage(const FieldErrors& errors) {
  if (errors.size() == 1) return errors[0].ToString();
  std::string out = "[";
  for (size_t i = 0; i < errors.size(); ++i) {
    if (i > 0) out += ", ";
    out += errors[i].ToString();
  }
  out += "]";
  return out;
}

// Decodes one UTF-8 sequence at s[i] the way Go does (no overlong forms, no surrogates, at most
// U+10FFFF). Returns its length, 0 when s[i] does not start a valid sequence.
size_t DecodeUtf8(std::string_view s, size_t i, char32_t* rune) {
  auto b = [&](size_t k) { return static_cast<unsigned char>(s[i + k]); };
  unsigned char c = b(0);
  if (c < 0x80) {
    *rune = c;
    return 1;
  }
  size_t n = (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
  if (n == 0 || i + n > s.size()) return 0;
  char32_t r = c & (0x7f >> n);
  for (size_t k = 1; k < n; ++k) {
    if ((b(k) >> 6) != 2) return 0;
    r = (r << 6) | (b(k) & 0x3f);
  }
  static constexpr char32_t kMin[] = {0, 0, 0x80, 0x800, 0x10000};
  if (r < kMin[n] || r > 0x10ffff || (r >= 0xd800 && r <= 0xdfff)) return 0;
  *rune = r;
  return n;
}

}  // namespace tfjob::api
