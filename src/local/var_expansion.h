#pragma once
// Kubernetes' `$(VAR)` references in a container's command, args and env values, expanded the
// way the kubelet does before it starts a container (docs/local.md):
//   `$(NAME)`  -> the value of NAME when `lookup` knows it, else left as is ("$(NAME)");
//   `$$`       -> `$` (so `$$(NAME)` is the literal text `$(NAME)`);
//   any other `$` (`$x`, `$(` without a closing `)`, a trailing `$`) is kept as written.
// Pure: no environment is read; the caller says which names are defined.

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tfjob::local {

using VarLookup = std::function<std::optional<std::string>(std::string_view name)>;

std::string ExpandVars(std::string_view input, const VarLookup& lookup);

// A container's env list as the kubelet resolves it: each value may refer to the variables
// defined before it (in order); a name defined twice keeps its last value, at its first place.
std::vector<std::pair<std::string, std::string>> ExpandEnv(const std::vector<std::pair<std::string, std::string>>& env);

// Looks names up in an env list (the last definition wins).
VarLookup LookupIn(const std::vector<std::pair<std::string, std::string>>& env);

}  // namespace tfjob::local
