#include "common/sha1.h"

#include <string>

#include <gtest/gtest.h>

namespace tfjob {
namespace {

// The FIPS 180-4 example messages, plus the lengths at the padding edges (55 bytes fit one
// block with the length, 64 need a second); the digests are those of Python's hashlib.
TEST(Sha1, KnownDigests) {
  struct Case {
    std::string input;
    std::string want;
  };
  const Case cases[] = {
      {"", "da39a3ee5e6b4b0d3255bfef95601890afd80709"},
      {"abc", "a9993e364706816aba3e25717850c26c9cd0d89d"},
      {"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq", "84983e441c3bd26ebaae4aa1f95129e5e54670f1"},
      {std::string(1000000, 'a'), "34aa973cd4c4daa4f61eeb2bdbad27316534016f"},
      {std::string(55, 'x'), "cef734ba81a024479e09eb5a75b6ddae62e6abf1"},
      {std::string(64, 'x'), "bb2fa3ee7afb9f54c6dfb5d021f14b1ffe40c163"},
  };
  for (const Case& c : cases) EXPECT_EQ(Sha1Hex(c.input), c.want) << c.input.size() << " bytes";
}

}  // namespace
}  // namespace tfjob
