#include "api/manifest.h"

#include <cerrno>
#include <cstdlib>
#include <set>
#include <sstream>

#include <yaml-cpp/yaml.h>

namespace tfjob::api {
namespace {

using nlohmann::json;

constexpr size_t kMaxNodes = 2'000'000;  // after alias expansion
constexpr int kMaxDepth = 256;

Status CheckText(std::string_view text) {
  for (size_t i = 0; i < text.size();) {
    auto c = static_cast<unsigned char>(text[i]);
    if (c == 0) return InvalidArgumentError("not a text file (NUL byte at offset " + std::to_string(i) + ")");
    size_t n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    if (n == 0 || i + n > text.size())
      return InvalidArgumentError("not valid UTF-8 (byte offset " + std::to_string(i) + ")");
    for (size_t k = 1; k < n; ++k)
      if ((static_cast<unsigned char>(text[i + k]) >> 6) != 2)
        return InvalidArgumentError("not valid UTF-8 (byte offset " + std::to_string(i) + ")");
    i += n;
  }
  return OkStatus();
}

std::string Where(const YAML::Mark& m) {
  return "line " + std::to_string(m.line + 1) + ", column " + std::to_string(m.column + 1);
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

class Converter {
 public:
  Status Convert(const YAML::Node& node, int depth, json* out) {
    if (++nodes_ > kMaxNodes)
      return InvalidArgumentError("document too large (more than 2,000,000 nodes after expanding aliases)");
    if (depth > kMaxDepth) return InvalidArgumentError(Where(node.Mark()) + ": nesting deeper than 256 levels");
    switch (node.Type()) {
      case YAML::NodeType::Undefined:
      case YAML::NodeType::Null:
        *out = nullptr;
        return OkStatus();
      case YAML::NodeType::Scalar: {
        const std::string& tag = node.Tag();
        if (tag == "!" || tag == "tag:yaml.org,2002:str") *out = node.Scalar();
        else *out = ResolvePlainImpl(node.Scalar());
        return OkStatus();
      }
      case YAML::NodeType::Sequence: {
        *out = json::array();
        for (const auto& item : node) {
          json v;
          TFJOB_RETURN_IF_ERROR(Convert(item, depth + 1, &v));
          out->push_back(std::move(v));
        }
        return OkStatus();
      }
      case YAML::NodeType::Map: {
        *out = json::object();
        for (const auto& kv : node) {
          if (!kv.first.IsScalar())
            return InvalidArgumentError(Where(kv.first.Mark()) + ": mapping keys must be strings");
          std::string key = kv.first.Scalar();
          if (kv.first.Tag() == "?" && key.empty() && kv.first.IsNull())
            return InvalidArgumentError(Where(kv.first.Mark()) + ": mapping key is empty");
          if (out->contains(key))
            return InvalidArgumentError(Where(kv.first.Mark()) + ": duplicate key \"" + key + "\"");
          json v;
          TFJOB_RETURN_IF_ERROR(Convert(kv.second, depth + 1, &v));
          (*out)[key] = std::move(v);
        }
        return OkStatus();
      }
    }
    return InternalError("unknown YAML node type");
  }

 private:
  size_t nodes_ = 0;
};

bool LooksLikeJson(std::string_view text) {
  for (char c : text) {
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r') continue;
    return c == '{' || c == '[';
  }
  return false;
}

void Emit(YAML::Emitter& out, const json& v) {
  switch (v.type()) {
    case json::value_t::object:
      out << YAML::BeginMap;
      for (auto it = v.begin(); it != v.end(); ++it) {
        out << YAML::Key;
        const std::string& k = it.key();
        if (ResolvePlainImpl(k).is_string()) out << k;
        else out << YAML::DoubleQuoted << k;
        out << YAML::Value;
        Emit(out, *it);
      }
      out << YAML::EndMap;
      break;
    case json::value_t::array:
      out << YAML::BeginSeq;
      for (const auto& item : v) Emit(out, item);
      out << YAML::EndSeq;
      break;
    case json::value_t::string: {
      const std::string& s = v.get_ref<const std::string&>();
      if (ResolvePlainImpl(s).is_string() && s.find('\n') == std::string::npos) out << s;
      else out << YAML::DoubleQuoted << s;
      break;
    }
    case json::value_t::null: out << YAML::Null; break;
    case json::value_t::boolean: out << (v.get<bool>() ? "true" : "false"); break;
    default: out << v.dump(); break;
  }
}

}  // namespace

json ResolvePlainScalar(const std::string& text) { return ResolvePlainImpl(text); }

std::string ToYaml(const json& value) {
  YAML::Emitter out;
  out.SetIndent(2);
  out.SetSeqFormat(YAML::Block);
  out.SetMapFormat(YAML::Block);
  Emit(out, value);
  std::string s = out.c_str();
  if (s.empty() || s.back() != '\n') s += '\n';
  return s;
}

StatusOr<json> ParseJsonStrict(std::string_view text) {
  TFJOB_RETURN_IF_ERROR(CheckText(text));
  // Tracks the keys seen in every open object so that duplicates are refused.
  std::vector<std::set<std::string>> open;
  std::string duplicate;
  auto callback = [&](int /*depth*/, json::parse_event_t event, json& parsed) {
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
    if (!duplicate.empty()) return InvalidArgumentError("duplicate key \"" + duplicate + "\"");
    return j;
  } catch (const json::exception& e) {
    std::string what = e.what();
    // "[json.exception.parse_error.101] parse error at line 1, column 2: ..." -> keep the tail.
    if (auto pos = what.find("] "); pos != std::string::npos) what = what.substr(pos + 2);
    return InvalidArgumentError("invalid JSON: " + what);
  }
}

StatusOr<std::vector<ManifestDocument>> ParseManifest(std::string_view text) {
  TFJOB_RETURN_IF_ERROR(CheckText(text));
  std::vector<ManifestDocument> docs;
  if (LooksLikeJson(text)) {
    TFJOB_ASSIGN_OR_RETURN(json j, ParseJsonStrict(text));
    docs.push_back({std::move(j), 1});
    return docs;
  }
  std::vector<YAML::Node> nodes;
  try {
    nodes = YAML::LoadAll(std::string(text));
  } catch (const YAML::Exception& e) {
    std::string msg = e.msg;
    return InvalidArgumentError("invalid YAML: " + Where(e.mark) + ": " + msg);
  }
  for (const auto& node : nodes) {
    if (node.IsNull() || !node.IsDefined()) continue;
    json j;
    Converter converter;
    try {
      TFJOB_RETURN_IF_ERROR(converter.Convert(node, 0, &j));
    } catch (const YAML::Exception& e) {
      return InvalidArgumentError("invalid YAML: " + Where(e.mark) + ": " + e.msg);
    }
    docs.push_back({std::move(j), node.Mark().line + 1});
  }
  return docs;
}

}  // namespace tfjob::api
