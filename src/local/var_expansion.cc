#include "local/var_expansion.h"

#include <map>

namespace tfjob::local {

std::string ExpandVars(std::string_view input, const VarLookup& lookup) {
  std::string out;
  out.reserve(input.size());
  size_t i = 0;
  while (i < input.size()) {
    char c = input[i];
    if (c != '$' || i + 1 >= input.size()) {
      out += c;
      ++i;
      continue;
    }
    char next = input[i + 1];
    if (next == '$') {  // escaped: "$$" is one literal '$'
      out += '$';
      i += 2;
      continue;
    }
    if (next == '(') {
      size_t close = input.find(')', i + 2);
      if (close == std::string_view::npos) {  // no closing ')': kept as written
        out += "$(";
        i += 2;
        continue;
      }
      std::string_view name = input.substr(i + 2, close - i - 2);
      std::optional<std::string> value = name.empty() ? std::nullopt : lookup(name);
      if (value)
        out += *value;
      else
        out.append(input.substr(i, close - i + 1));  // unknown: left as is
      i = close + 1;
      continue;
    }
    out += '$';  // "$x": not a reference
    ++i;
  }
  return out;
}

VarLookup LookupIn(const std::vector<std::pair<std::string, std::string>>& env) {
  return [&env](std::string_view name) -> std::optional<std::string> {
    for (auto it = env.rbegin(); it != env.rend(); ++it)
      if (it->first == name) return it->second;
    return std::nullopt;
  };
}

std::vector<std::pair<std::string, std::string>> ExpandEnv(
    const std::vector<std::pair<std::string, std::string>>& env) {
  std::vector<std::pair<std::string, std::string>> out;
  std::map<std::string, size_t, std::less<>> where;
  auto lookup = [&](std::string_view name) -> std::optional<std::string> {
    auto it = where.find(name);
    if (it == where.end()) return std::nullopt;
    return out[it->second].second;
  };
  for (const auto& [name, value] : env) {
    std::string expanded = ExpandVars(value, lookup);
    if (auto it = where.find(name); it != where.end()) {
      out[it->second].second = std::move(expanded);
    } else {
      where.emplace(name, out.size());
      out.emplace_back(name, std::move(expanded));
    }
  }
  return out;
}

}  // namespace tfjob::local
