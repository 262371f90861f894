// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <mutex>
#include <set>
#include <stdexcept>
#include <thread>

#include "core/error.hpp"
#include "engine/checkpoint.hpp"
#include "engine/fit_check.hpp"
#include "engine/replica_workers.hpp"
#include "engine/trainer.hpp"
#include "import/gpuvs/model_file.hpp"
#include "models/sequential_presets.hpp"
#include "test_util.hpp"
#include "tfevent_reader.hpp"

using namespace gpuvs;
using namespace gpuvs::engine;

namespace {
class Quiet : public TrainObserver {};

TrainResult fit(const models::ModelSpec& spec, const Dataset& d, const TrainConfig& cfg, ParamStore& store) {
  Quiet q;
  return train(spec, d, cfg, q, store);
}
}  // namespace

TEST(Trainer, SeedModelReaches97PercentOnTheSyntheticTaskWithin5Epochs) {
  const auto spec = models::sequential_preset("seed-mlp");
  const Dataset d = make_synthetic(60000, 780, 10, 1);
  TrainConfig cfg;
  cfg.epochs = 5;
  cfg.threads = 2;
  ParamStore store;
  const TrainResult r = fit(spec, d, cfg, store);
  ASSERT_EQ(r.history.size(), 5u);
  EXPECT_GE(r.history.back().val_accuracy, 0.97);
  EXPECT_LT(r.history.back().loss, r.history.front().loss);
  EXPECT_EQ(store.iterations, 5 * 1500);
  EXPECT_GT(r.samples_per_s, 0);
  EXPECT_GT(r.peak_memory_bytes, static_cast<std::size_t>(3 * 101258 * 4));  // params + Adam m and v
}

TEST(Trainer, RealDigitsReach95PercentOnHeldOutFifth) {
  const auto spec = import::parse_model_text(R"(input_shape = [64]
[[layers]]
type = "dense"
units = 128
activation = "relu"
[[layers]]
type = "dropout"
rate = 0.2
[[layers]]
type = "dense"
units = 10
activation = "softmax"
)", "digits", false);
  DataFiles f;
  f.data = std::string(GPUVS_TEST_DATA) + "/digits.csv.gz";
  f.scale = 1.0 / 16.0;
  Dataset d = load_dataset(f);
  // The file is ordered (by writer); Keras's split takes the last rows, so shuffle first for a random fifth.
  shuffle_rows(d, 1);
  TrainConfig cfg;
  cfg.epochs = 40;
  cfg.threads = 1;
  cfg.validation_split = 0.2;
  ParamStore store;
  const TrainResult r = fit(spec, d, cfg, store);
  EXPECT_EQ(r.val_rows, 360);
  EXPECT_GE(r.history.back().val_accuracy, 0.95);
}

TEST(Trainer, ResumeEqualsUninterrupted) {
  const auto spec = models::sequential_preset("seed-mlp");
  const Dataset d = make_synthetic(1000, 780, 10, 3);
  test::TempDir dir;
  TrainConfig cfg;
  cfg.batch = 64;  // 800 training rows: 12 full batches and a partial one of 32
  cfg.threads = 1;
  cfg.seed = 3;
  cfg.epochs = 4;
  cfg.checkpoint_dir = dir / "straight";
  ParamStore straight;
  fit(spec, d, cfg, straight);
  cfg.checkpoint_dir = dir / "split";
  cfg.epochs = 2;
  ParamStore first;
  fit(spec, d, cfg, first);
  cfg.epochs = 4;
  cfg.resume = true;
  ParamStore resumed;
  const TrainResult r = fit(spec, d, cfg, resumed);
  EXPECT_EQ(r.first_epoch, 3);
  EXPECT_EQ(r.history.size(), 2u);
  EXPECT_EQ(resumed.iterations, straight.iterations);
  ASSERT_EQ(resumed.tensors().size(), straight.tensors().size());
  for (const auto& [name, t] : straight.tensors())
    EXPECT_EQ(std::memcmp(resumed.get(name).buffer.data(), t.buffer.data(), t.bytes()), 0) << name;
  // The checkpoint files of both runs hold the same state too.
  EXPECT_EQ(test::slurp(checkpoint_file(dir / "straight")), test::slurp(checkpoint_file(dir / "split")));
}

TEST(Trainer, TensorBoardLogsHoldKerasTagsPerEpoch) {
  const auto spec = models::sequential_preset("seed-mlp");
  const Dataset d = make_synthetic(600, 780, 10, 2);
  test::TempDir dir;
  TrainConfig cfg;
  cfg.epochs = 3;
  cfg.threads = 1;
  cfg.logdir = dir / "logs";
  ParamStore store;
  const TrainResult r = fit(spec, d, cfg, store);
  for (const char* sub : {"train", "validation"}) {
    std::vector<std::filesystem::path> files;
    for (const auto& e : std::filesystem::directory_iterator(dir / "logs" / sub)) files.push_back(e.path());
    ASSERT_EQ(files.size(), 1u) << sub;
    const auto events = test::read_event_file(files[0]);
    ASSERT_EQ(events.size(), 1u + 2u * 3u) << sub;
    EXPECT_EQ(events[0].file_version, "brain.Event:2");
    for (int e = 0; e < 3; ++e) {
      const auto& loss = events[1 + 2 * static_cast<std::size_t>(e)];
      const auto& acc = events[2 + 2 * static_cast<std::size_t>(e)];
      EXPECT_EQ(loss.tag, "epoch_loss");
      EXPECT_EQ(acc.tag, "epoch_accuracy");
      EXPECT_EQ(loss.step, e);
      const auto& h = r.history[static_cast<std::size_t>(e)];
      const bool val = std::string(sub) == "validation";
      EXPECT_FLOAT_EQ(loss.value, static_cast<float>(val ? h.val_loss : h.loss));
      EXPECT_FLOAT_EQ(acc.value, static_cast<float>(val ? h.val_accuracy : h.accuracy));
    }
  }
}

TEST(Trainer, BadConfigurationsAreInputErrorsBeforeAnyWrite) {
  const auto spec = models::sequential_preset("seed-mlp");
  const Dataset d = make_synthetic(200, 780, 10, 2);
  test::TempDir dir;
  auto expect_input_error = [&](TrainConfig cfg, const std::string& needle) {
    cfg.logdir = dir / "logs";
    cfg.checkpoint_dir = dir / "ckpt";
    ParamStore store;
    try {
      fit(spec, d, cfg, store);
      ADD_FAILURE() << "expected InputError containing " << needle;
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
    EXPECT_FALSE(std::filesystem::exists(dir / "logs")) << needle;
    EXPECT_FALSE(std::filesystem::exists(dir / "ckpt")) << needle;
  };
  TrainConfig c;
  c.epochs = 0;
  expect_input_error(c, "--epochs");
  c = {};
  c.batch = 0;
  expect_input_error(c, "--batch-size");
  c = {};
  c.validation_split = 1.0;
  expect_input_error(c, "--validation-split");
  c = {};
  c.steps_per_epoch = 1000;
  expect_input_error(c, "--steps 1000 exceeds");
  c = {};
  c.resume = true;
  expect_input_error(c, "no checkpoint");
  c = {};
  c.steps_per_sync = 0;
  expect_input_error(c, "--steps-per-sync must be at least 1");
  Dataset wrong = make_synthetic(50, 64, 10, 2);
  ParamStore s;
  EXPECT_THROW(fit(spec, wrong, TrainConfig{}, s), InputError);
  Dataset bad_label = d;
  bad_label.y[17] = 10;
  try {
    fit(spec, bad_label, TrainConfig{}, s);
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("label 10 at row 17 is outside the model's 10 classes"), std::string::npos);
  }
}

TEST(Trainer, MismatchedCheckpointIsRefused) {
  const Dataset d = make_synthetic(300, 780, 10, 2);
  test::TempDir dir;
  TrainConfig cfg;
  cfg.threads = 1;
  cfg.checkpoint_dir = dir / "ck";
  ParamStore s;
  fit(models::sequential_preset("seed-mlp"), d, cfg, s);
  const std::string before = test::slurp(checkpoint_file(dir / "ck"));
  auto other = models::sequential_preset("seed-mlp");
  other.layers[0].units = 64;
  cfg.resume = true;
  cfg.epochs = 2;
  try {
    fit(other, d, cfg, s);
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("does not match this run: the model"), std::string::npos);
  }
  cfg.seed = 5;
  EXPECT_THROW(fit(models::sequential_preset("seed-mlp"), d, cfg, s), InputError);
  EXPECT_EQ(test::slurp(checkpoint_file(dir / "ck")), before) << "a refused resume must not touch the checkpoint";
}

TEST(Trainer, DivergenceNamesTheEpochAndStepAndWritesNoCheckpoint) {
  const auto spec = models::sequential_preset("seed-mlp");
  const Dataset d = make_synthetic(640, 780, 10, 4);
  test::TempDir dir;
  TrainConfig cfg;
  cfg.batch = 64;
  cfg.learning_rate = 1e30;  // one Adam step moves every weight by ~1e30: the next logits overflow
  cfg.checkpoint_dir = dir / "ckpt";
  ParamStore store;
  try {
    fit(spec, d, cfg, store);
    FAIL() << "expected a divergence";
  } catch (const RuntimeFailure& e) {
    EXPECT_NE(std::string(e.what()).find("training diverged: loss is"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("at epoch 1 step 2"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(std::filesystem::exists(checkpoint_file(dir / "ckpt")));
}

// Asynchronous devices are asked for totals about every 50 ms of queued work, within [1, cap].
TEST(Trainer, SyncWindowFollowsTheMeasuredStepTime) {
  EXPECT_EQ(next_sync_window(0.0, 64), 1);   // nothing measured yet
  EXPECT_EQ(next_sync_window(-1.0, 64), 1);
  EXPECT_EQ(next_sync_window(std::nan(""), 64), 1);
  EXPECT_EQ(next_sync_window(40e-6, 64), 64);  // a small model: the cap
  EXPECT_EQ(next_sync_window(40e-6, 10000), 1250);
  EXPECT_EQ(next_sync_window(0.01, 64), 5);
  EXPECT_EQ(next_sync_window(0.2, 64), 1);     // a big model: every step
  EXPECT_EQ(next_sync_window(1e-6, 0), 1);     // a nonsense cap still yields a step
}

TEST(Trainer, StepTotalsKeepTheEarliestNonFiniteStep) {
  StepTotals a, b, c;
  a.loss = 1, a.rows = 2, a.steps = 1;
  b.loss = 2, b.rows = 3, b.steps = 1, b.first_nonfinite_iteration = 9, b.nonfinite_loss = INFINITY;
  c.first_nonfinite_iteration = 4, c.nonfinite_loss = NAN;
  a += b;
  EXPECT_EQ(a.loss, 3);
  EXPECT_EQ(a.rows, 5);
  EXPECT_EQ(a.steps, 2);
  EXPECT_EQ(a.first_nonfinite_iteration, 9);
  a += c;
  EXPECT_EQ(a.first_nonfinite_iteration, 4);
  EXPECT_TRUE(std::isnan(a.nonfinite_loss));
  a += StepTotals{};
  EXPECT_EQ(a.first_nonfinite_iteration, 4);
}

// A checkpoint written by amp-fp16 GPU training carries the loss scale ("amp/loss_scale"): the CPU resumes
// from it (it trains in fp32 and has no use for the scale) and keeps the tensor for a later GPU resume.
TEST(Trainer, ResumeKeepsTensorsItDoesNotUse) {
  const auto spec = models::sequential_preset("seed-mlp");
  const Dataset d = make_synthetic(400, 780, 10, 3);
  test::TempDir dir;
  TrainConfig cfg;
  cfg.batch = 64;
  cfg.device = "cpu";
  cfg.checkpoint_dir = dir / "ck";
  ParamStore first;
  fit(spec, d, cfg, first);
  ParamStore saved;
  const CheckpointMeta meta = load_checkpoint(checkpoint_file(dir / "ck"), saved);
  float* v = saved.ensure("amp/loss_scale", {3}, ir::DType::f32).as<float>();
  v[0] = 1024.0f, v[1] = 3.0f, v[2] = 1.0f;
  save_checkpoint(checkpoint_file(dir / "ck"), meta, saved);
  cfg.epochs = 2;
  cfg.resume = true;
  ParamStore resumed;
  const TrainResult r = fit(spec, d, cfg, resumed);
  EXPECT_EQ(r.first_epoch, 2);
  ParamStore after;
  load_checkpoint(checkpoint_file(dir / "ck"), after);
  ASSERT_TRUE(after.has("amp/loss_scale"));
  EXPECT_EQ(after.get("amp/loss_scale").as<float>()[0], 1024.0f);
}

TEST(FitCheck, FootprintCountsParametersAdamAndEachExecutorsArena) {
  const auto spec = models::sequential_preset("seed-mlp");
  const double gib = 1073741824.0;
  const TrainFootprint f = training_footprint(spec, 128, 1024, 128, 0);
  EXPECT_EQ(f.params, 4.0 * (780 * 128 + 128 + 128 * 10 + 10));  // fp32 kernels and biases
  EXPECT_EQ(f.adam, 2 * f.params);
  // Every intermediate is kept for the backward pass: at least the input, the hidden layer before and after
  // dropout and the logits, in fp32, plus a gradient of each parameter.
  EXPECT_GE(f.work, 4.0 * 128 * (780 + 128 + 128 + 10) + f.params);
  EXPECT_LT(f.work, 1e-2 * gib);
  EXPECT_EQ(f.total(), f.params + f.adam + f.work);
  // 1,000 rows at batch 128: seven full batches and a last one of 104 rows, with an executor of its own.
  EXPECT_EQ(training_footprint(spec, 128, 1000, 128, 0).work, f.work + training_footprint(spec, 104, 104, 104, 0).work);
  EXPECT_EQ(training_footprint(spec, 128, 100, 128, 0).work, training_footprint(spec, 100, 100, 100, 0).work);  // one short batch
  // Validation batches need no gradients: less than training batches of the same size.
  const double val = training_footprint(spec, 128, 1024, 256, 5000).work - f.work;
  EXPECT_GT(val, 4.0 * 256 * (780 + 10));
  EXPECT_LT(val, training_footprint(spec, 256, 256, 256, 0).work);
}

TEST(FitCheck, AGpuGivesItsFreeMemoryOrItsPreallocatedPool) {
  const std::uint64_t gib = std::uint64_t{1} << 30;
  EXPECT_EQ(usable_gpu_bytes(79 * gib, 80 * gib, false, 0.9), 79.0 * gib);
  EXPECT_DOUBLE_EQ(usable_gpu_bytes(79 * gib, 80 * gib, true, 0.9), 72.0 * gib);  // TensorFlow's default pool
  EXPECT_EQ(usable_gpu_bytes(10 * gib, 80 * gib, true, 0.9), 10.0 * gib);          // another process holds the rest
  EXPECT_EQ(usable_gpu_bytes(0, 80 * gib, false, 1.0), 0.0);
}

TEST(FitCheck, WhatCannotFitIsRefusedWithTheFiguresInOneLine) {
  const double gib = 1073741824.0;
  const TrainFootprint f{1.0 * gib, 2.0 * gib, 0.5 * gib};
  EXPECT_NO_THROW(refuse_unless_fits("m", 64, f, 3.5 * gib, "cuda:0", "free"));  // exactly fits
  try {
    refuse_unless_fits("m", 64, f, 3.25 * gib, "cuda:1", "free");
    FAIL() << "3.5 GiB fitted in 3.25";
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(), "model 'm' needs 3.50 GiB to train at batch 64 (parameters 1.00, Adam state 2.00, activations and gradients "
                           "0.50) but cuda:1 has 3.25 GiB free: lower --batch-size or the model's size");
  }
}

// Data parallel on several GPUs runs every replica's step at once (their NCCL calls wait for each other)
// on threads that live for the run, not a thread per replica per step.
TEST(ReplicaWorkers, RunEveryReplicaAtOnceOnTheSameThreadsEveryStep) {
  constexpr std::size_t n = 4;
  ReplicaWorkers workers(n);
  std::mutex m;
  std::vector<std::set<std::thread::id>> ids(n);
  for (int step = 0; step < 50; ++step) {
    // Each job waits until all four are in flight: the step completes only if they run concurrently.
    std::atomic<int> arrived{0};
    std::atomic<bool> all_met{true};
    workers.run([&](std::size_t r) {
      ++arrived;
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
      while (arrived.load() < static_cast<int>(n))
        if (std::chrono::steady_clock::now() > deadline) {
          all_met = false;
          break;
        }
      std::lock_guard lock(m);
      ids[r].insert(std::this_thread::get_id());
    });
    ASSERT_TRUE(all_met) << "step " << step << ": the replicas did not run at once";
  }
  std::set<std::thread::id> all;
  for (const auto& s : ids) {
    EXPECT_EQ(s.size(), 1u);  // one thread per replica for every step
    all.insert(s.begin(), s.end());
  }
  EXPECT_EQ(all.size(), n);
  EXPECT_FALSE(all.count(std::this_thread::get_id()));
}

TEST(ReplicaWorkers, AReplicasErrorReachesTheCallerAfterAllFinishAndTheWorkersCarryOn) {
  ReplicaWorkers workers(3);
  std::atomic<int> finished{0};
  try {
    workers.run([&](std::size_t r) {
      if (r == 1) throw RuntimeFailure("replica 1 failed");
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      ++finished;
    });
    FAIL() << "the replica's error was lost";
  } catch (const RuntimeFailure& e) {
    EXPECT_STREQ(e.what(), "replica 1 failed");
  }
  EXPECT_EQ(finished.load(), 2);  // the others ran to the end before the error came back
  std::atomic<int> ran{0};
  workers.run([&](std::size_t) { ++ran; });
  EXPECT_EQ(ran.load(), 3);
  EXPECT_THROW(ReplicaWorkers(0), std::invalid_argument);
}
