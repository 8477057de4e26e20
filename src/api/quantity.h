#pragma once
// Kubernetes resource quantities ("500m", "2", "1.5Gi", "1e3") as exact milli-units, enough
// for adding up pod requests into a PodGroup's minResources (docs/semantics.md 2.8). Canonical output
// follows resource.Quantity.String(): the suffix family of the first operand, the largest
// suffix that keeps the number whole, "m" when a fraction remains.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace tfjob::api {

class Quantity {
 public:
  enum class Format { kDecimalSI, kBinarySI };

  Quantity() = default;
  // nullopt for malformed input or values beyond +-9.2e15 units.
  static std::optional<Quantity> Parse(std::string_view text);

  int64_t milli() const { return milli_; }
  Format format() const { return format_; }
  // Adds `other`; keeps this quantity's format (or takes other's when this one is zero).
  // Returns false on overflow.
  bool Add(const Quantity& other);
  std::string ToString() const;

  friend bool operator==(const Quantity&, const Quantity&) = default;

 private:
  int64_t milli_ = 0;
  Format format_ = Format::kDecimalSI;
};

}  // namespace tfjob::api
