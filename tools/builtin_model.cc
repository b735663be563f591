#include "builtin_model.h"

#include "progress_line.h"

#include <cstdlib>

#include <fmt/format.h>

#include "nuvec/error.h"
#include "nuvec/lm/demo_model.h"
#include "nuvec/memory.h"

namespace nuvec::tool {

std::filesystem::path builtin_model_dir() {
  if (const char* dir = std::getenv("NUVEC_MODEL_CACHE"); dir != nullptr && *dir != '\0') return dir;
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg != nullptr && *xdg != '\0') {
    return std::filesystem::path(xdg) / "nuvec" / "demo-model";
  }
  if (const char* home = std::getenv("HOME"); home != nullptr && *home != '\0') {
    return std::filesystem::path(home) / ".cache" / "nuvec" / "demo-model";
  }
  throw InvalidArgument("no model given and no cache directory for the built-in one: name a model, or set "
                        "NUVEC_MODEL_CACHE (or HOME)");
}

std::filesystem::path ensure_builtin_model() {
  const std::filesystem::path dir = builtin_model_dir();
  if (std::filesystem::exists(dir / "config.json")) return dir;
  lm::DemoModelOptions options;
  fmt::print(stderr, "nuvec: writing the built-in model ({}) to {} (once)\n",
             format_bytes(lm::demo_model_weight_bytes(options)), dir.string());
  ProgressLine progress("writing the built-in model:", "MiB");
  options.progress = [&](std::size_t done, std::size_t total) { progress(done >> 20, total >> 20); };
  lm::write_demo_model(dir, options);
  return dir;
}

}  // namespace nuvec::tool
