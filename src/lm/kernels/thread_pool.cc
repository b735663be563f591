// The kernels' thread pool (see thread_pool.h for the rules).
//
// Protocol: the caller publishes a job under `mutex_`, opens it in `state_`
// and bumps `generation_`; a worker, spinning or woken, that sees the new
// generation joins the job if it is still open (one more active worker in
// `state_`), takes indices from `next_` until they run out, and leaves. The
// caller takes indices too, then closes the job and waits only for the
// workers that joined, so the job (which lives on the caller's stack) is
// never touched after parallel_for returns, and a worker that the OS has not
// scheduled yet (a shared machine) does not hold the loop up: it finds the
// job closed when it runs, and waits for the next one.
#include "lm/kernels/thread_pool.h"

#include <sched.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace nuvec::lm::kernels {
namespace {

void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#else
  std::this_thread::yield();
#endif
}

int available_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0) {
    const int n = CPU_COUNT(&set);
    if (n > 0) return n;
  }
  const unsigned n = std::thread::hardware_concurrency();
  return n > 0 ? static_cast<int>(n) : 1;
}

// How long an idle thread spins before it sleeps: long enough to span the gap
// between two kernel calls of a decode step, short enough not to hold a core
// that someone else wants for long.
constexpr auto kSpin = std::chrono::microseconds(200);

// Which pool thread this is: -1 outside any loop, else its slot. A loop
// started while the thread already runs one runs serially (see the header).
thread_local int t_slot = -1;

class Pool {
 public:
  Pool() : threads_(available_cpus()) {}
  ~Pool() { stop_workers(); }

  int threads() const { return threads_.load(std::memory_order_relaxed); }

  void set_threads(int n) {
    std::lock_guard dispatch(dispatch_);
    stop_workers();
    threads_.store(std::max(n, 1), std::memory_order_relaxed);
  }

  void run(const detail::ParallelJob& job) {
    std::unique_lock dispatch(dispatch_, std::try_to_lock);
    if (!dispatch.owns_lock() || t_slot >= 0 || threads() == 1 || job.count == 1) {
      run_serially(job);
      return;
    }
    if (workers_.empty()) start_workers();
    {
      std::lock_guard lock(mutex_);
      job_ = &job;
      next_.store(0, std::memory_order_relaxed);
      error_ = nullptr;
      state_.store(kOpen, std::memory_order_release);
      generation_.fetch_add(1, std::memory_order_release);
    }
    wake_.notify_all();
    t_slot = 0;
    work(job, 0);
    t_slot = -1;
    wait_for_workers();
    job_ = nullptr;
    if (error_) std::rethrow_exception(std::exchange(error_, nullptr));
  }

 private:
  static void run_serially(const detail::ParallelJob& job) {
    const int outer = t_slot;
    t_slot = 0;
    try {
      for (std::size_t i = 0; i < job.count; ++i) job.call(job.body, i, 0);
    } catch (...) {
      t_slot = outer;
      throw;
    }
    t_slot = outer;
  }

  void work(const detail::ParallelJob& job, int slot) {
    for (;;) {
      const std::size_t i = next_.fetch_add(1, std::memory_order_relaxed);
      if (i >= job.count) return;
      try {
        job.call(job.body, i, slot);
      } catch (...) {
        next_.store(job.count, std::memory_order_relaxed);  // start nothing more
        std::lock_guard lock(mutex_);
        if (!error_) error_ = std::current_exception();
        return;
      }
    }
  }

  // `seen`: the generation when the worker was started (a pool restarted by
  // set_threads() has published loops before).
  void worker(int slot, std::uint64_t seen) {
    t_slot = slot;
    for (;;) {
      if (!wait_for_generation(seen)) return;
      seen = generation_.load(std::memory_order_acquire);
      if (!join()) continue;  // the caller finished it alone
      work(*job_, slot);
      // The last worker to leave a closed job tells the caller.
      if (state_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
        std::lock_guard lock(mutex_);  // so the caller cannot miss the notify
        done_.notify_one();
      }
    }
  }

  // Spins, then sleeps, until a job newer than `seen` is published; false
  // when the pool is stopping.
  bool wait_for_generation(std::uint64_t seen) {
    const auto until = std::chrono::steady_clock::now() + kSpin;
    for (int i = 0;; ++i) {
      if (generation_.load(std::memory_order_acquire) != seen) return true;
      if (stop_.load(std::memory_order_acquire)) return false;
      if ((i & 63) == 63 && std::chrono::steady_clock::now() > until) break;
      cpu_relax();
    }
    std::unique_lock lock(mutex_);
    wake_.wait(lock, [&] {
      return generation_.load(std::memory_order_acquire) != seen || stop_.load(std::memory_order_acquire);
    });
    return !stop_.load(std::memory_order_acquire) || generation_.load(std::memory_order_acquire) != seen;
  }

  // One more active worker on the current job, if it is still open. While a
  // worker is active the caller cannot return, so job_ stays valid.
  bool join() {
    std::uint64_t s = state_.load(std::memory_order_acquire);
    while (s & kOpen)
      if (state_.compare_exchange_weak(s, s + 1, std::memory_order_acq_rel, std::memory_order_acquire)) return true;
    return false;
  }

  // Closes the job to workers not yet in it, then waits for those in it.
  void wait_for_workers() {
    if (state_.fetch_and(~kOpen, std::memory_order_acq_rel) == kOpen) return;  // nobody joined
    const auto until = std::chrono::steady_clock::now() + kSpin;
    for (int i = 0; state_.load(std::memory_order_acquire) != 0; ++i) {
      if ((i & 63) == 63 && std::chrono::steady_clock::now() > until) {
        std::unique_lock lock(mutex_);
        done_.wait(lock, [&] { return state_.load(std::memory_order_acquire) == 0; });
        return;
      }
      cpu_relax();
    }
  }

  void start_workers() {
    stop_.store(false, std::memory_order_relaxed);
    const int n = threads();
    const std::uint64_t seen = generation_.load(std::memory_order_relaxed);
    workers_.reserve(static_cast<std::size_t>(n - 1));
    for (int slot = 1; slot < n; ++slot) workers_.emplace_back([this, slot, seen] { worker(slot, seen); });
  }

  void stop_workers() {
    if (workers_.empty()) return;
    {
      std::lock_guard lock(mutex_);
      stop_.store(true, std::memory_order_release);
    }
    wake_.notify_all();
    for (auto& t : workers_) t.join();
    workers_.clear();
  }

  std::atomic<int> threads_;
  std::mutex dispatch_;  // one loop at a time; held by the running loop's caller
  std::vector<std::thread> workers_;

  std::mutex mutex_;  // guards publishing a job, sleeping and waking
  std::condition_variable wake_;
  std::condition_variable done_;
  std::atomic<std::uint64_t> generation_{0};
  std::atomic<bool> stop_{false};
  const detail::ParallelJob* job_ = nullptr;
  std::atomic<std::size_t> next_{0};
  // The current job: kOpen while workers may still join it, plus the number
  // of workers in it.
  static constexpr std::uint64_t kOpen = std::uint64_t{1} << 63;
  std::atomic<std::uint64_t> state_{0};
  std::exception_ptr error_;  // guarded by mutex_ while workers run
};

Pool& pool() {
  static Pool p;
  return p;
}

}  // namespace

void set_threads(int threads) { pool().set_threads(threads); }
int threads() { return pool().threads(); }

namespace detail {
void run_parallel(const ParallelJob& job) { pool().run(job); }
}  // namespace detail

}  // namespace nuvec::lm::kernels
