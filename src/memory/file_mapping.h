// FileMapping: a mapping the allocator made of a file — a Mapping to its
// users, a Resident to the residency order. It maps its regions through the
// backend's FileMapper and asks its owner (the Allocator) to unmap it and
// uncount it when its last user goes.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <span>
#include <vector>

#include "memory/backend.h"
#include "memory/resident.h"
#include "nuvec/mapped_file.h"

namespace nuvec::detail {

class FileMapping;

class MappingOwner {
 public:
  virtual void unmap(FileMapping& mapping) noexcept = 0;

 protected:
  ~MappingOwner() = default;
};

class FileMapping final : public Mapping, public Resident {
 public:
  // The regions of `file` to map: the whole file, or `ranges` widened to
  // pages, sorted, overlapping or touching ones merged. InvalidArgument for
  // a range outside the file. Nothing is mapped yet.
  FileMapping(MappingOwner& owner, const OpenFile& file, std::span<const FileRange> ranges, bool whole_file);
  ~FileMapping() override;

  // Maps every region; on failure unmaps what was mapped and raises IoError.
  void map_regions(FileMapper& files, const OpenFile& file);
  void unmap_regions(FileMapper& files) noexcept;
  // Counted by its owner from now until its last user goes.
  void set_live() { live_ = true; }

  int wire(Wiring& wiring) override;
  void unwire(Wiring& wiring) noexcept override;
  bool is_mapping() const override { return true; }
  std::uint64_t trace_id() const override { return reinterpret_cast<std::uintptr_t>(this); }

 private:
  MappingOwner& owner_;
  bool live_ = false;
};

}  // namespace nuvec::detail
