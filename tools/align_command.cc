// `nuvec align PATH [OUT] [--dry-run]`: rewrites a safetensors checkpoint (a
// file, a model directory or a sharded index) in the reference writer's
// layout, so that nuvec maps it and every other reader sees exactly its
// tensors.
#include <filesystem>
#include <memory>
#include <string>

#include <fmt/format.h>

#include "command.h"
#include "nuvec/error.h"
#include "nuvec/io/safetensors.h"
#include "nuvec/memory.h"

namespace nuvec::tool {
namespace {

std::string cost(std::uint64_t file_bytes, io::LoadPath path, const io::Footprint& f) {
  const std::string how = path == io::LoadPath::read     ? "loading reads a copy"
                          : path == io::LoadPath::mapped ? "loading maps it"
                                                         : "loading takes nothing";
  return fmt::format("{}, {}: mapped {}, active {}", format_bytes(file_bytes), how, format_bytes(f.mapped),
                     format_bytes(f.active));
}

void print_file(const io::FileAlignment& f, bool dry_run, bool is_index) {
  if (!f.changes()) {
    fmt::print("{}: left as it is{}\n", f.path.string(),
               is_index ? "" : " (it loads mapped, and other readers see exactly its tensors)");
    return;
  }
  fmt::print("{}: {}\n", f.path.string(), dry_run ? "would be rewritten" : "rewritten");
  for (const std::string& why : f.reasons) fmt::print("  why:    {}\n", why);
  if (is_index) {
    fmt::print("  before: {}\n  after:  {}\n", format_bytes(f.bytes_before), format_bytes(f.bytes_after));
    return;
  }
  fmt::print("  before: {}\n", cost(f.bytes_before, f.load_before, f.before));
  fmt::print("  after:  {}\n", cost(f.bytes_after, f.load_after, f.after));
}

}  // namespace

Command add_align_command(CLI::App& parent) {
  auto path = std::make_shared<std::string>();
  auto out = std::make_shared<std::string>();
  auto dry_run = std::make_shared<bool>(false);
  CLI::App* app =
      parent.add_subcommand("align", "Rewrite a safetensors checkpoint in the layout every reader loads as it is");
  app->footer(
      "PATH is a .safetensors file, a model directory (model.safetensors or\n"
      "model.safetensors.index.json) or a sharded index. Each file that needs it is\n"
      "rewritten in place in the reference writer's layout (Python's save_file):\n"
      "tensors ordered so each starts at a multiple of its element size, the header\n"
      "padded with spaces, no gaps, no extra tensors. Files need it when loading would\n"
      "read a copy (tensors not aligned: MLX writes unpadded headers) or when they\n"
      "declare __nuvec_padding_* tensors (files nuvec wrote before), which other\n"
      "readers see as tensors. Every file is checked before anything is written; each\n"
      "is written to a temporary file, flushed and renamed over the original, so a\n"
      "failure leaves it as it was. The index is rewritten only if it lists padding\n"
      "tensors. --dry-run says which files would change and what loading them would\n"
      "cost before and after. With OUT, the file PATH is written to OUT instead.");
  app->add_option("PATH", *path, "the checkpoint: a .safetensors file, a directory, or an index")
      ->required()
      ->check(CLI::ExistingPath);
  app->add_option("OUT", *out, "write the aligned copy of the file PATH here instead of in place");
  app->add_flag("--dry-run,-n", *dry_run, "say what would change and what loading would cost; write nothing");
  return {app, [path, out, dry_run] {
            if (!out->empty() && std::filesystem::is_directory(*path)) {
              throw InvalidArgument(fmt::format("{} is a directory: a checkpoint is aligned in place (omit OUT), "
                                                "or copy it first",
                                                *path));
            }
            if (!out->empty() && !*dry_run) {
              const io::FileAlignment before = io::align_checkpoint(*path, {.dry_run = true}).files.at(0);
              io::align_safetensors(*path, *out);
              const io::FileAlignment after = io::align_checkpoint(*out, {.dry_run = true}).files.at(0);
              fmt::print("{} -> {}\n", *path, *out);
              fmt::print("  before: {}\n", cost(before.bytes_before, before.load_before, before.before));
              fmt::print("  after:  {}\n", cost(after.bytes_before, after.load_before, after.before));
              return 0;
            }
            const io::CheckpointAlignment result = io::align_checkpoint(*path, {.dry_run = *dry_run});
            for (const io::FileAlignment& f : result.files) print_file(f, *dry_run, false);
            if (result.index) print_file(*result.index, *dry_run, true);
            const std::size_t total = result.files.size() + (result.index ? 1 : 0);
            fmt::print("{} of {} files {}\n", result.changed_files(), total,
                       *dry_run ? "would be rewritten (dry run: nothing written)" : "rewritten");
            return 0;
          }};
}

}  // namespace nuvec::tool
