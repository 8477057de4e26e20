#include "common/base64.h"

#include <gtest/gtest.h>

namespace tfjob {
namespace {

TEST(Base64, EncodesAndDecodesEachPaddingLength) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"", ""},        {"f", "Zg=="},        {"fo", "Zm8="},
      {"foo", "Zm9v"}, {"foob", "Zm9vYg=="}, {std::string("\xff\x00", 2), "/wA="}};
  for (const auto& [plain, encoded] : cases) {
    EXPECT_EQ(Base64Encode(plain), encoded) << encoded;
    auto decoded = Base64Decode(encoded, "x");
    ASSERT_TRUE(decoded.ok()) << encoded;
    EXPECT_EQ(*decoded, plain) << encoded;
  }
}

TEST(Base64, DecodeSkipsLineBreaksAndNamesTheFieldOfABadOne) {
  EXPECT_EQ(*Base64Decode("Zm9v\nYg==\r\n", "x"), "foob");
  auto bad = Base64Decode("Zm9v!", "certificate-authority-data");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(), "certificate-authority-data is not valid base64");
}

}  // namespace
}  // namespace tfjob
