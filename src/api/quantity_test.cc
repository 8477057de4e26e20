#include "api/quantity.h"

#include <gtest/gtest.h>

namespace tfjob::api {
namespace {

std::string Sum(std::vector<std::string> parts) {
  Quantity total;
  for (const auto& p : parts) {
    auto q = Quantity::Parse(p);
    EXPECT_TRUE(q) << p;
    if (q) total.Add(*q);
  }
  return total.ToString();
}

TEST(Quantity, ParsesSuffixes) {
  EXPECT_EQ(Quantity::Parse("500m")->milli(), 500);
  EXPECT_EQ(Quantity::Parse("2")->milli(), 2000);
  EXPECT_EQ(Quantity::Parse("1.5")->milli(), 1500);
  EXPECT_EQ(Quantity::Parse("1Ki")->milli(), 1024000);
  EXPECT_EQ(Quantity::Parse("1k")->milli(), 1000000);
  EXPECT_EQ(Quantity::Parse("1e3")->milli(), 1000000);
  EXPECT_EQ(Quantity::Parse("1Gi")->format(), Quantity::Format::kBinarySI);
}

TEST(Quantity, RejectsMalformed) {
  for (const char* s : {"", "abc", "1x", "1.2.3", "Gi", "99999999999999999999999Ei"})
    EXPECT_FALSE(Quantity::Parse(s)) << s;
}

TEST(Quantity, SumsInCanonicalForm) {
  EXPECT_EQ(Sum({"1", "500m"}), "1500m");
  EXPECT_EQ(Sum({"1", "1"}), "2");
  EXPECT_EQ(Sum({"1Gi", "1Gi"}), "2Gi");
  EXPECT_EQ(Sum({"1Gi", "512Mi"}), "1536Mi");
  EXPECT_EQ(Sum({"500m", "500m"}), "1");
  EXPECT_EQ(Sum({"1k", "1k"}), "2k");
  EXPECT_EQ(Sum({}), "0");
}

}  // namespace
}  // namespace tfjob::api
