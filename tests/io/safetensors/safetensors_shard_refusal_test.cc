// A sharded checkpoint refused by the memory limit changes no statistic,
// wherever the refusal falls: the load is checked whole before any shard is
// mapped or read (a peak, once raised by shard 1, could not be lowered).
#include <gtest/gtest.h>

#include <string>

#include <fmt/format.h>

#include "io/safetensors/safetensors_test_support.h"
#include "nuvec/memory.h"

namespace {

using nuvec_test::fresh_device;
using nuvec_test::TempDir;

constexpr int kShards = 4;
constexpr std::size_t kFloats = 16384;  // 64 KiB of data a shard

// Shard k holds tensor "t<k>". Aligned shards are mapped; with `aligned`
// false the data starts at an odd offset, so they are read into buffers.
void write_checkpoint(const std::filesystem::path& dir, bool aligned) {
  std::string weight_map;
  for (int k = 0; k < kShards; ++k) {
    std::string json = fmt::format(R"({{"t{}":{{"dtype":"F32","shape":[{}],"data_offsets":[0,{}]}}}})", k, kFloats,
                                   kFloats * 4);
    while ((8 + json.size()) % 8 != (aligned ? 0u : 2u)) json += ' ';
    const std::string name = fmt::format("model-{:05}-of-{:05}.safetensors", k + 1, kShards);
    nuvec_test::write_file(dir / name, nuvec_test::safetensors_bytes(json, std::vector<std::byte>(kFloats * 4)));
    weight_map += fmt::format(R"({}"t{}": "{}")", k == 0 ? "" : ", ", k, name);
  }
  nuvec_test::write_file(dir / "model.safetensors.index.json", R"({"weight_map": {)" + weight_map + "}}");
}

void refused_at_every_shard(bool aligned) {
  const TempDir dir;
  write_checkpoint(dir.path(), aligned);
  const nuvec::io::Footprint whole = nuvec::io::footprint(dir.path());
  ASSERT_EQ(whole.mapped == 0, !aligned);
  const std::size_t per_shard = (whole.mapped + whole.active) / kShards;
  for (int k = 0; k < kShards; ++k) {
    auto device = fresh_device();
    nuvec::Buffer held = device->new_buffer(4096);  // something live, so the peak is not 0
    device->set_memory_limit(held.capacity() + k * per_shard + per_shard / 2);  // shard k does not fit
    const nuvec::MemoryStats before = device->memory();
    for (const auto& path : {dir.path(), dir.path() / "model.safetensors.index.json"}) {
      try {
        nuvec::io::load_safetensors(*device, path);
        ADD_FAILURE() << "the load was not refused (shard " << k << ")";
      } catch (const nuvec::OutOfMemory& e) {
        EXPECT_NE(std::string(e.what()).find("nothing was mapped or read"), std::string::npos) << e.what();
        EXPECT_EQ(e.requested(), whole.mapped + whole.active);
      }
      EXPECT_EQ(device->memory(), before) << "refused at shard " << k << (aligned ? " (mapped)" : " (read)");
    }
  }
  // With room for all of them, the load goes through and costs what was predicted.
  auto device = fresh_device();
  device->set_memory_limit(whole.mapped + whole.active);
  const auto loaded = nuvec::io::load_safetensors(*device, dir.path());
  EXPECT_EQ(device->memory().mapped, whole.mapped);
  EXPECT_EQ(device->memory().active, whole.active);
}

TEST(SafetensorsShardRefusal, MappedShardsRefusedAtAnyShardChangeNothing) { refused_at_every_shard(true); }
TEST(SafetensorsShardRefusal, ReadShardsRefusedAtAnyShardChangeNothing) { refused_at_every_shard(false); }

}  // namespace
