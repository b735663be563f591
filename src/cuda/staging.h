// Page-locked host memory for staging copies to a GPU: one region of
// anonymous memory (huge pages where the kernel gives them), carved into
// slots. Its pages are faulted in (zeroed by the kernel) by whichever
// threads will use them, in parallel, and the region is then page-locked
// with one cudaHostRegister: on the H200 machine, registering the slots one
// by one from the upload's threads, while the calling thread was making
// device buffers, kept the first copy waiting about 10 ms (the driver takes
// such calls in turn); docs/cuda.md, "Uploads". Slots may be filled before
// the region is locked; they may only be copied from after.
#pragma once

#include <cstddef>
#include <string>

namespace nuvec::cuda {

class StagingMemory {
 public:
  StagingMemory() = default;
  StagingMemory(const StagingMemory&) = delete;
  StagingMemory& operator=(const StagingMemory&) = delete;
  ~StagingMemory();

  // Reserves `bytes` of address space, aligned for huge pages and advised to
  // take them (`huge_pages`), or not; nothing is touched or locked yet.
  // False, with the reason in `error`, if the system refused (nothing is
  // then held).
  bool reserve(std::size_t bytes, std::string& error, bool huge_pages = true);
  // Faults in [offset, offset + length) (zeroed pages). Safe from several
  // threads on disjoint ranges.
  void populate(std::size_t offset, std::size_t length);
  // Page-locks the whole region (cudaHostRegister); false, with the reason
  // in `error`, if the driver refused (the region stays usable as ordinary
  // memory, and is still freed with this object).
  bool lock(std::string& error);
  // Instead of reserve/populate/lock: `bytes` of page-locked memory from the
  // driver (cudaHostAlloc), faulted in and locked as it is made. False, with
  // the reason in `error`, if the driver refused (nothing is then held).
  bool allocate_locked(std::size_t bytes, std::string& error);

  std::byte* data() const { return data_; }
  std::size_t size() const { return size_; }
  bool locked() const { return locked_; }

 private:
  void* base_ = nullptr;  // the mapping, huge-page alignment included
  std::size_t mapped_ = 0;
  std::byte* data_ = nullptr;
  std::size_t size_ = 0;
  bool locked_ = false;
  bool from_driver_ = false;  // allocate_locked: freed with cudaFreeHost
};

}  // namespace nuvec::cuda
