#include "api/schema_regex.h"

#include <gtest/gtest.h>

namespace tfjob::api {
namespace {

// The quantity pattern of the CRD (core/v1 resource.Quantity), as Go's regexp matches it.
constexpr const char* kQuantity =
    R"(^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$)";

TEST(SchemaRegex, QuantityPatternAsGoMatchesIt) {
  auto re = SchemaRegex::Compile(kQuantity);
  ASSERT_TRUE(re.has_value());
  for (const char* ok : {"1", "500m", "1.5Gi", "+2", "-3", ".5", "5.", "1e3", "1E-3", "2Ki", "7n", "0", "1.5e+3"})
    EXPECT_TRUE(re->Matches(ok)) << ok;
  for (const char* bad : {"lots", "", "1 ", " 1", "1Gb", "1.2.3", "Gi", "1ei", "--1", "1e", "1Mi2", "+", "."})
    EXPECT_FALSE(re->Matches(bad)) << bad;
}

TEST(SchemaRegex, UnanchoredPatternsMatchAnywhere) {
  struct Case {
    const char* pattern;
    const char* text;
    bool matches;
  };
  const Case cases[] = {
      {"ab", "xxabyy", true},     {"ab", "a b", false},
      {"^ab", "xab", false},      {"ab$", "abx", false},
      {"a|b", "cb", true},        {"(?:ab)+c", "ababc", true},
      {"a*", "", true},           {"^a+$", "", false},
      {"[^0-9]", "123", false},   {"[^0-9]", "12x", true},
      {"\\d\\w", "1_", true},     {"^.$", "é", true},
      {"^.$", "\n", false},       {"^[a-c-]+$", "a-b", true},
      {"colou?r", "color", true}, {"^(a|ab)(c|bcd)$", "abcd", true},
      {"^\\.$", "x", false},      {"^\\S+$", "a b", false},
  };
  for (const auto& c : cases) {
    auto re = SchemaRegex::Compile(c.pattern);
    ASSERT_TRUE(re.has_value()) << c.pattern;
    EXPECT_EQ(re->Matches(c.text), c.matches) << c.pattern << " on " << c.text;
  }
}

// Syntax outside the subset is refused, never matched wrongly.
TEST(SchemaRegex, RefusesWhatItDoesNotRead) {
  for (const char* p : {"a{2}", "(?i)a", "(?P<x>a)", "[[:alpha:]]", "\\pL", "(a", "a)", "[a", "*a", "a**", "\\",
                        "[z-a]", "\\1", "\xff"})
    EXPECT_FALSE(SchemaRegex::Compile(p).has_value()) << p;
}

// A hostile text costs one pass: 8 MiB of digits against the quantity pattern, and a pattern
// that backtracking engines take exponential time on.
TEST(SchemaRegex, LinearOnHostileText) {
  auto quantity = SchemaRegex::Compile(kQuantity);
  ASSERT_TRUE(quantity.has_value());
  std::string digits(8 << 20, '7');
  EXPECT_TRUE(quantity->Matches(digits));
  digits.back() = 'x';
  EXPECT_FALSE(quantity->Matches(digits));
  auto nested = SchemaRegex::Compile("^(a+)+$");
  ASSERT_TRUE(nested.has_value());
  EXPECT_FALSE(nested->Matches(std::string(100000, 'a') + "b"));
  EXPECT_TRUE(nested->Matches(std::string(100000, 'a')));
}

}  // namespace
}  // namespace tfjob::api
