#include "io/parallel_read.h"

#include <algorithm>
#include <atomic>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace nuvec::io {

void read_in_parallel(const InputFile& file, std::span<const ReadJob> jobs, std::size_t piece_bytes,
                      unsigned max_threads) {
  std::vector<ReadJob> pieces;
  for (const ReadJob& job : jobs) {
    for (std::size_t done = 0; done < job.out.size(); done += piece_bytes) {
      const std::size_t n = std::min(piece_bytes, job.out.size() - done);
      pieces.push_back({job.file_offset + done, job.out.subspan(done, n), job.what});
    }
  }
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  const auto threads = static_cast<unsigned>(std::min<std::size_t>({pieces.size(), max_threads, cores}));

  std::atomic<std::size_t> next{0};
  std::atomic<bool> failed{false};
  std::exception_ptr first_error;
  std::mutex error_mutex;
  const auto work = [&] {
    for (std::size_t i; !failed.load(std::memory_order_relaxed) && (i = next.fetch_add(1)) < pieces.size();) {
      try {
        file.read_exact(pieces[i].file_offset, pieces[i].out, pieces[i].what);
      } catch (...) {
        const std::lock_guard lock(error_mutex);
        if (!first_error) first_error = std::current_exception();
        failed = true;
      }
    }
  };
  if (threads <= 1) {
    work();
  } else {
    std::vector<std::jthread> pool;
    pool.reserve(threads - 1);
    for (unsigned t = 1; t < threads; ++t) pool.emplace_back(work);
    work();
  }  // the jthreads join here
  if (first_error) std::rethrow_exception(first_error);
}

}  // namespace nuvec::io
