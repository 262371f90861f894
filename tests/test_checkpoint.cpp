// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>

#include <cstring>

#include "core/crc32c.hpp"
#include "core/error.hpp"
#include "engine/checkpoint.hpp"
#include "models/builder.hpp"
#include "models/sequential_presets.hpp"
#include "test_util.hpp"

using namespace gpuvs;
using namespace gpuvs::engine;

namespace {
ParamStore seeded_store() {
  ParamStore s;
  s.initialize(models::param_inits(models::sequential_preset("seed-mlp")), ir::DType::f32, 9);
  s.ensure("dense/kernel/m", {780, 128}, ir::DType::f32).as<float>()[5] = 0.5f;
  s.iterations = 42;
  return s;
}
CheckpointMeta meta() {
  CheckpointMeta m;
  m.model_fingerprint = models::sequential_preset("seed-mlp").fingerprint();
  m.model_name = "seed-mlp";
  m.epochs_done = 3;
  m.iterations = 42;
  m.seed = 9;
  m.batch = 32;
  m.train_rows = 100;
  m.val_rows = 25;
  m.data_source = "synthetic";
  return m;
}
}  // namespace

TEST(Checkpoint, RoundTripIsExact) {
  test::TempDir dir;
  const ParamStore s = seeded_store();
  save_checkpoint(checkpoint_file(dir.path()), meta(), s);
  ParamStore back;
  const CheckpointMeta m = load_checkpoint(checkpoint_file(dir.path()), back);
  EXPECT_EQ(m.epochs_done, 3);
  EXPECT_EQ(m.seed, 9u);
  EXPECT_EQ(back.iterations, 42);
  ASSERT_EQ(back.tensors().size(), s.tensors().size());
  for (const auto& [name, t] : s.tensors()) {
    const HostTensor& u = back.get(name);
    EXPECT_EQ(u.shape, t.shape);
    EXPECT_EQ(std::memcmp(u.buffer.data(), t.buffer.data(), t.bytes()), 0) << name;
  }
}

TEST(Checkpoint, EveryFlippedByteIsDetected) {
  test::TempDir dir;
  ParamStore small;
  small.ensure("w", {3}, ir::DType::f32).as<float>()[1] = 2.0f;
  const auto file = checkpoint_file(dir.path());
  save_checkpoint(file, meta(), small);
  const std::string good = test::slurp(file);
  for (std::size_t i = 0; i < good.size(); ++i) {
    std::string bad = good;
    bad[i] = static_cast<char>(bad[i] ^ 0x20);
    test::write_text(file, bad);
    ParamStore into;
    into.ensure("keep", {1}, ir::DType::f32);
    EXPECT_THROW(load_checkpoint(file, into), InputError) << "byte " << i;
    EXPECT_TRUE(into.has("keep")) << "a failed load must leave the target untouched";
  }
  for (std::size_t cut : {std::size_t{0}, std::size_t{5}, good.size() / 2, good.size() - 1}) {
    test::write_text(file, good.substr(0, cut));
    ParamStore into;
    EXPECT_THROW(load_checkpoint(file, into), InputError) << "truncated at " << cut;
  }
}

TEST(Checkpoint, ATensorClaimingMoreThanTheFileHoldsIsRefusedBeforeAllocating) {
  // A crafted file (consistent dims and byte count, a valid checksum) claiming 2^40 floats.
  test::TempDir dir;
  ParamStore small;
  small.ensure("w", {3}, ir::DType::f32);
  const auto file = checkpoint_file(dir.path());
  save_checkpoint(file, meta(), small);
  std::string b = test::slurp(file);
  std::uint64_t hlen = 0;
  std::memcpy(&hlen, b.data() + 12, 8);
  const std::size_t first = 8 + 4 + 8 + static_cast<std::size_t>(hlen) + 4;  // the first tensor's record
  std::uint32_t name_len = 0;
  std::memcpy(&name_len, b.data() + first, 4);
  const std::size_t dim0 = first + 4 + name_len + 1 + 4;
  const std::int64_t huge = std::int64_t{1} << 40;
  const std::uint64_t nbytes = static_cast<std::uint64_t>(huge) * 4;
  std::memcpy(b.data() + dim0, &huge, 8);
  std::memcpy(b.data() + dim0 + 8, &nbytes, 8);
  const std::uint32_t crc = crc32c(b.data(), b.size() - 4);
  std::memcpy(b.data() + b.size() - 4, &crc, 4);
  test::write_text(file, b);
  ParamStore into;
  try {
    load_checkpoint(file, into);
    ADD_FAILURE();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("tensor 'w' claims 4398046511104 bytes"), std::string::npos) << e.what();
  }
}

TEST(Checkpoint, MissingFileAndForeignFile) {
  test::TempDir dir;
  ParamStore into;
  EXPECT_THROW(load_checkpoint(dir / "none", into), InputError);
  test::write_text(dir / "foreign", "PK\x03\x04 this is a zip file, not a checkpoint");
  try {
    load_checkpoint(dir / "foreign", into);
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("not a gpuvs checkpoint"), std::string::npos);
  }
}

#include "engine/safetensors_export.hpp"
#include "import/safetensors/safetensors_file.hpp"

// The trained weights as safetensors: read back by the safetensors reader (the reference parser's checks), each
// Dense kernel transposed into torch.nn.Linear's [out, in], biases as they are, no optimizer slot, and the writer's
// signature where --save-weights looks for it.
TEST(SafetensorsExport, EachDenseLayerIsALinearPyTorchLoads) {
  const models::ModelSpec spec = models::sequential_preset("seed-mlp");
  const ParamStore s = seeded_store();
  const std::string bytes = export_safetensors(spec, s);
  const import::SafetensorsHeader h = import::read_safetensors_bytes(bytes, bytes.size(), "w.safetensors");
  ASSERT_EQ(h.tensors.size(), 4u);
  EXPECT_EQ(h.metadata.at("format"), "pt");
  EXPECT_NE(h.metadata.at("gpuvs_weights").find("dense: Linear(780 -> 128), relu; dropout 0.2; dense_1: Linear(128 -> 10), softmax"),
            std::string::npos)
      << h.metadata.at("gpuvs_weights");
  EXPECT_NE(bytes.substr(0, 4096).find(kSafetensorsSignature), std::string::npos);
  std::uint64_t header = 0;
  std::memcpy(&header, bytes.data(), 8);
  EXPECT_EQ(header % 8, 0u);  // padded as the reference writer pads: the buffer starts 8-byte aligned
  std::map<std::string, const import::SafetensorsTensor*> by;
  for (const auto& t : h.tensors) by[t.name] = &t;
  ASSERT_TRUE(by.count("dense.weight") && by.count("dense.bias") && by.count("dense_1.weight") && by.count("dense_1.bias"));
  EXPECT_EQ(by["dense.weight"]->shape, (std::vector<std::uint64_t>{128, 780}));
  EXPECT_EQ(by["dense_1.bias"]->shape, (std::vector<std::uint64_t>{10}));
  EXPECT_EQ(by["dense.weight"]->dtype, "F32");
  const char* buffer = bytes.data() + 8 + header;
  const float* kernel = s.get("dense/kernel").as<float>();
  for (const auto& [o, i] : std::vector<std::pair<int, int>>{{0, 0}, {0, 779}, {127, 0}, {5, 300}}) {
    float w = 0;
    std::memcpy(&w, buffer + by["dense.weight"]->begin + 4 * (static_cast<std::size_t>(o) * 780 + i), 4);
    EXPECT_EQ(w, kernel[i * 128 + o]) << o << "," << i;
  }
}
