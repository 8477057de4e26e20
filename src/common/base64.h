#pragma once
// Base64 (RFC 4648, standard alphabet, padded): kubeconfig's `*-data` fields are decoded, an
// admission webhook's JSONPatch is encoded.

#include <string>

#include "common/status.h"

namespace tfjob {

std::string Base64Encode(const std::string& in);
// Skips padding and line breaks; any other character outside the alphabet is an error that
// names `what`.
StatusOr<std::string> Base64Decode(const std::string& in, const std::string& what);

}  // namespace tfjob
