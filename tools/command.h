// A subcommand of the `nuvec` tool. Each lives in its own file
// (<name>_command.cc): it declares its options on the parent app and returns
// what to run once the command line has been parsed, so that main() alone
// turns errors into "nuvec: error: ..." and an exit status.
#pragma once

#include <functional>

#include <CLI/CLI.hpp>

namespace nuvec::tool {

// The NUVEC_* variables, for the footer of every command's --help.
inline constexpr const char* kEnvironmentHelp =
    "Environment (read when a device is created):\n"
    "  NUVEC_MEMORY_LIMIT  hard limit on active + mapped bytes (default: physical memory)\n"
    "  NUVEC_CACHE_LIMIT   most bytes of freed buffers kept for reuse (default: the memory limit)\n"
    "  NUVEC_WIRED_LIMIT   most bytes kept resident with mlock (default: 0)\n"
    "  NUVEC_TRACE         record every device's event trace and write it to this path\n"
    "                      (a regular file it can write: checked when the device is created)\n"
    "  NUVEC_TRACE_EVENTS  the trace ring's size in events, 1 to 2097152 (default: 262144;\n"
    "                      the ring grows as events come, about 200 bytes each)\n"
    "  Sizes are written as 4096, 512MiB, 8GiB, 64K, 1.5GB (bytes without a unit are whole).";

struct Command {
  CLI::App* app = nullptr;   // the subcommand, owned by the parent app
  std::function<int()> run;  // returns the exit status; may throw
};

// `nuvec stats [--json]`: the process-wide CPU device's MemoryStats.
Command add_stats_command(CLI::App& parent);
// `nuvec demo [--dir DIR]`: a narrated tour of the allocator's policy.
Command add_demo_command(CLI::App& parent);
// `nuvec inspect FILE... [--json]`: checkpoints' tensors and load costs.
Command add_inspect_command(CLI::App& parent);
// `nuvec align PATH [OUT] [--dry-run]`: a safetensors checkpoint rewritten in the reference layout.
Command add_align_command(CLI::App& parent);
// `nuvec replay TRACE [--memory-limit N] [--verify] [--against malloc]`: a trace replayed.
Command add_replay_command(CLI::App& parent);
// `nuvec plot TRACE -o timeline.png`: the timeline picture (tools/plot_trace.py).
Command add_plot_command(CLI::App& parent);
// `nuvec export --format torch-snapshot|torch-segments TRACE -o snapshot.pickle`: a trace for PyTorch's viewers.
Command add_export_command(CLI::App& parent);
// `nuvec demo-model DIR`: the built-in random-weight Llama checkpoint.
Command add_demo_model_command(CLI::App& parent);
// `nuvec run MODEL --prompt-ids ... | --prompt-len N --max-new M`: generation.
Command add_run_command(CLI::App& parent);
// `nuvec tokenize MODEL_OR_TOKENIZER [--text T | --file F | --ids 1,2]`: ids of a text, text of ids.
Command add_tokenize_command(CLI::App& parent);
// `nuvec chat [MODEL] [--render MESSAGES.json]`: a conversation over the chat template.
Command add_chat_command(CLI::App& parent);
// `nuvec profile [MODEL]`: load, prefill and decode measured, each in a fresh process.
Command add_profile_command(CLI::App& parent);
// `nuvec profile-phase` (hidden): one phase of `nuvec profile`, as JSON.
Command add_profile_phase_command(CLI::App& parent);
// `nuvec roofline [--threads LIST]`: the memory read bandwidth per thread count.
Command add_roofline_command(CLI::App& parent);

}  // namespace nuvec::tool
