// SPDX-License-Identifier: Apache-2.0
// Whether a training run fits the memory it would run in, judged before anything is allocated: the need
// comes from the model's parameter list and the executors' planned arenas, the memory from the system (CPU)
// or the driver (GPU). What cannot fit is refused with the figures, where otherwise an allocator would fail
// part-way through set-up, or the kernel's OOM killer would end the run.
#pragma once
#include <cstdint>
#include <string>

#include "models/model_spec.hpp"

namespace gpuvs::engine {

/// Bytes a training run holds at least, on any device.
struct TrainFootprint {
  double params = 0;  // fp32 parameters
  double adam = 0;    // Adam's two moments
  double work = 0;    // activations, gradients and saved tensors: the arenas of the full-batch, tail and validation graphs
  double total() const { return params + adam + work; }
};

/// The footprint of training `spec` on one device: batches of `batch` rows over `train_rows` rows (a shorter
/// last batch gets an executor of its own), validating in batches of `val_batch` over `val_rows` rows (0: none).
/// `work` is the CPU executor's arena plan (every intermediate kept, none reused); the CUDA executor keeps a
/// buffer per node as well, plus 16-bit GEMM copies under AMP and its workspaces, so on a GPU it is a lower bound.
TrainFootprint training_footprint(const models::ModelSpec& spec, std::int64_t batch, std::int64_t train_rows, std::int64_t val_batch,
                                  std::int64_t val_rows);

/// What a run can have of a GPU with `free` of `total` bytes: the free memory, and with `preallocate` at most
/// `fraction` (0, 1] of the total (the pool the allocator maps up front).
double usable_gpu_bytes(std::uint64_t free, std::uint64_t total, bool preallocate, double fraction);

/// InputError with the figures when `f` needs more than `have` bytes. `where` names the memory ("this machine",
/// "cuda:0"), `have_what` what `have` is ("available", "free"); the advice is to lower the batch or the model.
void refuse_unless_fits(const std::string& model, std::int64_t batch, const TrainFootprint& f, double have, const std::string& where,
                        const std::string& have_what);

}  // namespace gpuvs::engine
