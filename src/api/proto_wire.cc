#include "api/proto_wire.h"

namespace tfjob::api {

bool ProtoReader::Varint(uint64_t* v) {
  uint64_t out = 0;
  for (int i = 0; i < 10; ++i) {
    if (rest_.empty()) return false;
    auto byte = static_cast<uint8_t>(rest_.front());
    rest_.remove_prefix(1);
    if (i == 9 && byte > 1) return false;  // more than 64 bits
    out |= static_cast<uint64_t>(byte & 0x7f) << (7 * i);
    if ((byte & 0x80) == 0) {
      *v = out;
      return true;
    }
  }
  return false;
}

bool ProtoReader::Next(Field* field) {
  if (!ok_ || rest_.empty()) return false;
  uint64_t key = 0;
  if (!Varint(&key)) return Fail();
  uint64_t number = key >> 3;
  if (number == 0 || number > 0x1fffffff) return Fail();
  field->number = static_cast<uint32_t>(number);
  field->bytes = {};
  field->value = 0;
  return Value(key & 7, field) || Fail();
}

bool ProtoReader::Value(uint64_t wire_type, Field* field) {
  switch (wire_type) {
    case 0: field->type = WireType::kVarint; return Varint(&field->value);
    case 1: field->type = WireType::kFixed64; return Fixed(8, &field->value);
    case 5: field->type = WireType::kFixed32; return Fixed(4, &field->value);
    case 2: {
      uint64_t length = 0;
      if (!Varint(&length) || length > rest_.size()) return false;
      field->type = WireType::kBytes;
      field->bytes = rest_.substr(0, length);
      rest_.remove_prefix(length);
      return true;
    }
    default: return false;  // groups (3, 4) and the unused types 6, 7
  }
}

bool ProtoReader::Fixed(size_t n, uint64_t* v) {
  if (rest_.size() < n) return false;
  *v = 0;
  for (size_t i = 0; i < n; ++i) *v |= static_cast<uint64_t>(static_cast<uint8_t>(rest_[i])) << (8 * i);
  rest_.remove_prefix(n);
  return true;
}

std::optional<std::string> ProtoTimeText(std::string_view message) {
  ProtoReader r(message);
  ProtoReader::Field f;
  int64_t seconds = 0;
  while (r.Next(&f))
    if (f.number == 1 && f.type == ProtoReader::WireType::kVarint) seconds = f.Int();
  // time_point's range in nanoseconds is about +-292 years around 1970.
  constexpr int64_t kLimit = 9'000'000'000;
  if (!r.ok() || seconds < -kLimit || seconds > kLimit) return std::nullopt;
  return FormatTime(Time(std::chrono::seconds(seconds)));
}

}  // namespace tfjob::api
