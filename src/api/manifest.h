#pragma once
// Manifest files: YAML (one or more documents separated by ---) or JSON, turned into JSON
// objects the way kubectl reads them (YAML 1.2 core scalars, quoted scalars stay strings).
// Unlike a plain YAML loader it refuses what would silently lose data: duplicate keys, NUL
// bytes, invalid UTF-8, alias bombs.

#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/status.h"

namespace tfjob::api {

// Limits of the file reader (README, "Input rules and limits"). A manifest the API server takes
// is at most about 1.5 MiB (its request and etcd's value limit), so 8 MiB leaves room for lists
// and comments while a runaway input (/dev/zero, a huge sparse file) stops early.
inline constexpr size_t kMaxManifestBytes = size_t{8} << 20;
// The whole stream's size once aliases are expanded (scalar and key text plus 2 bytes per node):
// four times the input limit, so only alias bombs reach it.
inline constexpr size_t kMaxExpandedBytes = size_t{32} << 20;

struct ManifestDocument {
  nlohmann::json object;
  int line = 1;  // 1-based line where the document starts (1 for JSON)
};

// Every non-empty document of `text`. Errors (kInvalidArgument) carry the line:
// "line 4, column 3: duplicate key \"replicas\"". A text over kMaxManifestBytes is
// kInvalidArgument "input is larger than the limit of 8 MiB".
StatusOr<std::vector<ManifestDocument>> ParseManifest(std::string_view text);

// "input is larger than the limit of 8 MiB" (the file reader's message, in one place).
std::string InputTooLargeMessage();

// Converts a JSON text with the same duplicate-key refusal (used for JSON input).
StatusOr<nlohmann::json> ParseJsonStrict(std::string_view text);

// Block-style YAML for a JSON value; strings that would read back as another type are quoted,
// so ToYaml then ParseManifest is the identity.
std::string ToYaml(const nlohmann::json& value);

}  // namespace tfjob::api
