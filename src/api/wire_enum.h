#pragma once
// Enumerations whose wire form is a string (restartPolicy, cleanPodPolicy, successPolicy, an
// Event's type). Each enum lists its spellings once, in an EnumSpellings<E> specialisation beside
// the enum; ParseEnum and EnumName are the only readers of that table, so parsing and printing
// live in one place each.
//
// WireEnum<E> is such a field as the user wrote it: the enumerator, when the text is one of the
// spellings, and the text itself, which upstream admits whatever it is and which our validation
// messages quote (docs/semantics.md D22, D25). Code that decides reads value(); only validation
// and the codecs read text().

#include <array>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace tfjob::api {

// Specialised for each enum E: `static constexpr std::array<std::pair<E, std::string_view>, N>
// kValues`, in the order messages list the supported values.
template <typename E>
struct EnumSpellings;

// The enumerator spelled exactly `text`, or nullopt.
template <typename E>
std::optional<E> ParseEnum(std::string_view text) {
  for (const auto& [value, spelling] : EnumSpellings<E>::kValues)
    if (spelling == text) return value;
  return std::nullopt;
}

// The spelling of `value`.
template <typename E>
std::string_view EnumName(E value) {
  for (const auto& [v, spelling] : EnumSpellings<E>::kValues)
    if (v == value) return spelling;
  return {};
}

// Every spelling, in the table's order (for "supported: ..." lists).
template <typename E>
std::vector<std::string> EnumNames() {
  std::vector<std::string> out;
  for (const auto& [v, spelling] : EnumSpellings<E>::kValues) out.emplace_back(spelling);
  return out;
}

template <typename E>
class WireEnum {
 public:
  WireEnum() : WireEnum(std::string()) {}
  // Implicit on purpose: a field is set from an enumerator or from text alike.
  WireEnum(E value) : text_(EnumName(value)), value_(value) {}                         // NOLINT
  WireEnum(std::string text) : text_(std::move(text)), value_(ParseEnum<E>(text_)) {}  // NOLINT
  WireEnum(const char* text) : WireEnum(std::string(text)) {}                          // NOLINT

  // The enumerator; nullopt when the text is none of the spellings (or empty, if "" is none).
  std::optional<E> value() const { return value_; }
  // The text as written.
  const std::string& text() const { return text_; }
  bool empty() const { return text_.empty(); }

  friend bool operator==(const WireEnum& a, const WireEnum& b) { return a.text_ == b.text_; }
  friend bool operator==(const WireEnum& a, E b) { return a.value_ == b; }
  friend bool operator==(const WireEnum& a, std::string_view b) { return a.text_ == b; }
  friend bool operator==(const WireEnum& a, const std::string& b) { return a.text_ == b; }
  friend bool operator==(const WireEnum& a, const char* b) { return a.text_ == b; }

 private:
  std::string text_;
  std::optional<E> value_;
};

// The codecs write the text as written.
template <typename E>
void to_json(nlohmann::json& j, const WireEnum<E>& v) {
  j = v.text();
}

}  // namespace tfjob::api
