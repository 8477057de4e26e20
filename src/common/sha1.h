#pragma once
// SHA-1 (FIPS 180-4) of a byte string, as lower-case hex. Used where another system's
// deterministic names hash with SHA-1 and ours must come out the same (the Kueue Workload
// name, docs/kueue.md); never for anything that needs collision resistance. Pure; thread-safe.

#include <string>
#include <string_view>

namespace tfjob {

// The 40 hex digits of SHA-1(`data`).
std::string Sha1Hex(std::string_view data);

}  // namespace tfjob
