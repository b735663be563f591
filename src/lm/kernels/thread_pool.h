// The kernels' thread pool: a few persistent std::threads that the calling
// thread joins for the duration of one parallel loop. The linear kernels run
// on it, and so can the runtime's other loops (attention over heads, ...).
//
// Why our own pool and not OpenMP: the whole test suite also runs under
// ThreadSanitizer, which reports false races inside libgomp; plain atomics,
// mutexes and condition variables are understood by it. Why persistent
// threads: a decode step calls the kernels a few hundred times, each call
// lasting tens of microseconds, so creating threads per call would cost more
// than the work. Workers spin briefly after a loop (the next one usually
// follows within microseconds) and then sleep on a condition variable.
//
// Rules:
// - parallel_for runs body for every index in [0, count) and returns when all
//   are done; the calling thread takes part. Indices are handed out one at a
//   time from a shared counter, so give it a few more indices than threads
//   (e.g. blocks of rows) and let each index be a sizeable piece of work.
// - body may take (std::size_t index) or (std::size_t index, int slot); slot
//   is in [0, threads()) and no two indices run at the same time on the same
//   slot, so per-thread scratch can be indexed by it.
// - A call made while another parallel_for is running (from inside a body, or
//   from another thread) runs its loop serially on the calling thread, with
//   slot 0 for every index (so per-slot scratch must not be shared between
//   the nested loop and the one around it). It is correct, never a deadlock.
// - If a body throws, no further indices are started, the loop waits for the
//   running ones, and parallel_for rethrows the first exception.
// - Dispatching allocates nothing (steady-state decode makes zero system
//   allocations); the workers are created on the first parallel loop.
#pragma once

#include <cstddef>
#include <type_traits>
#include <utility>

#include "nuvec/lm/kernels.h"  // set_threads(), threads()

namespace nuvec::lm::kernels {

namespace detail {

// One loop, type-erased without allocating: a function pointer and the
// address of the caller's callable.
struct ParallelJob {
  void (*call)(void* body, std::size_t index, int slot);
  void* body;
  std::size_t count;
};
void run_parallel(const ParallelJob& job);

template <class F>
void call_body(void* body, std::size_t index, int slot) {
  F& f = *static_cast<F*>(body);
  if constexpr (std::is_invocable_v<F&, std::size_t, int>) {
    f(index, slot);
  } else {
    f(index);
  }
}

}  // namespace detail

template <class F>
void parallel_for(std::size_t count, F&& body) {
  using Body = std::remove_reference_t<F>;
  static_assert(std::is_invocable_v<Body&, std::size_t, int> || std::is_invocable_v<Body&, std::size_t>,
                "parallel_for's body takes (std::size_t index) or (std::size_t index, int slot)");
  if (count == 0) return;
  detail::run_parallel({&detail::call_body<Body>, const_cast<void*>(static_cast<const void*>(&body)), count});
}

}  // namespace nuvec::lm::kernels
