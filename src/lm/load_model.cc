// The one entry point for loading a model, whatever its format: each
// format's loader is its own file and knows nothing of the others.
#include "nuvec/lm/model.h"
#include "nuvec/trace_tag.h"

namespace nuvec::lm {

Model load_model(Device& device, const std::filesystem::path& path) {
  // A trace shows the weights as one tag, whether mapped or read into buffers.
  device.mark("load");
  const Tag weights_tag(device, "weights");
  if (path.extension() == ".gguf" && !std::filesystem::is_directory(path)) return load_gguf_model(device, path);
  return load_safetensors_model(device, path);
}

}  // namespace nuvec::lm
