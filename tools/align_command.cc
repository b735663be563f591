// `nuvec align IN OUT`: rewrites a safetensors file so every tensor starts at
// a 256-byte boundary, so that loading it maps it instead of copying it.
#include <memory>
#include <string>

#include <fmt/format.h>

#include "checkpoint_summary.h"
#include "command.h"
#include "nuvec/io/safetensors.h"
#include "nuvec/memory.h"

namespace nuvec::tool {

Command add_align_command(CLI::App& parent) {
  auto in = std::make_shared<std::string>();
  auto out = std::make_shared<std::string>();
  CLI::App* app = parent.add_subcommand("align", "Rewrite a safetensors file with every tensor 256-byte aligned");
  app->footer(
      "Files whose tensors are not aligned to their element size (MLX writes unpadded\n"
      "headers) cannot be used in place from a mapping, so loading them reads a private\n"
      "copy. `align` rewrites IN to OUT (OUT may be IN) with the header padded and every\n"
      "tensor at a 256-byte boundary; any safetensors reader still reads it. Then loading\n"
      "OUT maps it: no copy, no private memory. The output is written to a temporary\n"
      "file and renamed into place, streaming (the file is never held in memory).");
  app->add_option("IN", *in, "the safetensors file to read")->required()->check(CLI::ExistingFile);
  app->add_option("OUT", *out, "where to write the aligned file")->required();
  return {app, [in, out] {
            const CheckpointSummary before = summarise_checkpoint(*in);
            io::align_safetensors(*in, *out);
            const CheckpointSummary after = summarise_checkpoint(*out);
            fmt::print("{} -> {}: {} tensors\n", *in, *out, after.tensors.size());
            fmt::print("  before: loading {} ({}): mapped {}, active {}\n", before.load_path, format_bytes(before.file_bytes),
                       format_bytes(before.mapped), format_bytes(before.active));
            fmt::print("  after:  loading {} ({}): mapped {}, active {}\n", after.load_path, format_bytes(after.file_bytes),
                       format_bytes(after.mapped), format_bytes(after.active));
            return 0;
          }};
}

}  // namespace nuvec::tool
