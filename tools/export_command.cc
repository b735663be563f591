// `nuvec export --format torch-snapshot TRACE -o snapshot.pickle`: a trace
// as a PyTorch memory snapshot (nuvec/trace/torch_snapshot.h), for
// `python3 -m torch.cuda._memory_viz` and pytorch.org/memory_viz.
#include <cerrno>
#include <fstream>
#include <memory>
#include <string>

#include <fmt/format.h>

#include "command.h"
#include "nuvec/error.h"
#include "nuvec/memory.h"
#include "nuvec/trace.h"
#include "nuvec/trace/torch_snapshot.h"

namespace nuvec::tool {
namespace {

struct ExportOptions {
  std::string format;
  std::string trace;
  std::string output;
};

}  // namespace

Command add_export_command(CLI::App& parent) {
  auto options = std::make_shared<ExportOptions>();
  CLI::App* app = parent.add_subcommand("export", "Write a trace in another tool's format");
  app->footer(
      "torch-snapshot: the pickle torch.cuda.memory._dump_snapshot() writes. Open it with\n"
      "  python3 -m torch.cuda._memory_viz trace_plot snapshot.pickle -o out.html\n"
      "or at pytorch.org/memory_viz. Buffers keep their addresses (a trace's ids); tags\n"
      "become each block's frame (tag:0:kv_cache), marks the snapshot's annotations.\n"
      "docs/trace-format.md says what becomes what.");
  app->add_option("--format", options->format, "the format to write: torch-snapshot")
      ->required()
      ->check(CLI::IsMember({"torch-snapshot"}));
  app->add_option("TRACE", options->trace, "a nuvec trace (.jsonl or .jsonl.gz)")->required();
  app->add_option("-o,--output", options->output, "the file to write (snapshot.pickle)")->required();
  return {app, [options] {
            const Trace trace = read_trace(options->trace);
            std::string pickle;
            const TorchSnapshotSummary s = torch_snapshot(trace, pickle);
            std::ofstream out(options->output, std::ios::binary | std::ios::trunc);
            out.write(pickle.data(), static_cast<std::streamsize>(pickle.size()));
            out.close();
            if (!out) {
              throw IoError(fmt::format("cannot write the snapshot to {}", options->output), options->output,
                            errno);
            }
            fmt::print("wrote {}: {} trace entries; at the end {} segments: {} live (buffers and mapped files), {} cached\n",
                       options->output, s.entries, s.segments, format_bytes(s.active), format_bytes(s.inactive));
            if (trace.header.dropped != 0) {
              fmt::print("note: the trace dropped its first {} events (a full ring), so the snapshot starts "
                         "late: blocks made before are missing from its segments\n",
                         trace.header.dropped);
            }
            return 0;
          }};
}

}  // namespace nuvec::tool
