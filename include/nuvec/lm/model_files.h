// The files a model's weights can be views of, one per loader
// (load_safetensors_model, load_gguf_model): Model::file_as<...>() gives
// them back, e.g. to find the bytes of a tensor by its name.
#pragma once

#include <cstddef>

#include "nuvec/io/gguf.h"
#include "nuvec/io/safetensors.h"
#include "nuvec/lm/model.h"

namespace nuvec::lm {

// A safetensors checkpoint, mapped (or read into buffers where it could not
// be), with its shards.
class SafetensorsModelFile final : public ModelFile {
 public:
  explicit SafetensorsModelFile(io::SafetensorsFile checkpoint) : checkpoint_(std::move(checkpoint)) {}
  const io::SafetensorsFile& checkpoint() const { return checkpoint_; }
  std::size_t held_bytes() const override;

 private:
  io::SafetensorsFile checkpoint_;
};

// A mapped GGUF file.
class GgufModelFile final : public ModelFile {
 public:
  // `held_bytes`: what its load added to active + mapped.
  GgufModelFile(io::GgufModel file, std::size_t held_bytes) : file_(std::move(file)), held_bytes_(held_bytes) {}
  const io::GgufModel& file() const { return file_; }
  std::size_t held_bytes() const override { return held_bytes_; }

 private:
  io::GgufModel file_;
  std::size_t held_bytes_;
};

}  // namespace nuvec::lm
