#include <gtest/gtest.h>

#include "core/ids.h"
#include "core/quantity.h"
#include "core/result.h"
#include "core/time.h"

namespace gpupool {
namespace {

TEST(GpuEq, SevenMigSlicesMakeExactlyOneGpu) {
  GpuEq sum;
  for (int i = 0; i < 7; ++i) sum += GpuEq::MigSlices(1);
  EXPECT_EQ(sum, GpuEq::Gpus(1));
}

TEST(GpuEq, ThousandMilliGpusMakeExactlyOneGpu) {
  GpuEq sum;
  for (int i = 0; i < 1000; ++i) sum += GpuEq::MilliGpus(1);
  EXPECT_EQ(sum, GpuEq::Gpus(1));
}

TEST(GpuEq, MixedSumsStayExact) {
  // 3/7 + 4/7 + 250/1000 + 750/1000 = 2 GPUs, with no rounding anywhere.
  GpuEq sum = GpuEq::MigSlices(3) + GpuEq::MigSlices(4) + GpuEq::MilliGpus(250) +
              GpuEq::MilliGpus(750);
  EXPECT_EQ(sum, GpuEq::Gpus(2));
  EXPECT_EQ(sum.whole_gpus(), 2);
}

TEST(GpuEq, RendersAtMostThreeDecimals) {
  EXPECT_EQ(ToString(GpuEq::Gpus(8)), "8");
  EXPECT_EQ(ToString(GpuEq::MigSlices(1)), "0.143");  // 1/7
  EXPECT_EQ(ToString(GpuEq::MilliGpus(2500)), "2.5");
  EXPECT_EQ(ToString(GpuEq::Gpus(0) - GpuEq::Gpus(3)), "-3");
}

TEST(Time, AddingInfiniteDurationSaturatesToNever) {
  EXPECT_TRUE((Time::FromSeconds(5) + Duration::Infinite()).is_never());
  EXPECT_EQ(Time::FromSeconds(5) + Duration::Seconds(2), Time::FromSeconds(7));
  EXPECT_EQ(ToString(Time::FromMillis(1500)), "t=1.5s");
}

TEST(Result, CarriesValueOrError) {
  Result<int> good = 4;
  ASSERT_TRUE(good.ok());
  EXPECT_EQ(*good, 4);
  Result<int> bad = InvalidArgument("nope");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(ErrorCodeName(bad.error().code), "invalid_argument");
}

TEST(ResultDeathTest, ValueOfErrorIsFatal) {
  Result<int> bad = NotFound("missing");
  EXPECT_DEATH((void)bad.value(), "missing");
}

TEST(StrongId, OrdersByValueAndDefaultsToInvalid) {
  EXPECT_FALSE(TenantId().valid());
  EXPECT_LT(TenantId(1), TenantId(2));
  EXPECT_TRUE(JobId(0).valid());
}

}  // namespace
}  // namespace gpupool
