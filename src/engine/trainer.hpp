// SPDX-License-Identifier: Apache-2.0
// Keras-style fit(): epochs of shuffled mini-batches through the training-step graph, validation on the
// held-out tail of the data, TensorBoard scalars, checkpoints at each epoch end, and exact resume.
#pragma once
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "engine/data.hpp"
#include "engine/executor.hpp"
#include "models/model_spec.hpp"

namespace gpuvs::engine {

struct TrainConfig {
  std::int64_t epochs = 1;
  std::int64_t batch = 32;
  std::int64_t steps_per_epoch = 0;  // 0: every batch of the training split (the last one may be partial)
  std::optional<double> learning_rate;
  std::uint64_t seed = 1;
  double validation_split = 0.2;  // the last fraction of the rows, before shuffling, as Keras takes it
  int threads = 0;                // 0: every core
  GemmLibrary gemm = GemmLibrary::onednn;
  std::optional<std::filesystem::path> logdir;
  std::optional<std::filesystem::path> checkpoint_dir;
  bool resume = false;
  /// A fresh run (no resume) may replace a checkpoint already in checkpoint_dir (--force); without it that is
  /// refused, since a fresh run's first epoch would overwrite another run's progress.
  bool replace_checkpoint = false;
  bool profile = false;  // time every op of the full-batch training step
  // Placement: "auto" (the first GPU when the CUDA engine can run there, else the CPU), "cpu", "cuda",
  // "cuda:N". Memory (GPU): growth (allocate as needed, cache and reuse) or preallocate (map
  // memory_fraction of the card up front, as TensorFlow does). Precision: "auto" (tf32 on a GPU, fp32 on
  // the CPU), "fp32", "tf32", "amp-bf16", "amp-fp16" (the last three on a GPU only).
  std::string device = "auto";
  std::string memory = "growth";
  double memory_fraction = 0.9;
  std::string precision = "auto";
  bool cuda_graphs = true;  // GPU: capture the step once and replay it; false: eager launches
  /// Data parallel over GPUs 0..gpus-1 (MirroredStrategy): the batch is split evenly, gradients are averaged
  /// with NCCL; only whole global batches are trained (a remainder of the epoch's rows is left out).
  int gpus = 1;
  /// An asynchronous device (a GPU) queues steps and is asked for loss and accuracy about every 50 ms of
  /// work, and at least every `steps_per_sync` steps (Keras' steps_per_execution, loosely): each ask
  /// drains the queue. The CPU reports every step.
  std::int64_t steps_per_sync = 64;
};

/// Where a TrainConfig places the run: "cpu" or "cuda:N", and, when it fell back to the CPU, why.
struct Placement {
  std::string device;
  std::string note;
};
/// InputError for a device, memory or precision setting that cannot work here (e.g. cuda:1 on a
/// one-GPU machine, cuda with no GPU and the reason, tf32 on the CPU).
Placement resolve_placement(const TrainConfig& cfg);

struct EpochResult {
  std::int64_t epoch = 0;  // 1-based
  double loss = 0, accuracy = 0;
  bool has_validation = false;
  double val_loss = 0, val_accuracy = 0;
  std::int64_t samples = 0;
  double seconds = 0;  // training part of the epoch
  double samples_per_s = 0;
};

/// One op of the training step, timed by the engine and costed by the graph (for calibration).
struct OpProfile {
  std::string name;
  std::string op;
  double seconds_per_step = 0;
  double matrix_flops = 0, vector_flops = 0, bytes = 0;  // per step, from graph/cost
};

struct TrainResult {
  std::vector<EpochResult> history;  // epochs run in this invocation
  std::int64_t first_epoch = 1;      // > 1 when resumed
  double samples_per_s = 0;          // over all epochs run, training steps only
  // Over steps on the CPU; on an asynchronous device (queued steps) over read-back windows, each the
  // window's wall time per step.
  double step_time_median_s = 0, step_time_p10_s = 0, step_time_p90_s = 0;
  std::size_t peak_memory_bytes = 0;  // params + optimizer slots + every executor's workspace
  std::size_t peak_rss_bytes = 0;     // the process's high-water mark
  int threads = 0;
  std::string device = "cpu";         // "cpu" or the GPU's description (name, memory mode, precision, path)
  std::size_t gpu_reserved_bytes = 0, gpu_in_use_bytes = 0, gpu_peak_in_use_bytes = 0;  // the GPU allocator (GPU runs)
  double loss_scale = 1;            // amp-fp16: the dynamic loss scale at the end
  std::int64_t skipped_steps = 0;   // amp-fp16: steps skipped for non-finite gradients
  std::string gemm;
  std::int64_t steps = 0;
  std::int64_t train_rows = 0, val_rows = 0;
  std::vector<OpProfile> op_profile;  // with TrainConfig::profile; ops that do work, in graph order
  std::string gemm_impls;             // with TrainConfig::profile: the library kernel each matmul got
};

class TrainObserver {
 public:
  virtual ~TrainObserver() = default;
  virtual void on_epoch_begin(std::int64_t /*epoch*/, std::int64_t /*epochs*/, std::int64_t /*steps*/) {}
  virtual void on_step(std::int64_t /*step*/, double /*loss*/, double /*accuracy*/) {}
  virtual void on_epoch_end(const EpochResult&) {}
  virtual void on_note(const std::string&) {}
};

/// Steps to queue before the next totals() on an asynchronous executor: about `target_seconds` of work
/// at the last measured seconds per step (none measured yet: 1), at least 1, at most `cap`.
std::int64_t next_sync_window(double seconds_per_step, std::int64_t cap, double target_seconds = 0.05);

/// Throws InputError for option values that can never work (checked before any data is made or read).
void validate_config(const TrainConfig& cfg);

/// Trains `spec` on `data`. InputError for configurations or data that cannot work (checked before any
/// file is written); the caller keeps `store` to inspect the trained params.
TrainResult train(const models::ModelSpec& spec, const Dataset& data, const TrainConfig& cfg, TrainObserver& obs,
                  ParamStore& store);

}  // namespace gpuvs::engine
