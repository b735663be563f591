// Where the built-in model (nuvec demo-model's default) lives when no model
// is named: $NUVEC_MODEL_CACHE, else $XDG_CACHE_HOME/nuvec/demo-model, else
// ~/.cache/nuvec/demo-model. Written there on first use.
#pragma once

#include <filesystem>

namespace nuvec::tool {

std::filesystem::path builtin_model_dir();

// The directory, after writing the built-in model into it if its
// config.json is absent (written last, so its presence means complete).
// Says so on stderr when it writes.
std::filesystem::path ensure_builtin_model();

}  // namespace nuvec::tool
