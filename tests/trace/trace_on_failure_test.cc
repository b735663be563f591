// A trace started by NUVEC_TRACE survives the failures that end programs:
// it is written at an OutOfMemory (up to the refusal, which is its last
// event) and when SIGINT or SIGTERM stops the process.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "nuvec/nuvec.h"
#include "support/temp_file.h"

namespace {

using Kind = nuvec::TraceEventKind;

// A device whose NUVEC_TRACE is `path`.
std::unique_ptr<nuvec::Device> traced_device(const std::filesystem::path& path) {
  ::setenv("NUVEC_TRACE", path.c_str(), 1);
  auto device = nuvec::Device::create_cpu();
  ::unsetenv("NUVEC_TRACE");
  return device;
}

TEST(TraceOnFailure, AnOutOfMemoryWritesTheTraceUpToTheRefusal) {
  nuvec_test::TempFile file(0, 0);
  auto device = traced_device(file.path());
  device->set_memory_limit(1 << 20);
  nuvec::Buffer kept = device->new_buffer(4096);
  EXPECT_THROW(device->new_buffer(2 << 20), nuvec::OutOfMemory);
  const nuvec::Trace at_refusal = nuvec::read_trace(file.path());
  ASSERT_FALSE(at_refusal.events.empty());
  EXPECT_EQ(at_refusal.events.back().kind, Kind::refuse);
  EXPECT_EQ(at_refusal.events.back().requested, 2u << 20);
  EXPECT_EQ(at_refusal.events.back().stats->active, 4096u);  // nothing changed
  // A mapping refused the same way.
  nuvec_test::TempFile big(2 << 20, 1);
  EXPECT_THROW(device->map_file(big.path()), nuvec::OutOfMemory);
  EXPECT_EQ(nuvec::read_trace(file.path()).events.back().kind, Kind::refuse);
  EXPECT_EQ(nuvec::read_trace(file.path()).events.back().label.rfind("map ", 0), 0u);
  // The program lives on: the device's end writes the whole trace.
  kept.reset();
  device.reset();
  const nuvec::Trace at_end = nuvec::read_trace(file.path());
  EXPECT_EQ(at_end.events.back().kind, Kind::free);
}

// In a child process: a traced device, a buffer and a mark, then a wait for
// `signal`; returns how the child ended and leaves its trace in `path`.
int run_until_signalled(const std::filesystem::path& path, int signal) {
  int ready[2];
  if (::pipe(ready) != 0) return -1;
  const pid_t child = ::fork();
  if (child == 0) {
    ::close(ready[0]);
    auto device = traced_device(path);
    nuvec::Buffer b = device->new_buffer(1000);
    device->mark("waiting");
    const char byte = 'r';
    if (::write(ready[1], &byte, 1) != 1) ::_exit(3);
    for (int i = 0; i < 200; ++i) ::usleep(50'000);  // at most 10 s
    ::_exit(4);
  }
  ::close(ready[1]);
  char byte = 0;
  const bool started = ::read(ready[0], &byte, 1) == 1;
  ::close(ready[0]);
  if (started) ::kill(child, signal);
  int status = 0;
  ::waitpid(child, &status, 0);
  return status;
}

class TraceOnSignal : public ::testing::TestWithParam<int> {};

TEST_P(TraceOnSignal, WritesTheTraceAndTheSignalStillEndsTheProcess) {
  nuvec_test::TempFile file(0, 0);
  const int status = run_until_signalled(file.path(), GetParam());
  ASSERT_TRUE(WIFSIGNALED(status)) << "status " << status;
  EXPECT_EQ(WTERMSIG(status), GetParam());
  const nuvec::Trace trace = nuvec::read_trace(file.path());
  ASSERT_GE(trace.events.size(), 2u);
  EXPECT_EQ(trace.events.back().kind, Kind::mark);
  EXPECT_EQ(trace.events.back().label, "waiting");
  EXPECT_EQ(trace.events.back().stats->active, *nuvec::allocation_size(1000));
}

INSTANTIATE_TEST_SUITE_P(SigintAndSigterm, TraceOnSignal, ::testing::Values(SIGINT, SIGTERM));

}  // namespace
