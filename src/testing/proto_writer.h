#pragma once
// Protocol-buffers writers for tests: a message built field by field (the reader is
// api/proto_wire.h).

#include <cstdint>
#include <string>
#include <string_view>

namespace tfjob::testing {

inline std::string ProtoVarint(uint64_t v) {
  std::string out;
  do {
    uint8_t byte = v & 0x7f;
    v >>= 7;
    out.push_back(static_cast<char>(v != 0 ? byte | 0x80 : byte));
  } while (v != 0);
  return out;
}

// A length-delimited field: a string, bytes or a nested message.
inline std::string ProtoBytes(uint32_t number, std::string_view value) {
  return ProtoVarint(number << 3 | 2) + ProtoVarint(value.size()) + std::string(value);
}

// A varint field (a negative value is written in ten bytes, as for an int32 or int64).
inline std::string ProtoInt(uint32_t number, int64_t value) {
  return ProtoVarint(number << 3) + ProtoVarint(static_cast<uint64_t>(value));
}

}  // namespace tfjob::testing
