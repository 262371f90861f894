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
