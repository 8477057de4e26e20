#include "common/file_reader.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace tfjob {
namespace {

using ::testing::HasSubstr;

TEST(ReadFileBounded, ReadsASmallFile) {
  std::string path = ::testing::TempDir() + "/file_reader_small";
  std::ofstream(path) << "hello";
  auto text = ReadFileBounded(path, 5);
  ASSERT_TRUE(text.ok()) << text.status().ToString();
  EXPECT_EQ(*text, "hello");
}

TEST(ReadFileBounded, RefusesWhatIsTooLargeDirectoriesAndEndlessDevices) {
  std::string path = ::testing::TempDir() + "/file_reader_big";
  std::ofstream(path) << "hello!";
  auto big = ReadFileBounded(path, 5);
  EXPECT_EQ(big.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(big.status().message(), HasSubstr("larger than the limit of 5 bytes"));

  auto zero = ReadFileBounded("/dev/zero", 1024 * 1024);  // never ends: stops after the cap
  EXPECT_EQ(zero.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(zero.status().message(), HasSubstr("/dev/zero is larger than the limit of 1 MiB"));

  auto dir = ReadFileBounded(::testing::TempDir(), 100);
  EXPECT_EQ(dir.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(dir.status().message(), HasSubstr("is a directory"));

  auto missing = ReadFileBounded(::testing::TempDir() + "/no-such-file", 100);
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_THAT(missing.status().message(), HasSubstr("no-such-file"));
}

}  // namespace
}  // namespace tfjob
