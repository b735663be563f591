// `nuvec export --format torch-snapshot TRACE -o snapshot.pickle`: a trace
// as a PyTorch memory snapshot (nuvec/trace/torch_snapshot.h), for
// `python3 -m torch.cuda._memory_viz` and pytorch.org/memory_viz;
// `--format torch-segments`: its end state as the list of segments, the only
// input PyTorch 1.13's _memory_viz reads.
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
      "torch-snapshot: the pickle torch.cuda.memory._dump_snapshot() writes (PyTorch 2.x).\n"
      "Open it with\n"
      "  python3 -m torch.cuda._memory_viz trace_plot snapshot.pickle -o out.html\n"
      "(or stats, trace, segments, memory, segment_plot) or at pytorch.org/memory_viz.\n"
      "torch-segments: the end state alone, as the list torch.cuda.memory_snapshot()\n"
      "returns: PyTorch 1.13's _memory_viz (Debian 12's python3-torch) reads only that\n"
      "  python3 -m torch.cuda._memory_viz stats segments.pickle\n"
      "(or segments, memory, compare); 2.x reads its stats, segments and memory too.\n"
      "Buffers keep their addresses (a trace's ids); tags become each block's frame\n"
      "(tag:0:kv_cache), marks the snapshot's annotations. docs/trace-format.md says\n"
      "what becomes what.");
  app->add_option("--format", options->format, "the format to write: torch-snapshot or torch-segments")
      ->required()
      ->check(CLI::IsMember({"torch-snapshot", "torch-segments"}));
  app->add_option("TRACE", options->trace, "a nuvec trace (.jsonl or .jsonl.gz)")->required();
  app->add_option("-o,--output", options->output, "the file to write (snapshot.pickle)")->required();
  return {app, [options] {
            const Trace trace = read_trace(options->trace);
            std::string pickle;
            const bool segments_only = options->format == "torch-segments";
            const TorchSnapshotSummary s =
                torch_snapshot(trace, pickle, segments_only ? TorchSnapshotShape::segments : TorchSnapshotShape::snapshot);
            std::ofstream out(options->output, std::ios::binary | std::ios::trunc);
            out.write(pickle.data(), static_cast<std::streamsize>(pickle.size()));
            out.close();
            if (!out) {
              throw IoError(fmt::format("cannot write the snapshot to {}", options->output), options->output,
                            errno);
            }
            if (segments_only) {
              fmt::print("wrote {}: the end state, {} segment{}: {} live (buffers and mapped files), {} cached\n",
                         options->output, s.segments, s.segments == 1 ? "" : "s", format_bytes(s.active), format_bytes(s.inactive));
            } else {
              fmt::print("wrote {}: {} trace entr{}; at the end {} segment{}: {} live (buffers and mapped files), {} cached\n"
                         "(PyTorch 2.x reads it; 1.13's _memory_viz reads only --format torch-segments)\n",
                         options->output, s.entries, s.entries == 1 ? "y" : "ies", s.segments, s.segments == 1 ? "" : "s", format_bytes(s.active), format_bytes(s.inactive));
            }
            if (s.synthetic_addresses) {
              fmt::print("note: a converted trace (source {}): its ids are not addresses and it does not say "
                         "where PyTorch's cache kept freed bytes, so each buffer is a segment of its own, at an "
                         "address the export gave it, and no cache is in the snapshot\n",
                         trace.header.source);
            }
            if (trace.header.dropped != 0) {
              fmt::print("note: the trace dropped its first {} events (a full ring), so the snapshot starts "
                         "late: blocks made before are missing from its segments\n",
                         trace.header.dropped);
            }
            return 0;
          }};
}

}  // namespace nuvec::tool
