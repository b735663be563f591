// `nuvec profile`'s results: one record per phase (each measured in its own
// process, which prints it as JSON), the table, and the cross-check of
// peak_with_mapped against the operating system's peak resident size.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "nuvec/memory_stats.h"

namespace nuvec::tool {

struct PhaseResult {
  std::string phase;  // "load", "prefill", "decode"
  double seconds = 0;
  std::uint64_t tokens = 0;  // prompt tokens (prefill), decode steps (decode), 0 (load)
  MemoryStats stats;         // at the end of the phase; peaks since its start
  std::uint64_t system_allocations = 0;         // made during the phase
  std::uint64_t steady_system_allocations = 0;  // decode: made after its first step
  // The OS: VmRSS before the model was loaded (the program, its libraries,
  // its heap), the peak resident size, and whether that peak was reset at
  // the phase's start (else it covers the process's whole life).
  std::uint64_t baseline_rss = 0;
  std::uint64_t vm_hwm = 0;
  bool hwm_reset = false;
  // Private resident memory the phase added (smaps_rollup).
  std::int64_t private_clean_added = 0;
  std::int64_t private_dirty_added = 0;
  std::int64_t anonymous_added = 0;
  // The floor: what the phase cannot do without.
  std::uint64_t floor_weights = 0;       // the checkpoint as held: mapped (+ read buffers)
  std::uint64_t floor_kv_cache = 0;      // prefill, decode
  std::uint64_t floor_intermediate = 0;  // the largest single activation buffer
  std::string intermediate_name;
  // decode: the bytes of weights one step reads, as the loaded model holds
  // them (lm::Model::weight_bytes_per_token: every layer's tensors, the
  // final norm and the LM head at their stored size, quantized blocks
  // included; the embedding table only at one row, so not counted); 0 for
  // the other phases.
  std::uint64_t weight_bytes_per_token = 0;
  // Where the phase ran ("cpu", "cuda:0"); `stats` are that device's. On a
  // GPU, NVML's figures (nvml_memory.h): this process's GPU memory at the
  // end of the phase, and the CUDA context's own, read once the context was
  // made and before nuvec allocated anything; 0 when NVML could not say
  // (nvml_note says why).
  std::string device = "cpu";
  std::uint64_t nvml_process_bytes = 0;
  std::uint64_t nvml_context_bytes = 0;
  std::string nvml_note;
  // On a GPU, the untimed pass of the phase run before the timed one (the
  // first use of a kernel loads its module, of a product shape plans it in
  // cuBLASLt: process-wide costs paid once, which llama-bench and PyTorch
  // benchmarks leave out the same way); 0 where there is none.
  double warmup_seconds = 0;
  // decode: how its steps were queued (CUDA graphs or not), empty on a CPU.
  std::string decode_launch_note;

  bool on_gpu() const { return device != "cpu"; }
  std::uint64_t floor() const { return floor_weights + floor_kv_cache + floor_intermediate; }
  double ratio() const;  // peak_with_mapped / floor
  double tokens_per_second() const;
  // weight_bytes_per_token x tokens/s: the bytes of weights read per second.
  double weight_bytes_per_second() const;
};

// The machine's read bandwidth that decode is set against: measured by
// `nuvec profile` in its own process before the phases, at the phases'
// thread count (lm::kernels::measure_read_bandwidth); bytes_per_second 0
// when not measured.
struct ReadBandwidthMeasure {
  double bytes_per_second = 0;
  int threads = 0;
  std::uint64_t bytes = 0;  // summed per pass
  int passes = 0;
  std::string pages;  // "normal" (4 KiB) or "huge"
};

// A decode phase's weight bytes per second / the read bandwidth (0 when
// either is unknown).
double fraction_of_bandwidth(const PhaseResult& decode, const ReadBandwidthMeasure& bandwidth);

// The JSON of the decode row's bandwidth figures.
nlohmann::ordered_json decode_bandwidth_json(const PhaseResult& decode, const ReadBandwidthMeasure& bandwidth);

// "53.4 ms" below a second, "1.10 s" from there.
std::string format_seconds(double seconds);
nlohmann::ordered_json to_json(const PhaseResult& r);
PhaseResult phase_from_json(const nlohmann::json& j);  // InvalidArgument if malformed

// How far VmHWM may stray from baseline_rss + peak_with_mapped before the
// report says so: 5% of that, or 8 MiB, whichever is more.
std::uint64_t os_tolerance(const PhaseResult& r);

// One line per phase where the OS disagrees beyond the tolerance, saying
// by how much and the likely reason. CPU phases only: a GPU's memory is not
// in VmHWM (gpu_memory_notes compares it with NVML instead).
std::vector<std::string> os_disagreements(const std::vector<PhaseResult>& phases);

// For phases on a GPU: NVML's figure beside peak_with_mapped, what the
// CUDA context alone takes, and why the two differ (the context, nuvec's
// cache, what is committed beyond live buffers); one line per phase, and
// one for NVML's absence.
std::vector<std::string> gpu_memory_notes(const std::vector<PhaseResult>& phases);

// The table: phase, time, tokens/s, active, peak, mapped, peak_with_mapped,
// VmHWM (on a GPU: NVML's figure for the process), floor, peak_with_mapped / floor, and for decode the weight bytes
// read per second and their fraction of `bandwidth` ("-" in other rows).
std::string profile_table(const std::vector<PhaseResult>& phases, const ReadBandwidthMeasure& bandwidth = {});

}  // namespace nuvec::tool
