#pragma once
// The type of a core/v1 Event: Normal or Warning. Spelled once (EnumSpellings); the event
// recorder writes EnumName(type).

#include <array>
#include <string_view>
#include <utility>

#include "api/wire_enum.h"

namespace tfjob::api {

enum class EventType { kNormal, kWarning };
template <>
struct EnumSpellings<EventType> {
  static constexpr std::array<std::pair<EventType, std::string_view>, 2> kValues = {{
      {EventType::kNormal, "Normal"},
      {EventType::kWarning, "Warning"},
  }};
};

}  // namespace tfjob::api
