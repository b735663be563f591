// The mapping, event by event (docs/trace-format.md has it as a table):
// a buffer's id is its address, so a block keeps its address in the
// snapshot; a miss makes a segment of the block it took, a release frees
// the released range as one; file mappings are segments of their own, at
// their id. The end state's segments are the runs of adjacent live and
// cached bytes. A trace converted from PyTorch's snapshot has no addresses:
// see ids_are_addresses below. The segments shape (PyTorch 1.13's) is that
// end state alone, each live block's tag also in its `history`, where 1.13
// looks for frames.
#include "nuvec/trace/torch_snapshot.h"

#include <iterator>
#include <map>
#include <optional>
#include <string_view>
#include <vector>

#include "trace/pickle_writer.h"

namespace nuvec {
namespace {

using detail::PickleWriter;

struct Held {
  std::uint64_t size = 0;
  std::uint64_t requested = 0;
  std::int64_t stream = 0;
  std::string tag;
  std::string file;  // a mapping's path; empty for a buffer
};

Held held(std::uint64_t size, std::uint64_t requested = 0, std::int64_t stream = 0, std::string tag = {},
          std::string file = {}) {
  return {size, requested, stream, std::move(tag), std::move(file)};
}

// Free (cached) byte ranges by start: non-overlapping, not merged.
class Ranges {
 public:
  void add(std::uint64_t start, std::uint64_t size) {
    remove(start, size);  // a range reported twice counts once
    if (size != 0) ranges_[start] = size;
  }
  void remove(std::uint64_t start, std::uint64_t size) {
    const std::uint64_t end = start + size;
    auto it = ranges_.upper_bound(start);
    if (it != ranges_.begin()) --it;
    while (it != ranges_.end() && it->first < end) {
      const std::uint64_t s = it->first, e = it->first + it->second;
      if (e <= start) {
        ++it;
        continue;
      }
      it = ranges_.erase(it);
      if (s < start) ranges_[s] = start - s;
      if (e > end) ranges_[end] = e - end;
    }
  }
  const std::map<std::uint64_t, std::uint64_t>& all() const { return ranges_; }

 private:
  std::map<std::uint64_t, std::uint64_t> ranges_;
};

int device_index(std::string_view device) {
  if (device.starts_with("cuda:")) {
    int n = 0;
    for (char c : device.substr(5)) {
      if (c < '0' || c > '9' || n > 1000) return 0;
      n = n * 10 + (c - '0');
    }
    return n;
  }
  return 0;
}

class Writer {
 public:
  explicit Writer(std::string& out) : p_(out) {}
  PickleWriter& p() { return p_; }

  void key(std::string_view k) { p_.string(k); }
  void item(std::string_view k, std::string_view v) { key(k), p_.string(v); }
  void item(std::string_view k, std::uint64_t v) { key(k), p_.unsigned_integer(v); }
  void item_signed(std::string_view k, std::int64_t v) { key(k), p_.integer(v); }

  // PyTorch's frames are a stack of {filename, line, name}: the tag is one
  // frame ("tag:0:kv_cache" in its viewers), a mapped file another.
  void frames(const std::string& tag, const std::string& file) {
    key("frames");
    frame_list(tag, file);
  }
  void frame_list(const std::string& tag, const std::string& file) {
    p_.begin_list();
    if (!file.empty()) frame(file, "mapped file");
    if (!tag.empty()) frame("tag", tag);
    p_.end_list();
  }

 private:
  void frame(std::string_view filename, std::string_view name) {
    p_.begin_dict();
    item("filename", filename);
    item("line", std::uint64_t{0});
    item("name", name);
    p_.end_dict();
  }
  PickleWriter p_;
};

}  // namespace

TorchSnapshotSummary torch_snapshot(const Trace& trace, std::string& out, TorchSnapshotShape shape) {
  const bool with_trace = shape == TorchSnapshotShape::snapshot;
  TorchSnapshotSummary summary;
  Writer w(out);
  PickleWriter& p = w.p();
  const int device = device_index(trace.header.device);
  std::map<std::uint64_t, Held> live;  // buffers and mappings by id
  Ranges cached;
  struct Mark {
    std::uint64_t time_us;
    std::string name;
  };
  std::vector<Mark> marks;
  // A converted trace's ids (tools/trace_from_torch.py) number the allocations
  // 1, 2, ...: they are not addresses, and nothing in it says where PyTorch's
  // cache kept the bytes freed. There each buffer is a segment of its own,
  // made at its allocate and gone at its free, at an address of its own (its
  // id's rank shifted past any block's size: a trace file holds at most 2^21
  // events, so the ranks stay far below 2^24), and the end state holds no
  // cache.
  const bool ids_are_addresses = trace.header.source == "nuvec";
  summary.synthetic_addresses = !ids_are_addresses;
  std::map<std::uint64_t, std::uint64_t> rank_address;
  const auto address = [&](std::uint64_t id) {
    if (ids_are_addresses) return id;
    const std::uint64_t next = (rank_address.size() + 1) << 40;
    return rank_address.try_emplace(id, next).first->second;
  };

  const auto entry = [&](std::string_view action, std::uint64_t addr, const Held& h, std::uint64_t t_us) {
    if (!with_trace) return;
    p.begin_dict();
    w.item("action", action);
    w.item("addr", addr);
    w.item("size", h.size);
    w.item_signed("stream", h.stream);
    w.item("time_us", t_us);
    w.frames(h.tag, h.file);
    p.end_dict();
    ++summary.entries;
  };

  if (with_trace) {
    p.begin_dict();
    w.key("device_traces");
    p.begin_list();
    for (int d = 0; d < device; ++d) {  // the devices before this one recorded nothing here
      p.begin_list();
      p.end_list();
    }
    p.begin_list();
  }
  for (const TraceEvent& e : trace.events) {
    const std::uint64_t t_us = e.t_ns / 1000;
    switch (e.kind) {
      case TraceEventKind::allocate: {
        const std::uint64_t a = address(e.id);
        Held h = held(e.size, e.requested, e.stream, e.tag);
        if (!e.hit || !ids_are_addresses) {
          entry("segment_alloc", a, h, t_us);
        } else {
          cached.remove(a, e.size);
        }
        entry("alloc", a, h, t_us);
        live[a] = std::move(h);
        break;
      }
      case TraceEventKind::free: {
        const std::uint64_t a = address(e.id);
        auto it = live.find(a);
        Held h = it != live.end() ? it->second : held(e.size, 0, e.stream);
        h.size = e.size;
        entry("free_requested", a, h, t_us);
        entry("free_completed", a, h, t_us);
        if (it != live.end()) live.erase(it);
        if (ids_are_addresses) {
          cached.add(a, e.size);
        } else {
          entry("segment_free", a, h, t_us);
        }
        break;
      }
      case TraceEventKind::release:
        if (!ids_are_addresses) break;  // an extent of PyTorch's cache, which is not in the snapshot
        entry("segment_free", e.id, held(e.size, 0, 0, e.tag), t_us);
        cached.remove(e.id, e.size);
        break;
      case TraceEventKind::map: {
        const std::uint64_t a = address(e.id);
        Held h = held(e.size, e.size, 0, e.tag, e.label);
        entry("segment_alloc", a, h, t_us);
        entry("alloc", a, h, t_us);
        live[a] = std::move(h);
        break;
      }
      case TraceEventKind::unmap: {
        const std::uint64_t a = address(e.id);
        auto it = live.find(a);
        Held h = it != live.end() ? it->second : held(e.size);
        entry("free_requested", a, h, t_us);
        entry("free_completed", a, h, t_us);
        entry("segment_free", a, h, t_us);
        if (it != live.end()) live.erase(it);
        break;
      }
      case TraceEventKind::refuse: {
        if (!with_trace) break;
        // device_free: what the memory limit still allowed.
        std::uint64_t room = 0;
        if (e.stats && e.stats->memory_limit > e.stats->active + e.stats->mapped) {
          room = e.stats->memory_limit - e.stats->active - e.stats->mapped;
        }
        p.begin_dict();
        w.item("action", "oom");
        w.item("size", e.requested);
        w.item("device_free", room);
        w.item_signed("stream", 0);
        w.item("time_us", t_us);
        w.frames(e.tag, {});
        p.end_dict();
        ++summary.entries;
        break;
      }
      case TraceEventKind::mark:
        marks.push_back({t_us, e.label});
        break;
      default:  // limits, wiring, reset_peak, clear_cache: no PyTorch counterpart
        break;
    }
  }
  if (with_trace) {
    p.end_list();
    p.end_list();
  }

  // The end state: runs of adjacent live buffers and cached ranges are
  // segments; each mapping is one.
  struct Block {
    std::uint64_t address, size, requested;
    bool active;
    const Held* held;
  };
  std::map<std::uint64_t, Block> blocks;
  for (const auto& [id, h] : live) {
    if (h.file.empty()) blocks[id] = {id, h.size, h.requested, true, &h};
  }
  for (const auto& [start, size] : cached.all()) {
    if (!blocks.contains(start)) blocks[start] = {start, size, 0, false, nullptr};
  }
  const auto block_dict = [&](const Block& b) {
    p.begin_dict();
    w.item("address", b.address);
    w.item("size", b.size);
    w.item("requested_size", b.active ? b.requested : 0);
    w.item("state", b.active ? "active_allocated" : "inactive");
    static const std::string none;
    const std::string& tag = b.held != nullptr ? b.held->tag : none;
    const std::string& file = b.held != nullptr ? b.held->file : none;
    w.frames(tag, file);
    if (!with_trace && b.active) {  // 1.13's viewer reads a block's frames from its history only
      w.key("history");
      p.begin_list();
      p.begin_dict();
      w.item("addr", b.address);
      w.item("real_size", b.requested);
      w.key("frames");
      w.frame_list(tag, file);
      p.end_dict();
      p.end_list();
    }
    p.end_dict();
    (b.active ? summary.active : summary.inactive) += b.size;
  };
  const auto segment = [&](const std::vector<Block>& run) {
    std::uint64_t total = 0, allocated = 0, requested = 0;
    for (const Block& b : run) {
      total += b.size;
      if (b.active) allocated += b.size, requested += b.requested;
    }
    p.begin_dict();
    w.item_signed("device", device);
    w.item("address", run.front().address);
    w.item("total_size", total);
    w.item("allocated_size", allocated);
    w.item("active_size", allocated);
    w.item("requested_size", requested);
    w.item_signed("stream", run.front().held != nullptr ? run.front().held->stream : 0);
    w.item("segment_type", "large");
    w.key("is_expandable");
    p.boolean(false);
    w.key("blocks");
    p.begin_list();
    for (const Block& b : run) block_dict(b);
    p.end_list();
    p.end_dict();
    ++summary.segments;
  };
  if (with_trace) w.key("segments");
  p.begin_list();
  std::vector<Block> run;
  for (const auto& [address, b] : blocks) {
    if (!run.empty() && run.back().address + run.back().size != address) {
      segment(run);
      run.clear();
    }
    run.push_back(b);
  }
  if (!run.empty()) segment(run);
  for (const auto& [id, h] : live) {
    if (!h.file.empty()) segment({Block{id, h.size, h.requested, true, &h}});
  }
  p.end_list();
  if (!with_trace) {
    p.finish();
    return summary;
  }

  // Phases, as the START stages of PyTorch's record_function annotations.
  w.key("external_annotations");
  p.begin_list();
  for (const Mark& m : marks) {
    p.begin_dict();
    w.item_signed("device", device);
    w.item("stage", "START");
    w.item("name", m.name);
    w.item("time_us", m.time_us);
    p.end_dict();
  }
  p.end_list();
  p.end_dict();
  p.finish();
  return summary;
}

}  // namespace nuvec
