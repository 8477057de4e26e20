#include "api/manifest.h"

#include "api/field_error.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <set>
#include <sstream>

#include <map>
#include <optional>
#include <regex>

#include <yaml.h>

namespace tfjob::api {
namespace {

using nlohmann::json;

constexpr size_t kMaxNodes = 2'000'000;  // after alias expansion
constexpr int kMaxDepth = 256;

Status CheckText(std::string_view text) {
  for (size_t i = 0; i < text.size();) {
    if (text[i] == 0) return InvalidArgumentError("not a text file (NUL byte at offset " + std::to_string(i) + ")");
    char32_t r = 0;
    size_t n = DecodeUtf8(text, i, &r);
    if (n == 0) return InvalidArgumentError("not valid UTF-8 (byte offset " + std::to_string(i) + ")");
    i += n;
  }
  return OkStatus();
}

// Characters YAML readers do not take back as written in a plain or double-quoted scalar:
// C0 controls (YAML allows only tab and line breaks, and those change the value), DEL, C1
// controls (NEL U+0085 is a line break for YAML 1.1 readers: PyYAML, go-yaml), the line and
// paragraph separators, BOM and the noncharacters U+FFFE/U+FFFF; and, so that printing the
// output cannot reorder or hide text on a terminal, the zero-width and bidirectional controls.
bool MustEscape(char32_t r) {
  return r < 0x20 || (r >= 0x7f && r <= 0xa0) || (r >= 0x200b && r <= 0x200f) || (r >= 0x2028 && r <= 0x202e) ||
         (r >= 0x2060 && r <= 0x2069) || r == 0xfeff || r == 0xfffe || r == 0xffff;
}

bool NeedsEscapes(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    char32_t r = 0;
    size_t n = DecodeUtf8(s, i, &r);
    if (n == 0 || MustEscape(r)) return true;
    i += n;
  }
  return false;
}

bool AllOf(std::string_view s, size_t from, std::string_view allowed) {
  if (from >= s.size()) return false;
  for (size_t i = from; i < s.size(); ++i)
    if (allowed.find(s[i]) == std::string_view::npos) return false;
  return true;
}

// YAML 1.2 core schema resolution of a plain scalar.
json ResolvePlainImpl(const std::string& s) {
  if (s.empty() || s == "~" || s == "null" || s == "Null" || s == "NULL") return nullptr;
  if (s == "true" || s == "True" || s == "TRUE") return true;
  if (s == "false" || s == "False" || s == "FALSE") return false;
  constexpr std::string_view kDigits = "0123456789";
  size_t sign = (s[0] == '-' || s[0] == '+') ? 1 : 0;
  if (AllOf(s, sign, kDigits)) {
    errno = 0;
    char* end = nullptr;
    if (s[0] == '-') {
      long long v = std::strtoll(s.c_str(), &end, 10);
      if (errno == 0) return v;
    } else {
      unsigned long long v = std::strtoull(s.c_str() + sign, &end, 10);
      if (errno == 0) {
        if (v <= static_cast<unsigned long long>(INT64_MAX)) return static_cast<long long>(v);
        return v;
      }
    }
    return std::strtod(s.c_str(), nullptr);  // out of 64-bit range: a float, like Go's yaml
  }
  if (s.size() > 2 && s[0] == '0' && s[1] == 'x' && AllOf(s, 2, "0123456789abcdefABCDEF")) {
    errno = 0;
    unsigned long long v = std::strtoull(s.c_str() + 2, nullptr, 16);
    if (errno == 0 && v <= static_cast<unsigned long long>(INT64_MAX)) return static_cast<long long>(v);
  }
  if (s.size() > 2 && s[0] == '0' && s[1] == 'o' && AllOf(s, 2, "01234567")) {
    errno = 0;
    unsigned long long v = std::strtoull(s.c_str() + 2, nullptr, 8);
    if (errno == 0 && v <= static_cast<unsigned long long>(INT64_MAX)) return static_cast<long long>(v);
  }
  if (s == ".inf" || s == ".Inf" || s == ".INF" || s == "+.inf") return std::numeric_limits<double>::infinity();
  if (s == "-.inf" || s == "-.Inf" || s == "-.INF") return -std::numeric_limits<double>::infinity();
  // Floats: [-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?
  {
    size_t i = sign, int_digits = 0, frac_digits = 0;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9') ++i, ++int_digits;
    if (i < s.size() && s[i] == '.') {
      ++i;
      while (i < s.size() && s[i] >= '0' && s[i] <= '9') ++i, ++frac_digits;
    }
    bool ok = int_digits + frac_digits > 0;
    if (ok && i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
      ++i;
      if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
      size_t exp_digits = 0;
      while (i < s.size() && s[i] >= '0' && s[i] <= '9') ++i, ++exp_digits;
      ok = exp_digits > 0;
    }
    if (ok && i == s.size()) return std::strtod(s.c_str(), nullptr);
  }
  return s;
}

// Builds JSON documents from libyaml's event stream. libyaml is the reference C parser,
// fuzzed for years; yaml-cpp 0.7's loader hangs on some malformed inputs (our fuzzer found one).
class YamlBuilder {
 public:
  explicit YamlBuilder(std::string_view text) {
    yaml_parser_initialize(&parser_);
    yaml_parser_set_input_string(&parser_, reinterpret_cast<const unsigned char*>(text.data()), text.size());
  }
  ~YamlBuilder() { yaml_parser_delete(&parser_); }
  YamlBuilder(const YamlBuilder&) = delete;
  YamlBuilder& operator=(const YamlBuilder&) = delete;

  StatusOr<std::vector<ManifestDocument>> Build() {
    std::vector<ManifestDocument> docs;
    int doc_line = 1;
    for (;;) {
      yaml_event_t event;
      if (!yaml_parser_parse(&parser_, &event)) return ParserError();
      Status st = OkStatus();
      bool done = false;
      switch (event.type) {
        case YAML_STREAM_END_EVENT: done = true; break;
        case YAML_DOCUMENT_START_EVENT:
          doc_line = static_cast<int>(event.start_mark.line) + 1;
          root_ = nullptr;
          anchors_.clear();
          break;
        case YAML_DOCUMENT_END_EVENT:
          if (!root_.is_null()) docs.push_back({std::move(root_), doc_line});
          root_ = nullptr;
          break;
        case YAML_MAPPING_START_EVENT:
        case YAML_SEQUENCE_START_EVENT: st = Open(event); break;
        case YAML_MAPPING_END_EVENT:
        case YAML_SEQUENCE_END_EVENT: {
          Frame f = std::move(stack_.back());
          stack_.pop_back();
          st = Complete(std::move(f.value), f.anchor, f.size, event.start_mark);
          break;
        }
        case YAML_SCALAR_EVENT: st = Scalar(event); break;
        case YAML_ALIAS_EVENT: {
          std::string name = reinterpret_cast<const char*>(event.data.alias.anchor);
          auto it = anchors_.find(name);
          if (it == anchors_.end()) {
            st = InvalidArgumentError(Where(event.start_mark) + ": unknown alias " + QuoteValue(name));
          } else {
            // Counted before the copy is made, so a bomb is refused before it takes the memory.
            const Anchored& a = it->second;
            st = Count(a.size);
            if (st.ok()) st = Complete(a.value, "", a.size, event.start_mark);
          }
          break;
        }
        default: break;
      }
      yaml_event_delete(&event);
      TFJOB_RETURN_IF_ERROR(st);
      if (done) break;
    }
    return docs;
  }

 private:
  // What a node weighs once aliases are expanded: its nodes, and its bytes (every scalar's and
  // key's text plus 2 per node, about its size written as JSON).
  struct Size {
    size_t nodes = 0;
    size_t bytes = 0;
  };
  struct Frame {
    json value;
    std::string anchor;
    Size size{1, 2};
    std::optional<std::string> key;  // maps: the key waiting for its value
  };
  struct Anchored {
    json value;
    Size size;
  };

  static std::string Where(const yaml_mark_t& m) {
    return "line " + std::to_string(m.line + 1) + ", column " + std::to_string(m.column + 1);
  }

  Status ParserError() const {
    std::string problem = parser_.problem != nullptr ? parser_.problem : "malformed YAML";
    if (parser_.context != nullptr) problem = std::string(parser_.context) + ": " + problem;
    return InvalidArgumentError("invalid YAML: " + Where(parser_.problem_mark) + ": " + problem);
  }

  Status Open(const yaml_event_t& event) {
    if (stack_.size() >= static_cast<size_t>(kMaxDepth))
      return InvalidArgumentError(Where(event.start_mark) + ": nesting deeper than 256 levels");
    TFJOB_RETURN_IF_ERROR(Count({1, 2}));
    Frame f;
    bool is_map = event.type == YAML_MAPPING_START_EVENT;
    f.value = is_map ? json::object() : json::array();
    const yaml_char_t* anchor = is_map ? event.data.mapping_start.anchor : event.data.sequence_start.anchor;
    if (anchor != nullptr) f.anchor = reinterpret_cast<const char*>(anchor);
    if (!stack_.empty() && stack_.back().value.is_object() && !stack_.back().key)
      return InvalidArgumentError(Where(event.start_mark) + ": mapping keys must be strings");
    stack_.push_back(std::move(f));
    return OkStatus();
  }

  Status Scalar(const yaml_event_t& event) {
    const auto& sc = event.data.scalar;
    const Size size{1, sc.length + 2};
    TFJOB_RETURN_IF_ERROR(Count(size));
    std::string text(reinterpret_cast<const char*>(sc.value), sc.length);
    std::string tag = sc.tag != nullptr ? reinterpret_cast<const char*>(sc.tag) : "";
    std::string anchor = sc.anchor != nullptr ? reinterpret_cast<const char*>(sc.anchor) : "";
    // A map key is always taken as a string (as sigs.k8s.io/yaml does).
    if (!stack_.empty() && stack_.back().value.is_object() && !stack_.back().key) {
      if (stack_.back().value.contains(text))
        return InvalidArgumentError(Where(event.start_mark) + ": duplicate key " + QuoteValue(text));
      stack_.back().size.bytes += size.bytes;  // keys count as text but not as nodes
      stack_.back().key = std::move(text);
      return OkStatus();
    }
    json value;
    bool plain = sc.style == YAML_PLAIN_SCALAR_STYLE || sc.style == YAML_ANY_SCALAR_STYLE;
    if (tag == "tag:yaml.org,2002:str" || (!plain && tag.empty()))
      value = std::move(text);
    else
      value = ResolvePlainImpl(text);
    // JSON, and so the API server, has no infinity: `.inf` or `1e400` would render as null.
    if (value.is_number_float() && !std::isfinite(value.get<double>()))
      return InvalidArgumentError(Where(event.start_mark) + ": " + QuoteValue(text) +
                                  " is not a finite number (JSON, which the API server reads, has no infinity)");
    return Complete(std::move(value), anchor, {1, size.bytes}, event.start_mark);
  }

  // A finished node of `size` (already counted): record its anchor, then attach it to its
  // parent (or make it the root).
  Status Complete(json value, const std::string& anchor, Size size, const yaml_mark_t& mark) {
    if (!anchor.empty()) anchors_[anchor] = {value, size};
    if (stack_.empty()) {
      root_ = std::move(value);
      return OkStatus();
    }
    Frame& parent = stack_.back();
    parent.size.nodes += size.nodes;
    parent.size.bytes += size.bytes;
    if (parent.value.is_array()) {
      parent.value.push_back(std::move(value));
    } else if (!parent.key) {
      return InvalidArgumentError(Where(mark) + ": mapping keys must be strings");
    } else {
      parent.value[*parent.key] = std::move(value);
      parent.key.reset();
    }
    return OkStatus();
  }

  Status Count(Size n) {
    total_.nodes += n.nodes;
    total_.bytes += n.bytes;
    if (total_.nodes > kMaxNodes)
      return InvalidArgumentError("document too large (more than 2,000,000 nodes after expanding aliases)");
    if (total_.bytes > kMaxExpandedBytes)
      return InvalidArgumentError("document too large (more than " + std::to_string(kMaxExpandedBytes >> 20) +
                                  " MiB after expanding aliases)");
    return OkStatus();
  }

  yaml_parser_t parser_;
  std::vector<Frame> stack_;
  json root_;
  std::map<std::string, Anchored> anchors_;
  Size total_;  // of the whole stream
};

bool LooksLikeJson(std::string_view text) {
  for (char c : text) {
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r') continue;
    return c == '{' || c == '[';
  }
  return false;
}

// YAML 1.1 spellings that YAML 1.2's core schema reads as strings, but that readers on 1.1
// (kubectl's, sigs.k8s.io/yaml on go-yaml v2; PyYAML) take for something else: the yes/no/on/off
// words, .nan (which this reader keeps as a string), the merge and value keys, numbers with '_'
// or a 0b/0o/0 prefix, sexagesimal numbers (1:30) and dates (2024-01-02).
bool Yaml11NonString(std::string_view s) {
  static const std::set<std::string_view> kWords = {"y",   "Y",   "yes", "Yes", "YES",  "n",    "N",
                                                    "no",  "No",  "NO",  "on",  "On",   "ON",   "off",
                                                    "Off", "OFF", "<<",  "=",   ".nan", ".NaN", ".NAN"};
  if (kWords.contains(s)) return true;
  const size_t sign = (!s.empty() && (s[0] == '-' || s[0] == '+')) ? 1 : 0;
  if (sign >= s.size() || !((s[sign] >= '0' && s[sign] <= '9') || s[sign] == '.')) return false;
  // A long one is quoted unlooked at: std::regex recurses per character (a 400 KB "1_1_..." took
  // the stack), and a quote too many is harmless.
  if (s.size() > 64) return true;
  static const std::regex kNumber(  // go-yaml v2: ParseInt(base 0) or its float form, '_' removed
      R"([-+]?(0[xX][0-9a-fA-F]+|0[oO]?[0-7]+|0[bB][01]+|[0-9]+|(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?))");
  static const std::regex kSexagesimal(R"([-+]?[0-9][0-9_]*(:[0-5]?[0-9])+(\.[0-9_]*)?)");
  static const std::regex kDate(R"([0-9]{4}-[0-9]{1,2}-[0-9]{1,2}([Tt \t].*)?)");
  std::string plain(s);
  std::erase(plain, '_');
  const std::string text(s);
  return std::regex_match(plain, kNumber) || std::regex_match(text, kSexagesimal) || std::regex_match(text, kDate);
}

// Whether s can be written as a plain scalar that every reader takes back as this string.
bool PlainSafe(const std::string& s) {
  if (s.empty() || NeedsEscapes(s) || !ResolvePlainImpl(s).is_string() || Yaml11NonString(s)) return false;
  if (s.front() == ' ' || s.back() == ' ' || s.back() == ':') return false;
  // Indicators: not first (except -?: before a non-space), and no ": " or " #" anywhere.
  if (std::string_view("-?:,[]{}#&*!|>'\"%@`").find(s[0]) != std::string_view::npos &&
      (std::string_view("-?:").find(s[0]) == std::string_view::npos || s.size() == 1 || s[1] == ' '))
    return false;
  if (s.starts_with("---") || s.starts_with("...")) return false;  // document markers
  return s.find(": ") == std::string::npos && s.find(" #") == std::string::npos;
}

// A double-quoted scalar, escaping exactly the characters NeedsEscapes names, plus '"' and '\'.
void AppendDoubleQuoted(std::string& out, std::string_view s) {
  static constexpr char kHex[] = "0123456789abcdef";
  out += '"';
  for (size_t i = 0; i < s.size();) {
    char32_t r = 0;
    size_t n = DecodeUtf8(s, i, &r);
    if (n == 0) {  // not reachable from checked input: the replacement character
      out += "\\ufffd";
      ++i;
      continue;
    }
    switch (r) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\0': out += "\\0"; break;
      case '\t': out += "\\t"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      default:
        if (r <= 0xff && MustEscape(r)) {
          out += "\\x";
          out += kHex[r >> 4];
          out += kHex[r & 0xf];
        } else if (MustEscape(r)) {
          out += "\\u";
          for (int shift = 12; shift >= 0; shift -= 4) out += kHex[(r >> shift) & 0xf];
        } else {
          out.append(s, i, n);
        }
    }
    i += n;
  }
  out += '"';
}

void AppendScalar(std::string& out, const json& v) {
  switch (v.type()) {
    case json::value_t::string: {
      const std::string& s = v.get_ref<const std::string&>();
      if (PlainSafe(s))
        out += s;
      else
        AppendDoubleQuoted(out, s);
      break;
    }
    case json::value_t::object: out += "{}"; break;  // empty: a non-empty one is a block
    case json::value_t::array: out += "[]"; break;
    case json::value_t::null: out += "~"; break;
    case json::value_t::boolean: out += v.get<bool>() ? "true" : "false"; break;
    default: out += v.dump(); break;
  }
}

bool IsBlock(const json& v) {
  return (v.is_object() || v.is_array()) && !v.empty();
}

// Block-style YAML, two spaces of indent. Every line a value starts on is begun by the caller:
// after "key:" (kAfterKey), after "- " or "? " (kInline: a block's first line goes on it), or
// nothing yet (kTop).
class YamlWriter {
 public:
  std::string Take() && { return std::move(out_); }

  enum class Place { kTop, kAfterKey, kInline };

  void Value(const json& v, size_t indent, Place place) {
    if (!IsBlock(v)) {
      if (place == Place::kAfterKey) out_ += ' ';
      AppendScalar(out_, v);
      out_ += '\n';
      return;
    }
    if (place == Place::kAfterKey) out_ += '\n';
    bool first = true;
    auto start_line = [&] {
      if (!(first && place == Place::kInline)) out_.append(indent, ' ');
      first = false;
    };
    if (v.is_array()) {
      for (const auto& item : v) {
        start_line();
        out_ += "- ";
        Value(item, indent + 2, Place::kInline);
      }
      return;
    }
    for (auto it = v.begin(); it != v.end(); ++it) {
      start_line();
      std::string key;
      AppendScalar(key, json(it.key()));
      if (key.size() <= 1000) {  // YAML caps an implicit key at 1024 characters
        out_ += key;
        out_ += ':';
      } else {  // an explicit key
        out_ += "? ";
        out_ += key;
        out_ += '\n';
        out_.append(indent, ' ');
        out_ += ':';
      }
      Value(*it, indent + 2, Place::kAfterKey);
    }
  }

 private:
  std::string out_;
};

}  // namespace

std::string ToYaml(const json& value) {
  YamlWriter w;
  w.Value(value, 0, YamlWriter::Place::kTop);
  return std::move(w).Take();
}

StatusOr<json> ParseJsonStrict(std::string_view text) {
  TFJOB_RETURN_IF_ERROR(CheckText(text));
  // Tracks the keys seen in every open object so that duplicates are refused.
  std::vector<std::set<std::string>> open;
  std::string duplicate;
  bool too_deep = false;
  auto callback = [&](int depth, json::parse_event_t event, json& parsed) {
    if (depth > kMaxDepth) too_deep = true;
    switch (event) {
      case json::parse_event_t::object_start: open.emplace_back(); break;
      case json::parse_event_t::object_end:
        if (!open.empty()) open.pop_back();
        break;
      case json::parse_event_t::key:
        if (!open.empty() && !open.back().insert(parsed.get<std::string>()).second && duplicate.empty())
          duplicate = parsed.get<std::string>();
        break;
      default: break;
    }
    return true;
  };
  try {
    json j = json::parse(text.begin(), text.end(), callback);
    if (too_deep) return InvalidArgumentError("invalid JSON: nesting deeper than 256 levels");
    if (!duplicate.empty()) return InvalidArgumentError("duplicate key \"" + duplicate + "\"");
    return j;
  } catch (const json::exception& e) {
    std::string what = e.what();
    // "[json.exception.parse_error.101] parse error at line 1, column 2: ..." -> keep the tail.
    if (auto pos = what.find("] "); pos != std::string::npos) what = what.substr(pos + 2);
    return InvalidArgumentError("invalid JSON: " + what);
  }
}

std::string InputTooLargeMessage() {
  return "input is larger than the limit of " + std::to_string(kMaxManifestBytes >> 20) + " MiB";
}

StatusOr<std::vector<ManifestDocument>> ParseManifest(std::string_view text) {
  if (text.size() > kMaxManifestBytes) return InvalidArgumentError(InputTooLargeMessage());
  TFJOB_RETURN_IF_ERROR(CheckText(text));
  std::vector<ManifestDocument> docs;
  if (LooksLikeJson(text)) {
    TFJOB_ASSIGN_OR_RETURN(json j, ParseJsonStrict(text));
    docs.push_back({std::move(j), 1});
    return docs;
  }
  YamlBuilder builder(text);
  TFJOB_ASSIGN_OR_RETURN(docs, builder.Build());
  return docs;
}

}  // namespace tfjob::api
