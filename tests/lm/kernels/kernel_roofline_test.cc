// The machine measurements (machine_roofline.h): they measure something,
// describe what they measured, and refuse meaningless requests. (How fast
// this machine is belongs to the benchmarks, not here.) The figures are
// checked only against what any machine must satisfy: a rate cannot claim
// that a timed pass took longer than the whole call did, nor be beyond any
// CPU (10 TB/s of reads, 100 TFLOP/s).
#include <chrono>
#include <cstdint>
#include <new>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "lm/kernels/machine_roofline.h"
#include "lm/kernels/measurement.h"
#include "nuvec/error.h"
#include "support/text.h"

namespace nuvec::lm::kernels {
namespace {

using nuvec_test::kMiB;

// Seconds that `f` takes, wall clock.
template <class F>
double seconds_of(F&& f) {
  const auto start = std::chrono::steady_clock::now();
  f();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

TEST(KernelRoofline, ReadBandwidthSumsTheWholeBufferWithEachThreadCount) {
  for (int t : {1, 2, 3}) {
    ReadBandwidth r{};
    // Not a multiple of the threads. The sums are checked inside (a wrong one
    // throws), so every word was read by some thread.
    const double wall = seconds_of([&] { r = measure_read_bandwidth(t, 8 * kMiB + 24, 2); });
    EXPECT_EQ(r.threads, t);
    EXPECT_EQ(r.bytes, 8 * kMiB + 24);
    EXPECT_EQ(r.passes, 2);
    EXPECT_EQ(r.pages, Pages::normal);
    // The median pass lasted less than the whole call, so the rate is at
    // least one buffer per call's time.
    EXPECT_GE(r.bytes_per_second, double(r.bytes) / wall) << t << " threads";
    EXPECT_LT(r.bytes_per_second, 1e13) << t << " threads";
  }
  EXPECT_EQ(measure_read_bandwidth(0, 4 * kMiB, 1, Pages::huge).threads, threads());
}

TEST(KernelRoofline, ReadBandwidthRefusesTinyBuffersAndNoPasses) {
  EXPECT_THROW(measure_read_bandwidth(1, kMiB - 1, 1), InvalidArgument);
  EXPECT_THROW(measure_read_bandwidth(1, 4 * kMiB, 0), InvalidArgument);
}

TEST(KernelRoofline, LinearRateTimesTheShapeAsked) {
  for (WeightType type : {WeightType::f32, WeightType::f16, WeightType::bf16}) {
    MatmulRate r{};
    const double wall = seconds_of([&] { r = measure_linear_rate(13, 70, 33, type, Precision::exact, 2); });
    EXPECT_EQ(r.m, 13u);
    EXPECT_EQ(r.k, 70u);
    EXPECT_EQ(r.n, 33u);
    EXPECT_EQ(r.type, type);
    EXPECT_EQ(r.precision, Precision::exact);
    EXPECT_EQ(r.calls, 2);
    const double flops = 2.0 * 13 * 70 * 33;
    EXPECT_GE(r.flops_per_second, flops / wall);
    EXPECT_LT(r.flops_per_second, 1e14);
  }
  EXPECT_THROW(measure_linear_rate(0, 8, 8, WeightType::f32), InvalidArgument);
  EXPECT_THROW(measure_linear_rate(8, 8, 8, WeightType::f32, Precision::fast, 0), InvalidArgument);
}

// Every pool thread times its own fixed product; the figure is the sum of
// their rates, each at least one product per call's time.
TEST(KernelRoofline, MatmulCeilingDescribesItsFixedProduct) {
  MatmulRate r{};
  const double wall = seconds_of([&] { r = measure_matmul_ceiling(WeightType::bf16, Precision::fast, 1); });
  EXPECT_EQ(r.m, 480u);
  EXPECT_EQ(r.k, 256u);
  EXPECT_EQ(r.n, 512u);
  EXPECT_EQ(r.type, WeightType::bf16);
  EXPECT_EQ(r.calls, 1);
  EXPECT_GE(r.flops_per_second, threads() * 2.0 * 480 * 256 * 512 / wall);
  EXPECT_LT(r.flops_per_second, 1e14);
  EXPECT_THROW(measure_matmul_ceiling(WeightType::f32, Precision::fast, 0), InvalidArgument);
}

// What the measurements (and bench/lm/roofline.cc) are built from.
TEST(KernelMeasurement, MedianAndAnonymousMappings) {
  EXPECT_EQ(median({3, 1, 2}), 2);
  EXPECT_EQ(median({4, 1, 3, 2}), 2.5);
  EXPECT_EQ(median({}), 0);
  int calls = 0;
  const double seconds = median_seconds(3, [&] {
    ++calls;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  });
  EXPECT_EQ(calls, 4);  // one untimed, then three timed
  EXPECT_GE(seconds, 0.002);  // each timed call lasted at least its sleep

  const AnonymousMapping empty(0);  // still a valid, writable page
  empty.as<std::uint8_t>()[0] = 1;
  const AnonymousMapping some(3 * kMiB + 5);
  EXPECT_EQ(some.as<std::uint8_t>()[3 * kMiB + 4], 0);  // zero-filled to the last byte
  EXPECT_THROW(AnonymousMapping(std::size_t{1} << 62), std::bad_alloc);
}

}  // namespace
}  // namespace nuvec::lm::kernels
