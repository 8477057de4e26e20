#include "common/status.h"

#include <gtest/gtest.h>

namespace tfjob {
namespace {

StatusOr<int> Half(int v) {
  if (v % 2 != 0) return InvalidArgumentError("odd: " + std::to_string(v));
  return v / 2;
}

StatusOr<int> Quarter(int v) {
  TFJOB_ASSIGN_OR_RETURN(int h, Half(v));
  TFJOB_ASSIGN_OR_RETURN(int q, Half(h));
  return q;
}

Status CheckEven(int v) {
  TFJOB_RETURN_IF_ERROR(Half(v));
  return OkStatus();
}

TEST(Status, DefaultIsOk) {
  Status s;
  EXPECT_TRUE(s.ok());
  EXPECT_EQ(s.ToString(), "OK");
}

TEST(Status, ToStringNamesTheCode) {
  EXPECT_EQ(ConflictError("stale").ToString(), "Conflict: stale");
  EXPECT_EQ(GoneError("too old").ToString(), "Gone: too old");
}

TEST(Status, PredicatesMatchOnlyTheirCode) {
  EXPECT_TRUE(IsNotFound(NotFoundError("x")));
  EXPECT_FALSE(IsNotFound(AlreadyExistsError("x")));
  EXPECT_TRUE(IsAlreadyExists(AlreadyExistsError("x")));
  EXPECT_TRUE(IsConflict(ConflictError("x")));
  EXPECT_FALSE(IsConflict(AlreadyExistsError("x")));
  EXPECT_TRUE(IsGone(GoneError("x")));
  EXPECT_TRUE(IsRetryable(UnavailableError("x")));
  EXPECT_TRUE(IsRetryable(ConflictError("x")));
  EXPECT_FALSE(IsRetryable(InvalidError("x")));
  EXPECT_FALSE(IsRetryable(NotFoundError("x")));
}

TEST(Status, WithContextPrefixesTheMessageAndKeepsTheCode) {
  Status s = NotFoundError("no such pod").WithContext("creating pod job-worker-0");
  EXPECT_EQ(s.code(), StatusCode::kNotFound);
  EXPECT_EQ(s.message(), "creating pod job-worker-0: no such pod");
  EXPECT_TRUE(OkStatus().WithContext("x").ok());
}

TEST(Status, RetryAfterTravelsWithTheStatus) {
  Status s = Status(StatusCode::kTooManyRequests, "slow down").set_retry_after(std::chrono::seconds(3));
  ASSERT_TRUE(s.retry_after().has_value());
  EXPECT_EQ(*s.retry_after(), std::chrono::seconds(3));
}

TEST(StatusOr, HoldsValueOrError) {
  StatusOr<int> ok = Half(8);
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(*ok, 4);
  StatusOr<int> bad = Half(3);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(bad.status().message(), "odd: 3");
}

TEST(StatusOr, MacrosPropagateTheFirstError) {
  EXPECT_EQ(*Quarter(8), 2);
  EXPECT_EQ(Quarter(6).status().message(), "odd: 3");
  EXPECT_TRUE(CheckEven(2).ok());
  EXPECT_EQ(CheckEven(5).code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace tfjob
