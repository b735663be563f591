// `nuvec inspect FILE...`: the tensors of checkpoints (safetensors, sharded
// or not; npy; GGUF) and what loading each would cost in each statistic.
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "checkpoint_summary.h"
#include "command.h"
#include "nuvec/memory.h"

namespace nuvec::tool {
namespace {

struct InspectOptions {
  std::vector<std::string> paths;
  bool json = false;
  std::size_t max_tensors = 0;  // 0: all
};

void print_text(const CheckpointSummary& s, std::size_t max_tensors) {
  std::size_t aligned = 0;
  for (const TensorSummary& t : s.tensors) aligned += t.aligned;
  fmt::print("{}: {}, {} tensors, {} ({} aligned)\n", s.path.string(), s.format, s.tensors.size(),
             format_bytes(s.file_bytes), aligned == s.tensors.size() ? "all" : fmt::format("{} of them", aligned));
  std::size_t name_width = 4;
  for (const TensorSummary& t : s.tensors) name_width = std::max(name_width, t.name.size());
  fmt::print("  {:<{}}  {:<8}  {:<20}  {:>10}  {:>12}  {}\n", "name", name_width, "dtype", "shape", "bytes", "offset",
             "aligned");
  const std::size_t shown = max_tensors == 0 ? s.tensors.size() : std::min(max_tensors, s.tensors.size());
  for (std::size_t i = 0; i < shown; ++i) {
    const TensorSummary& t = s.tensors[i];
    fmt::print("  {:<{}}  {:<8}  {:<20}  {:>10}  {:>12}  {}\n", t.name, name_width, t.dtype,
               fmt::format("[{}]", fmt::join(t.shape, ", ")), format_bytes(t.bytes), t.file_offset,
               t.aligned ? "yes" : "no");
  }
  if (shown < s.tensors.size()) fmt::print("  ... {} more (--tensors 0 shows all)\n", s.tensors.size() - shown);
  fmt::print("  loading it ({}) would add: mapped {}, active {}, peak_with_mapped {} — {}\n", s.load_path,
             format_bytes(s.mapped), format_bytes(s.active), format_bytes(s.peak_with_mapped), s.how_measured);
  if (!s.model_note.empty()) fmt::print("  {}\n", s.model_note);
  fmt::print("\n");
}

nlohmann::ordered_json to_json(const CheckpointSummary& s) {
  nlohmann::ordered_json tensors = nlohmann::ordered_json::array();
  for (const TensorSummary& t : s.tensors) {
    tensors.push_back({{"name", t.name}, {"dtype", t.dtype}, {"shape", t.shape}, {"bytes", t.bytes},
                       {"offset", t.file_offset}, {"aligned", t.aligned}});
  }
  return {{"path", s.path.string()},
          {"format", s.format},
          {"file_bytes", s.file_bytes},
          {"load_path", s.load_path},
          {"adds", {{"mapped", s.mapped}, {"active", s.active}, {"peak_with_mapped", s.peak_with_mapped}}},
          {"tensors", tensors}};
}

}  // namespace

Command add_inspect_command(CLI::App& parent) {
  auto options = std::make_shared<InspectOptions>();
  CLI::App* app = parent.add_subcommand("inspect", "List a checkpoint's tensors and what loading it would cost");
  app->footer(
      "FILE is a .safetensors file, a directory holding model.safetensors or a sharded\n"
      "model.safetensors.index.json, such an index, an .npy file or a .gguf file.\n"
      "For each tensor: dtype, shape, bytes, file offset, and whether it is aligned to\n"
      "its element size (usable in place from a mapping). Then what a load would add\n"
      "to `mapped`, `active` and `peak_with_mapped`: aligned files are mapped (zero\n"
      "copy), unaligned ones read into one buffer (`nuvec align` fixes that).");
  app->add_option("FILE", options->paths, "checkpoint files or directories")->required()->check(CLI::ExistingPath);
  app->add_flag("--json", options->json, "print a JSON array, one object per file");
  app->add_option("--tensors", options->max_tensors, "list at most this many tensors per file (0: all)")
      ->default_val(0);
  return {app, [options] {
            nlohmann::ordered_json all = nlohmann::ordered_json::array();
            for (const std::string& path : options->paths) {
              const CheckpointSummary summary = summarise_checkpoint(path);
              if (options->json) {
                all.push_back(to_json(summary));
              } else {
                print_text(summary, options->max_tensors);
              }
            }
            if (options->json) fmt::print("{}\n", all.dump(2));
            return 0;
          }};
}

}  // namespace nuvec::tool
