// The machine measurements (machine_roofline.h): they measure something,
// describe what they measured, and refuse meaningless requests. (How fast
// this machine is belongs to the benchmarks, not here.)
#include <gtest/gtest.h>

#include "lm/kernels/machine_roofline.h"
#include "nuvec/error.h"

namespace nuvec::lm::kernels {
namespace {

constexpr std::size_t kMiB = std::size_t{1} << 20;

TEST(KernelRoofline, ReadBandwidthSumsTheWholeBufferWithEachThreadCount) {
  for (int t : {1, 2, 3}) {
    const ReadBandwidth r = measure_read_bandwidth(t, 8 * kMiB + 24, 2);  // not a multiple of the threads
    EXPECT_GT(r.bytes_per_second, 0.0);
    EXPECT_EQ(r.threads, t);
    EXPECT_EQ(r.bytes, 8 * kMiB + 24);
    EXPECT_EQ(r.passes, 2);
    EXPECT_EQ(r.pages, Pages::normal);
  }
  EXPECT_EQ(measure_read_bandwidth(0, 4 * kMiB, 1, Pages::huge).threads, threads());
}

TEST(KernelRoofline, ReadBandwidthRefusesTinyBuffersAndNoPasses) {
  EXPECT_THROW(measure_read_bandwidth(1, kMiB - 1, 1), InvalidArgument);
  EXPECT_THROW(measure_read_bandwidth(1, 4 * kMiB, 0), InvalidArgument);
}

TEST(KernelRoofline, LinearRateTimesTheShapeAsked) {
  for (WeightType type : {WeightType::f32, WeightType::f16, WeightType::bf16}) {
    const MatmulRate r = measure_linear_rate(13, 70, 33, type, Precision::exact, 2);
    EXPECT_GT(r.flops_per_second, 0.0);
    EXPECT_EQ(r.m, 13u);
    EXPECT_EQ(r.k, 70u);
    EXPECT_EQ(r.n, 33u);
    EXPECT_EQ(r.type, type);
    EXPECT_EQ(r.precision, Precision::exact);
  }
  EXPECT_THROW(measure_linear_rate(0, 8, 8, WeightType::f32), InvalidArgument);
  EXPECT_THROW(measure_linear_rate(8, 8, 8, WeightType::f32, Precision::fast, 0), InvalidArgument);
}

TEST(KernelRoofline, MatmulCeilingRunsOnEveryThread) {
  const MatmulRate r = measure_matmul_ceiling(WeightType::bf16, Precision::fast, 1);
  EXPECT_GT(r.flops_per_second, 0.0);
  EXPECT_EQ(r.m, 480u);
  EXPECT_THROW(measure_matmul_ceiling(WeightType::f32, Precision::fast, 0), InvalidArgument);
}

}  // namespace
}  // namespace nuvec::lm::kernels
