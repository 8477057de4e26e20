#pragma once
// ProtoReader: the fields of one protocol-buffers message, for the few Kubernetes messages this
// project reads in their protobuf form (docs/operator.md, "API requests"): the envelope, lists,
// watch events and Status in kube/protobuf.h, the Pod in api/pod_proto.h.
//
// The wire format: each field is a varint key (field number << 3 | wire type), then a varint,
// 8 or 4 fixed bytes, or a varint length and that many bytes. A nested message is read by a
// reader over its field's bytes; nothing is copied. Every length is checked against what is
// left, a varint is at most 10 bytes, and the group wire types (3, 4; Kubernetes has none) are
// malformed: a reader never reads past its message, and malformed input ends it with ok() false.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "api/time.h"

namespace tfjob::api {

class ProtoReader {
 public:
  enum class WireType : uint8_t { kVarint = 0, kFixed64 = 1, kBytes = 2, kFixed32 = 5 };
  struct Field {
    uint32_t number = 0;
    WireType type = WireType::kVarint;
    uint64_t value = 0;      // kVarint, kFixed64, kFixed32
    std::string_view bytes;  // kBytes: a string, bytes or a nested message

    // A string field's text; "" for a field of another wire type.
    std::string String() const { return type == WireType::kBytes ? std::string(bytes) : std::string(); }
    // An int32 or int64 field (a negative int32 is sign-extended to ten bytes on the wire).
    int64_t Int() const { return type == WireType::kVarint ? static_cast<int64_t>(value) : 0; }
    bool Bool() const { return type == WireType::kVarint && value != 0; }
    // A nested message's bytes; empty for a field of another wire type.
    std::string_view Message() const { return type == WireType::kBytes ? bytes : std::string_view(); }
  };

  explicit ProtoReader(std::string_view message) : rest_(message) {}

  // Reads the next field: false at the end of the message, or on malformed input (then ok() is
  // false and every later call is false too).
  bool Next(Field* field);
  bool ok() const { return ok_; }

 private:
  bool Varint(uint64_t* v);
  bool Value(uint64_t wire_type, Field* field);  // the field's value after its key
  bool Fixed(size_t n, uint64_t* v);             // n little-endian bytes
  bool Fail() {
    ok_ = false;
    rest_ = {};
    return false;
  }

  std::string_view rest_;
  bool ok_ = true;
};

// A metav1.Time message (seconds = 1, nanos = 2) as the API's JSON writes it,
// "YYYY-MM-DDTHH:MM:SSZ"; nullopt when malformed or out of the range a time_point holds.
std::optional<std::string> ProtoTimeText(std::string_view message);

}  // namespace tfjob::api
