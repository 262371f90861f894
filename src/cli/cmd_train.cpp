// SPDX-License-Identifier: Apache-2.0
// gpuvs train WORKLOAD|MODEL_FILE: Keras-style fit with progress, TensorBoard logs and checkpoints.
#include <fmt/format.h>

#include <limits>
#include <unistd.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>

#include "cli/commands.hpp"
#include "cli/output.hpp"
#include "cli/validators.hpp"
#include "core/error.hpp"
#include "core/files.hpp"
#include "core/progress.hpp"
#include "core/strings.hpp"
#include "core/units.hpp"
#include "dist/world.hpp"
#include "engine/data.hpp"
#include "engine/safetensors_export.hpp"
#include "engine/trainer.hpp"
#include "models/networks.hpp"
#include "models/sequential_presets.hpp"
#include "workload/resolve.hpp"

namespace gpuvs::cli {

namespace {

struct TrainArgs {
  std::string workload;
  engine::TrainConfig cfg;
  std::string data, labels, logdir, checkpoint, gemm = "onednn", memory = "growth";
  std::string save_weights;  // --save-weights FILE.safetensors
  bool eager = false;
  std::optional<double> lr, scale;
  std::int64_t rows = 60000;
  Output out = Output::table;
  bool shuffle_rows = false;
};

std::string cpu_model_name() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("model name", 0) == 0) {
      const auto c = line.find(':');
      if (c != std::string::npos) return line.substr(c + 2);
    }
  return "unknown CPU";
}

std::string metrics_text(double loss, double acc) { return fmt::format("loss: {:.4f} - accuracy: {:.4f}", loss, acc); }

class ConsoleObserver final : public engine::TrainObserver {
 public:
  explicit ConsoleObserver(std::FILE* out) : out_(out) {}
  void on_epoch_begin(std::int64_t epoch, std::int64_t epochs, std::int64_t steps) override {
    fmt::print(out_, "Epoch {}/{}\n", epoch, epochs);
    std::fflush(out_);
    bar_.emplace(out_, static_cast<long>(steps));
  }
  void on_step(std::int64_t step, double loss, double acc) override {
    bar_->update(static_cast<long>(step), metrics_text(loss, acc));
  }
  void on_epoch_end(const engine::EpochResult& r) override {
    std::string m = metrics_text(r.loss, r.accuracy);
    if (r.has_validation) m += fmt::format(" - val_loss: {:.4f} - val_accuracy: {:.4f}", r.val_loss, r.val_accuracy);
    m += fmt::format(" - {:.0f} samples/s", r.samples_per_s);
    bar_->finish(m);
  }
  void on_note(const std::string& text) override { fmt::print(out_, "{}\n", strings::escape_control(text)); }

 private:
  std::FILE* out_;
  std::optional<ProgressBar> bar_;
};

nlohmann::json summary_json(const TrainArgs& a, const models::ModelSpec& spec, const engine::Dataset& data,
                            const engine::TrainResult& r) {
  auto num = [](double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr); };
  nlohmann::json j;
  j["schema_version"] = 1;
  j["command"] = "train";
  j["workload"] = spec.name;
  j["params"] = spec.param_count();
  j["device"] = r.device;
  j["device_name"] = r.device == "cpu" ? cpu_model_name() : r.device;
  if (r.device != "cpu") {
    j["gpu_memory"] = {{"reserved_bytes", r.gpu_reserved_bytes}, {"in_use_bytes", r.gpu_in_use_bytes},
                       {"peak_in_use_bytes", r.gpu_peak_in_use_bytes}};
    j["loss_scale"] = r.loss_scale;
    j["skipped_steps"] = r.skipped_steps;
  }
  j["threads"] = r.threads;
  const dist::World& w = dist::world();
  j["ranks"] = w.size;  // MPI processes, each training --batch-size rows of every global batch
  j["nodes"] = w.nodes;
  j["global_batch"] = a.cfg.batch * w.size;
  j["gemm_library"] = r.gemm;
  j["data"] = data.source;
  j["train_rows"] = r.train_rows;
  j["val_rows"] = r.val_rows;
  j["batch_size"] = a.cfg.batch;
  j["epochs"] = a.cfg.epochs;
  j["first_epoch"] = r.first_epoch;
  j["steps"] = r.steps;
  j["seed"] = a.cfg.seed;
  j["steps_per_sync"] = a.cfg.steps_per_sync;
  j["samples_per_s"] = num(r.samples_per_s);
  j["step_time_median_s"] = num(r.step_time_median_s);
  j["step_time_p10_s"] = num(r.step_time_p10_s);
  j["step_time_p90_s"] = num(r.step_time_p90_s);
  j["peak_memory_bytes"] = r.peak_memory_bytes;
  j["peak_rss_bytes"] = r.peak_rss_bytes;
  nlohmann::json hist = nlohmann::json::array();
  for (const auto& e : r.history) {
    nlohmann::json h{{"epoch", e.epoch}, {"loss", e.loss}, {"accuracy", e.accuracy}, {"samples_per_s", e.samples_per_s},
                     {"seconds", e.seconds}};
    if (e.has_validation) {
      h["val_loss"] = e.val_loss;
      h["val_accuracy"] = e.val_accuracy;
    }
    hist.push_back(h);
  }
  j["history"] = hist;
  if (!r.op_profile.empty()) {
    nlohmann::json ops = nlohmann::json::array();
    for (const auto& o : r.op_profile)
      ops.push_back({{"name", o.name}, {"op", o.op}, {"seconds_per_step", o.seconds_per_step},
                     {"matrix_flops", o.matrix_flops}, {"vector_flops", o.vector_flops}, {"bytes", o.bytes}});
    j["op_profile"] = ops;
  }
  if (!r.history.empty()) {
    const auto& last = r.history.back();
    j["loss"] = last.loss;
    j["accuracy"] = last.accuracy;
    j["val_loss"] = last.has_validation ? nlohmann::json(last.val_loss) : nlohmann::json(nullptr);
    j["val_accuracy"] = last.has_validation ? nlohmann::json(last.val_accuracy) : nlohmann::json(nullptr);
  }
  return j;
}

void print_profile(const engine::TrainResult& r) {
  double total = 0;
  for (const auto& o : r.op_profile) total += o.seconds_per_step;
  fmt::print("\n  per-op time of one full-batch training step (engine timers; FLOPs and bytes from the graph):\n");
  fmt::print("  {:<28} {:<18} {:>10} {:>7} {:>10} {:>9}\n", "op", "kind", "us/step", "share", "GFLOP/s", "GB/s");
  for (const auto& o : r.op_profile) {
    const double s = o.seconds_per_step;
    const double gflops = s > 0 ? (o.matrix_flops + o.vector_flops) / s / 1e9 : 0.0;
    const double gbs = s > 0 ? o.bytes / s / 1e9 : 0.0;
    fmt::print("  {:<28} {:<18} {:>10.1f} {:>6.1f}% {:>10.1f} {:>9.1f}\n", o.name, o.op, s * 1e6,
               total > 0 ? 100.0 * s / total : 0.0, gflops, gbs);
  }
  fmt::print("  {:<28} {:<18} {:>10.1f}\n", "total", "", total * 1e6);
  fmt::print("  GEMM kernels:\n");
  std::size_t pos = 0;
  while (pos < r.gemm_impls.size()) {
    const auto end = r.gemm_impls.find('\n', pos);
    fmt::print("    {}\n", r.gemm_impls.substr(pos, end - pos));
    if (end == std::string::npos) break;
    pos = end + 1;
  }
}

int run_train(TrainArgs& a) {
  const models::ModelSpec spec = workload::resolve_sequential(a.workload);
  if (a.gemm == "onednn") a.cfg.gemm = engine::GemmLibrary::onednn;
  else if (a.gemm == "openblas") a.cfg.gemm = engine::GemmLibrary::openblas;
  else throw InputError(fmt::format("--gemm '{}' is not a GEMM library (expected onednn or openblas)", a.gemm));
  a.cfg.learning_rate = a.lr;
  // --memory growth | preallocate | preallocate=FRACTION
  if (a.memory.rfind("preallocate", 0) == 0) {
    a.cfg.memory = "preallocate";
    if (a.memory.size() > 11) {
      const std::string f = a.memory.substr(a.memory.find('=') + 1);
      char* end = nullptr;
      a.cfg.memory_fraction = std::strtod(f.c_str(), &end);
      if (a.memory[11] != '=' || f.empty() || *end != '\0')
        throw InputError(fmt::format("--memory '{}' is not a policy (expected growth or preallocate[=FRACTION])", strings::printable(a.memory)));
    }
  } else {
    a.cfg.memory = a.memory;
  }
  a.cfg.cuda_graphs = !a.eager;
  if (!a.logdir.empty()) a.cfg.logdir = a.logdir;
  if (!a.checkpoint.empty()) a.cfg.checkpoint_dir = a.checkpoint;
  if (a.scale && !(std::isfinite(*a.scale) && *a.scale > 0))
    throw InputError(fmt::format("--scale must be a positive number, got {}", *a.scale));
  if (!a.labels.empty() && a.data.empty()) throw InputError("--labels needs --data");
  if (a.rows < 2) throw InputError(fmt::format("--rows must be at least 2, got {}", a.rows));
  engine::validate_config(a.cfg);
  (void)engine::resolve_placement(a.cfg);  // a GPU that is not there is refused before any output

  engine::Dataset data;
  if (a.data.empty()) {
    data = engine::make_synthetic(a.rows, spec.input_dim, spec.num_classes(), a.cfg.seed);
  } else {
    engine::DataFiles files;
    files.data = a.data;
    if (!a.labels.empty()) files.labels = a.labels;
    files.scale = a.scale;
    data = engine::load_dataset(files);
    if (a.shuffle_rows) engine::shuffle_rows(data, a.cfg.seed);
  }
  // The weights file is checked before any work (a name that cannot be written is refused now, not after training).
  const files::OutputSpec weights_spec{"--save-weights", "safetensors weights", engine::kSafetensorsSignature, false};
  if (!a.save_weights.empty()) {
    if (!strings::ends_with(strings::lower(a.save_weights), ".safetensors"))
      throw InputError(fmt::format("--save-weights {}: the file must end .safetensors (the format it writes)", strings::printable(a.save_weights)));
    (void)files::check_output(a.save_weights, weights_spec);
  }
  // Under MPI every rank trains; rank 0 alone prints, writes and reports. The command line was compared at start-up;
  // the data each rank read under the same path must be the same too (a node with another file trains another task).
  const dist::World& world = dist::world();
  if (world.size > 1)
    dist::check_same(fmt::format("{} ({} rows x {} features, CRC-32C {:08x})", data.source, data.rows, data.features, engine::data_digest(data)),
                     "read", "every rank must read the same data (copy the file to every node, or put it on a shared file system)");
  if (world.rank != 0) {
    engine::TrainObserver silent;
    engine::ParamStore store;
    (void)engine::train(spec, data, a.cfg, silent, store);
    return 0;
  }
  std::FILE* progress = a.out != Output::table ? stderr : stdout;
  // Names and paths come from files and flags: their control characters are shown as \xNN, never sent to the terminal.
  const auto e = strings::escape_control;
  fmt::print(progress, "Model {} ({} params), data {} ({} rows x {} features)\n", e(spec.name), spec.param_count(),
             e(data.source), data.rows, data.features);
  if (world.size > 1)
    fmt::print(progress, "Data parallel over {} MPI ranks on {} node{}: each trains {} rows of every global batch of {}\n", world.size,
               world.nodes, world.nodes == 1 ? "" : "s", a.cfg.batch, a.cfg.batch * world.size);
  ConsoleObserver obs(progress);
  engine::ParamStore store;
  const engine::TrainResult r = engine::train(spec, data, a.cfg, obs, store);
  if (!a.save_weights.empty()) files::write_output(a.save_weights, weights_spec, engine::export_safetensors(spec, store));
  if (a.out == Output::json) {
    print_json(summary_json(a, spec, data, r), -1);  // one line: a log line per run
    return 0;
  }
  if (print_structured(summary_json(a, spec, data, r), a.out)) return 0;  // csv, md: one row
  if (r.history.empty()) return 0;
  const auto& last = r.history.back();
  if (r.device == "cpu")
    fmt::print("Trained {} on cpu ({}, {} thread{}, GEMM {}): {} epoch{}, {} steps of batch {}\n", e(spec.name),
               cpu_model_name(), r.threads, r.threads == 1 ? "" : "s", r.gemm, r.history.size(),
               r.history.size() == 1 ? "" : "s", r.steps, a.cfg.batch);
  else
    fmt::print("Trained {} on {}: {} epoch{}, {} steps of batch {}; GPU memory reserved {}, in use {}, peak in use {}\n", e(spec.name),
               r.device, r.history.size(), r.history.size() == 1 ? "" : "s", r.steps, a.cfg.batch,
               units::format_bytes_binary(static_cast<double>(r.gpu_reserved_bytes)),
               units::format_bytes_binary(static_cast<double>(r.gpu_in_use_bytes)),
               units::format_bytes_binary(static_cast<double>(r.gpu_peak_in_use_bytes)));
  fmt::print("  throughput {} samples/s, median step {} (p10 {}, p90 {})\n", units::format_si(r.samples_per_s),
             units::format_seconds(r.step_time_median_s), units::format_seconds(r.step_time_p10_s),
             units::format_seconds(r.step_time_p90_s));
  fmt::print("  peak memory {} (params, optimizer state, activations); process peak RSS {}\n",
             units::format_bytes_binary(static_cast<double>(r.peak_memory_bytes)),
             units::format_bytes_binary(static_cast<double>(r.peak_rss_bytes)));
  std::string fin = fmt::format("  final loss {:.4f}, accuracy {:.4f}", last.loss, last.accuracy);
  if (last.has_validation) fin += fmt::format(", val_loss {:.4f}, val_accuracy {:.4f}", last.val_loss, last.val_accuracy);
  fmt::print("{}\n", fin);
  if (!r.op_profile.empty()) print_profile(r);
  if (a.cfg.logdir) fmt::print("  TensorBoard logs: {} (tensorboard --logdir {})\n", e(a.logdir), e(a.logdir));
  if (a.cfg.checkpoint_dir) fmt::print("  checkpoint: {}/checkpoint.gpuvs\n", e(a.checkpoint));
  if (!a.save_weights.empty()) fmt::print("  weights: {} (safetensors; each Dense layer as torch.nn.Linear's weight [out, in] and bias)\n", e(a.save_weights));
  return 0;
}

}  // namespace

Runner add_train_command(CLI::App& app) {
  auto args = std::make_shared<TrainArgs>();
  auto* sub = app.add_subcommand("train", "Train a workload (built-in id or model file) on this machine");
  sub->add_option("workload", args->workload, "Built-in workload id (seed-mlp) or a .toml/.json model file")
      ->required();
  sub->add_option("--epochs", args->cfg.epochs, "Epochs to train (total, counting resumed ones)")->capture_default_str()->check(whole_in(1, 1000000));
  sub->add_option("--batch-size,--batch", args->cfg.batch, "Samples per step (--batch as predict and compare spell it)")->capture_default_str()->check(whole_in(1, models::kMaxBatch));
  sub->add_option("--steps", args->cfg.steps_per_epoch, "Steps per epoch (default: the whole training split)")->check(whole_in(1, std::numeric_limits<std::int64_t>::max()));
  sub->add_option("--lr", args->lr, "Learning rate (default: the model's, Keras Adam 1e-3)")->check(positive());
  sub->add_option("--seed", args->cfg.seed, "Seed for data, initial weights, shuffling and dropout")
      ->capture_default_str()->check(whole_in(0, std::numeric_limits<std::int64_t>::max()));
  sub->add_option("--validation-split", args->cfg.validation_split,
                  "Fraction of the rows (the last ones, as Keras) held out for validation")
      ->capture_default_str()->check(number_in(0, 1, true, "a share from 0 up to (not including) 1"));
  sub->add_option("--data", args->data,
                  "Data file: CSV (label last), NPY or IDX, optionally .gz (default: synthetic task)");
  sub->add_option("--labels", args->labels, "Labels file for NPY or IDX data");
  sub->add_option("--scale", args->scale, "Multiply features by this (default: 1/255 for 8-bit data, else 1)")->check(positive());
  sub->add_flag("--shuffle-rows", args->shuffle_rows,
                "Shuffle the file's rows (seeded) before the validation split, for files ordered by class or writer");
  sub->add_option("--rows", args->rows, "Rows of the synthetic task")->capture_default_str()->check(whole_in(2, std::numeric_limits<std::int64_t>::max()));
  sub->add_option("--logdir", args->logdir, "Write TensorBoard event files under DIR/train and DIR/validation");
  sub->add_option("--checkpoint", args->checkpoint, "Write a checkpoint to DIR at each epoch end");
  sub->add_option("--save-weights", args->save_weights,
                  "Write the trained weights to FILE.safetensors, as PyTorch holds them (torch.nn.Linear named after each Dense layer)");
  sub->add_flag("--resume", args->cfg.resume, "Continue from the checkpoint in --checkpoint DIR");
  sub->add_flag("--force", args->cfg.replace_checkpoint, "Start afresh over a checkpoint already in --checkpoint DIR (without it, that is refused)");
  sub->add_option("--threads", args->cfg.threads, "CPU threads (default: every core)")->check(threads());
  sub->add_option("--device", args->cfg.device, "auto, cpu, cuda or cuda:N (auto: the first GPU if there is one)")->capture_default_str();
  sub->add_option("--memory", args->memory, "GPU memory: growth, or preallocate[=FRACTION] (TensorFlow's default, 0.9)")->capture_default_str();
  sub->add_option("--precision", args->cfg.precision, "auto (tf32 on a GPU, fp32 on the CPU), fp32, tf32, amp-bf16 or amp-fp16 (GPU: 16-bit GEMM inputs, FP32 master weights; fp16 with dynamic loss scaling)")->capture_default_str();
  sub->add_option("--gpus", args->cfg.gpus, "Data parallel over GPUs 0..N-1 with NCCL (the batch is split evenly)")->capture_default_str()->check(whole_in(1, 1024));
  sub->add_flag("--eager", args->eager, "GPU: launch every kernel each step instead of replaying a captured CUDA graph");
  sub->add_option("--steps-per-sync", args->cfg.steps_per_sync,
                  "GPU: queue up to N steps (about 50 ms of work) before reading loss and accuracy back; 1 waits for every step")
      ->capture_default_str()->check(whole_in(1, 1 << 20));
  sub->add_option("--gemm", args->gemm, "CPU GEMM library: onednn or openblas")->capture_default_str();
  sub->add_flag("--profile", args->cfg.profile,
                "Time every op of the training step and print time, share, GFLOP/s and GB/s per op");
  add_output_option(sub, args->out);  // json: the final summary as one JSON object on stdout (progress to stderr)
  return [args] { return run_train(*args); };
}

}  // namespace gpuvs::cli
