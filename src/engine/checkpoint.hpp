// SPDX-License-Identifier: Apache-2.0
// Checkpoints: params, optimizer slots and the run's position, in one file replaced atomically.
//
// Layout: "GPUVSCKP" | u32 format version | u64 header length | header JSON | tensors | u32 CRC-32C of
// everything before it. Each tensor: u32 name length, name, u8 dtype, u32 rank, i64 dims, u64 byte count,
// bytes (little-endian). A file that fails any check is reported as corrupt and never half-loaded.
#pragma once
#include <cstdint>
#include <filesystem>
#include <string>

#include "engine/param_store.hpp"

namespace gpuvs::engine {

struct CheckpointMeta {
  std::string model_fingerprint;  // ModelSpec::fingerprint()
  std::string model_name;
  std::int64_t epochs_done = 0;
  std::int64_t iterations = 0;
  std::uint64_t seed = 0;
  std::int64_t batch = 0;
  std::int64_t train_rows = 0, val_rows = 0;
  std::string data_source;
};

/// The checkpoint file inside a checkpoint directory.
std::filesystem::path checkpoint_file(const std::filesystem::path& dir);

void save_checkpoint(const std::filesystem::path& file, const CheckpointMeta& meta, const ParamStore& store);
/// Reads a checkpoint into a fresh store; InputError when the file is missing, corrupt or not a checkpoint.
CheckpointMeta load_checkpoint(const std::filesystem::path& file, ParamStore& into);

}  // namespace gpuvs::engine
