// SPDX-License-Identifier: Apache-2.0
#include "engine/trainer.hpp"

#include <fmt/format.h>
#include <sys/resource.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <functional>
#include <memory>
#include <numeric>
#include <optional>

#include "core/crc32c.hpp"
#include "core/error.hpp"
#include "core/files.hpp"
#include "core/rng.hpp"
#include "core/stats.hpp"
#include "core/sysmem.hpp"
#include "core/units.hpp"
#include "dist/world.hpp"
#include "engine/checkpoint.hpp"
#include "engine/fit_check.hpp"
#include "engine/replica_workers.hpp"
#include "engine/tfevents.hpp"
#include "gpu/plugin_loader.hpp"
#include "ir/cost.hpp"
#include "models/builder.hpp"

namespace gpuvs::engine {
namespace fs = std::filesystem;

namespace {

using clock_type = std::chrono::steady_clock;

// The order of training rows in an epoch: a Fisher-Yates shuffle driven by (seed, epoch), so any epoch's
// order can be recomputed on resume.
std::vector<std::int64_t> epoch_order(std::int64_t rows, std::uint64_t seed, std::int64_t epoch) {
  std::vector<std::int64_t> order(static_cast<std::size_t>(rows));
  std::iota(order.begin(), order.end(), std::int64_t{0});
  const CounterRng rng(seed, 0x73687566666c65ULL ^ (static_cast<std::uint64_t>(epoch) << 32));
  for (std::int64_t i = rows - 1; i > 0; --i) {
    const auto j = static_cast<std::int64_t>(rng.uniform(static_cast<std::uint64_t>(i)) * static_cast<double>(i + 1));
    std::swap(order[static_cast<std::size_t>(i)], order[static_cast<std::size_t>(j)]);
  }
  return order;
}

using ExecutorFactory = std::function<std::unique_ptr<Executor>(const ir::Graph&, ParamStore&, const ExecutorOptions&)>;

// Executors for a full batch and, when the row count does not divide, the last partial one.
struct ExecPair {
  std::unique_ptr<Executor> full, tail;
  bool full_bound = false, tail_bound = false;  // take their rows from the bound order themselves
  Executor& for_rows(std::int64_t rows, std::int64_t batch) { return rows == batch ? *full : *tail; }
  /// A new epoch over `order`: totals reset, full batches bound from row 0, the tail at the last batch.
  /// Across ranks, this rank's steps start at `offset` and advance by `stride` (every rank's rows).
  void bind(const Dataset& data, const std::vector<std::int64_t>& order, std::int64_t batch, const StepContext& first,
            std::int64_t offset = 0, std::int64_t stride = 0) {
    const auto n = static_cast<std::int64_t>(order.size());
    if (full) {
      full->reset_totals();
      full_bound = full->bind_epoch(data, order.data(), n, offset, stride > 0 ? stride : batch, first);
    }
    if (tail) {
      tail->reset_totals();
      tail_bound = tail->bind_epoch(data, order.data(), n, (n + batch - 1) / batch * batch - batch, batch, first);
    }
  }
  /// The step over order[begin, begin + rows).
  void step(const Dataset& data, const std::vector<std::int64_t>& order, std::int64_t begin, std::int64_t rows, std::int64_t batch,
            const StepContext& ctx) {
    Executor& ex = for_rows(rows, batch);
    if (!(&ex == full.get() ? full_bound : tail_bound)) load_rows(ex, data, order.data() + begin, rows);
    ex.run_accumulate(ctx, rows);
  }
  bool asynchronous() const { return (full && full->asynchronous()) || (tail && tail->asynchronous()); }
  StepTotals totals() const {
    StepTotals t;
    for (auto* e : {full.get(), tail.get()})
      if (e) t += e->totals();
    return t;
  }
};

// `profile` applies to the full-batch executor only: partial batches would skew per-step figures.
ExecPair make_pair(const ExecutorFactory& make, const models::ModelSpec& spec, models::Mode mode, std::int64_t batch, std::int64_t tail,
                   ParamStore& store, ExecutorOptions opt, bool profile) {
  ExecPair p;
  if (batch > 0) {
    ExecutorOptions full = opt;
    full.profile = profile;
    p.full = make(models::build_graph(spec, {batch, ir::DType::f32, mode}), store, full);
  }
  if (tail > 0) p.tail = make(models::build_graph(spec, {tail, ir::DType::f32, mode}), store, opt);
  return p;
}

int cuda_index(const std::string& device) {
  if (device == "cuda") return 0;
  const std::string n = device.substr(5);
  if (n.empty() || n.find_first_not_of("0123456789") != std::string::npos || n.size() > 4)
    throw InputError(fmt::format("--device '{}' is not a device (expected auto, cpu, cuda or cuda:N)", device));
  return std::stoi(n);
}

std::vector<OpProfile> collect_profile(const Executor& ex, std::int64_t runs) {
  std::vector<OpProfile> out;
  if (runs == 0 || ex.node_seconds().empty()) return out;
  const ir::Graph& g = ex.graph();
  for (const auto& n : g.nodes()) {
    const ir::OpCost c = ir::op_cost(g, n);
    if (c.matrix_flops == 0 && c.vector_flops == 0 && c.bytes == 0) continue;  // inputs, params
    out.push_back({n.name, std::string(ir::op_name(n.op)),
                   ex.node_seconds()[static_cast<std::size_t>(n.id)] / static_cast<double>(runs), c.matrix_flops,
                   c.vector_flops, c.bytes});
  }
  return out;
}

std::size_t peak_rss() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<std::size_t>(u.ru_maxrss) * 1024;
}

}  // namespace

std::int64_t next_sync_window(double seconds_per_step, std::int64_t cap, double target_seconds) {
  if (cap < 1) cap = 1;
  if (!(seconds_per_step > 0) || !std::isfinite(seconds_per_step)) return 1;
  const double steps = target_seconds / seconds_per_step;
  if (!(steps >= 1)) return 1;
  return steps >= static_cast<double>(cap) ? cap : static_cast<std::int64_t>(steps);
}

void validate_config(const TrainConfig& cfg) {
  if (cfg.epochs < 1) throw InputError(fmt::format("--epochs must be at least 1, got {}", cfg.epochs));
  if (cfg.batch < 1) throw InputError(fmt::format("--batch-size must be at least 1, got {}", cfg.batch));
  if (cfg.steps_per_epoch < 0) throw InputError(fmt::format("--steps must be positive, got {}", cfg.steps_per_epoch));
  if (!(cfg.validation_split >= 0.0 && cfg.validation_split < 1.0))
    throw InputError(fmt::format("--validation-split must be in [0, 1), got {}", cfg.validation_split));
  if (cfg.learning_rate && !(*cfg.learning_rate > 0.0 && std::isfinite(*cfg.learning_rate)))
    throw InputError(fmt::format("--lr must be a positive number, got {}", *cfg.learning_rate));
  if (cfg.threads < 0) throw InputError(fmt::format("--threads must be positive, got {}", cfg.threads));
  if (cfg.resume && !cfg.checkpoint_dir) throw InputError("--resume needs --checkpoint DIR");
  if (cfg.device != "auto" && cfg.device != "cpu" && cfg.device.rfind("cuda", 0) != 0)
    throw InputError(fmt::format("--device '{}' is not a device (expected auto, cpu, cuda or cuda:N)", cfg.device));
  if (cfg.device.rfind("cuda", 0) == 0) (void)cuda_index(cfg.device);
  if (cfg.memory != "growth" && cfg.memory != "preallocate")
    throw InputError(fmt::format("--memory '{}' is not a policy (expected growth or preallocate[=FRACTION])", cfg.memory));
  if (!(cfg.memory_fraction > 0 && cfg.memory_fraction <= 1))
    throw InputError(fmt::format("--memory preallocate={}: the fraction must be in (0, 1]", cfg.memory_fraction));
  if (cfg.gpus < 1) throw InputError(fmt::format("--gpus must be at least 1, got {}", cfg.gpus));
  if (cfg.steps_per_sync < 1) throw InputError(fmt::format("--steps-per-sync must be at least 1, got {}", cfg.steps_per_sync));
  if (cfg.gpus > 1 && cfg.batch % cfg.gpus != 0)
    throw InputError(fmt::format("--batch-size {} does not split evenly over --gpus {}", cfg.batch, cfg.gpus));
  if (cfg.gpus > 1 && cfg.device != "auto" && cfg.device != "cuda" && cfg.device != "cuda:0")
    throw InputError(fmt::format("--gpus {} uses cuda:0..cuda:{}; --device {} does not fit with it", cfg.gpus, cfg.gpus - 1, cfg.device));
  if (cfg.precision != "auto" && cfg.precision != "fp32" && cfg.precision != "tf32" && cfg.precision != "amp-bf16" &&
      cfg.precision != "amp-fp16")
    throw InputError(fmt::format("--precision '{}' is not a training precision (expected auto, fp32, tf32, amp-bf16 or amp-fp16)",
                                 cfg.precision));
}

Placement resolve_placement(const TrainConfig& cfg) {
  validate_config(cfg);
  if (cfg.device == "cpu") {
    if (cfg.precision != "auto" && cfg.precision != "fp32")
      throw InputError(fmt::format("--precision {} needs a GPU (--device cuda); the CPU trains in fp32", cfg.precision));
    return {"cpu", ""};
  }
  std::string why;
  gpu::Api* api = gpu::plugin(why);
  const int count = api ? api->device_count(why) : 0;
  if (cfg.device == "auto") {
    if (cfg.gpus > 1 && count < cfg.gpus)
      throw InputError(fmt::format("--gpus {}: this machine has {} GPU{}{}", cfg.gpus, count, count == 1 ? "" : "s",
                                   count == 0 ? " (" + why + ")" : ""));
    if (count > 0) return {"cuda:0", ""};
    if (cfg.precision != "auto" && cfg.precision != "fp32")
      throw InputError(fmt::format("--precision {} needs a GPU; none here ({})", cfg.precision, why));
    return {"cpu", fmt::format("no GPU ({}): training on the CPU", why)};
  }
  if (cfg.gpus > 1 && count < cfg.gpus)
    throw InputError(fmt::format("--gpus {}: this machine has {} GPU{}{}", cfg.gpus, count, count == 1 ? "" : "s",
                                 count == 0 ? " (" + why + ")" : ""));
  const int index = cuda_index(cfg.device);
  if (count == 0) throw InputError(fmt::format("--device {}: no GPU to train on ({})", cfg.device, why));
  if (index >= count)
    throw InputError(fmt::format("--device {}: this machine has {} GPU{} (cuda:0..cuda:{})", cfg.device, count, count == 1 ? "" : "s", count - 1));
  return {fmt::format("cuda:{}", index), ""};
}

namespace {

/// Under MPI every rank trains on the same kind of device, a GPU rank on its local rank's GPU (one GPU per
/// rank; NCCL spans the ranks). Checked on every rank, so a launch that cannot work is refused everywhere.
Placement rank_placement(const TrainConfig& cfg, const Placement& place, const dist::World& world) {
  double on_gpu = place.device == "cpu" ? 0.0 : 1.0;
  dist::allreduce_sum(&on_gpu, 1, "device check");
  if (on_gpu > 0 && on_gpu < world.size)
    throw InputError(fmt::format("--device {}: {} of {} ranks found a GPU and the others none; every rank must train on the same kind of "
                                 "device (use --device cpu, or launch ranks only where there are GPUs)",
                                 cfg.device, static_cast<int>(on_gpu), world.size));
  if (place.device == "cpu") return place;
  if (cfg.gpus > 1)
    throw InputError(fmt::format("--gpus {} under MPI: each rank trains on one GPU, its local rank's; launch {} ranks per node instead",
                                 cfg.gpus, cfg.gpus));
  if (cfg.device != "auto" && cfg.device != "cuda")
    throw InputError(fmt::format("--device {} under MPI: each rank trains on its local rank's GPU (cuda:{} for this rank); use --device cuda",
                                 cfg.device, world.local_rank));
  std::string why;
  gpu::Api* api = gpu::plugin(why);
  const int count = api ? api->device_count(why) : 0;
  if (world.local_rank >= count)
    throw InputError(fmt::format("{} ranks run on {}, which has {} GPU{}{}: launch at most one rank per GPU there, or use --device cpu",
                                 world.local_size, world.host, count, count == 1 ? "" : "s", count == 0 ? " (" + why + ")" : ""));
  return {fmt::format("cuda:{}", world.local_rank), ""};
}

/// What may be at DIR/checkpoint.gpuvs before a run writes there: nothing, or a regular file this run resumes or
/// was told to replace (--force). Another run's checkpoint is not overwritten by a fresh run's first epoch.
void check_checkpoint_target(const fs::path& dir, bool resume, bool replace) {
  const fs::path file = checkpoint_file(dir);
  std::error_code ec;
  const fs::file_status st = fs::symlink_status(file, ec);
  if (ec || !fs::exists(st)) return;
  if (!fs::is_regular_file(st))
    throw InputError(fmt::format("--checkpoint {}: {} is not a regular file; refusing to replace it", dir.string(), file.string()));
  if (resume || replace) return;
  throw InputError(fmt::format("--checkpoint {}: holds a checkpoint already ({}); --resume continues it, --force replaces it with this run's",
                               dir.string(), file.string()));
}

}  // namespace

namespace {

/// The shape of a run, decided and checked before anything is written: where it trains, the split, the
/// global batch and the steps of an epoch.
struct RunShape {
  Placement place;
  std::int64_t ranks = 1;          // MPI ranks
  std::int64_t n_train = 0, n_val = 0;
  std::int64_t global_batch = 0;   // --batch-size rows on each rank
  std::int64_t steps = 0;          // training steps per epoch
  std::int64_t shard_offset = 0;   // this rank's rows in a global batch
};

RunShape shape_run(const models::ModelSpec& spec, const Dataset& data, const TrainConfig& cfg, const dist::World& world) {
  RunShape r;
  r.place = resolve_placement(cfg);
  r.ranks = world.size;
  if (r.ranks > 1) r.place = rank_placement(cfg, r.place, world);
  check_dataset(data, spec.input_dim, spec.num_classes(), spec.name);
  const auto split_at = static_cast<std::int64_t>(static_cast<double>(data.rows) * (1.0 - cfg.validation_split));
  r.n_train = split_at;
  r.n_val = data.rows - split_at;
  if (r.n_train < 1) throw InputError(fmt::format("--validation-split {} leaves no training rows", cfg.validation_split));
  if (cfg.validation_split > 0 && r.n_val < 1)
    throw InputError(fmt::format("--validation-split {} of {} rows leaves no validation rows", cfg.validation_split, data.rows));
  // Across ranks a step is a global batch: --batch-size rows on each of the ranks.
  r.global_batch = cfg.batch * r.ranks;
  const std::int64_t full_steps = r.ranks > 1 ? r.n_train / r.global_batch : (r.n_train + cfg.batch - 1) / cfg.batch;
  if (cfg.steps_per_epoch > full_steps)
    throw InputError(fmt::format("--steps {} exceeds the {} batches of {} in an epoch of {} training rows", cfg.steps_per_epoch,
                                 full_steps, r.global_batch, r.n_train));
  // Data parallel trains whole global batches only: every replica (or rank) gets the same number of rows.
  const std::int64_t whole_steps = r.n_train / cfg.batch;
  if (cfg.gpus > 1 && whole_steps == 0)
    throw InputError(fmt::format("{} training rows make no whole batch of {} to split over {} GPUs", r.n_train, cfg.batch, cfg.gpus));
  if (r.ranks > 1 && full_steps == 0)
    throw InputError(fmt::format("{} training rows make no whole global batch of {} ({} ranks x --batch-size {})", r.n_train,
                                 r.global_batch, r.ranks, cfg.batch));
  const std::int64_t all = cfg.gpus > 1 ? whole_steps : full_steps;
  r.steps = cfg.steps_per_epoch > 0 ? std::min(cfg.steps_per_epoch, all) : all;
  r.shard_offset = static_cast<std::int64_t>(world.rank) * cfg.batch;
  return r;
}

/// What cannot fit is refused with the figures before anything is allocated or created: on the CPU against
/// the memory available, on a GPU against what the driver says is free (every GPU of the run holds the whole
/// model; data-parallel replicas train a share of each batch, the first also validates).
void refuse_what_cannot_fit(const models::ModelSpec& spec, const TrainConfig& cfg, const RunShape& r) {
  if (r.place.device == "cpu") {
    if (const auto have = sysmem::available_bytes())
      refuse_unless_fits(spec.name, cfg.batch, training_footprint(spec, cfg.batch, r.n_train, cfg.batch, r.n_val), static_cast<double>(*have),
                         "this machine", "available");
    return;
  }
  std::string why;
  gpu::Api* api = gpu::plugin(why);
  if (!api) throw RuntimeFailure("no CUDA plugin: " + why);
  const bool pre = cfg.memory == "preallocate";
  const int first = cfg.gpus > 1 ? 0 : cuda_index(r.place.device);
  // One GPU trains every batch (under MPI whole global batches, no tail); replicas a share, the first validating.
  const std::int64_t shard = cfg.batch / cfg.gpus;
  const std::int64_t rows = cfg.gpus > 1 ? shard : r.ranks > 1 ? cfg.batch : r.n_train;
  const TrainFootprint first_need = training_footprint(spec, shard, rows, cfg.batch, r.n_val);
  const TrainFootprint other_need = cfg.gpus > 1 ? training_footprint(spec, shard, rows, cfg.batch, 0) : first_need;
  for (int d = first; d < first + cfg.gpus; ++d) {
    const gpu::DeviceMemory m = api->memory_info(d);
    refuse_unless_fits(spec.name, cfg.batch, d == first ? first_need : other_need, usable_gpu_bytes(m.free, m.total, pre, cfg.memory_fraction),
                       fmt::format("cuda:{}", d),
                       pre ? fmt::format("for its pool (--memory preallocate={:.2f} of {:.2f} GiB, {:.2f} GiB free)", cfg.memory_fraction,
                                         static_cast<double>(m.total) / units::kGiB, static_cast<double>(m.free) / units::kGiB)
                           : std::string("free"));
  }
}

/// The checkpoint identity of this run; with --resume, the store and the epochs done are loaded from the
/// checkpoint after checking it is this run's. Returns the first epoch to train.
std::int64_t resume_or_start(const models::ModelSpec& spec, const Dataset& data, const TrainConfig& cfg, const RunShape& r,
                             CheckpointMeta& meta, ParamStore& store) {
  meta = {.model_fingerprint = spec.fingerprint(),
          .model_name = spec.name,
          .seed = cfg.seed,
          .batch = cfg.batch,
          .train_rows = r.n_train,
          .val_rows = r.n_val,
          .data_source = data.source};
  if (cfg.checkpoint_dir) check_checkpoint_target(*cfg.checkpoint_dir, cfg.resume, cfg.replace_checkpoint);
  if (!cfg.resume) return 1;
  ParamStore loaded;
  const fs::path file = checkpoint_file(*cfg.checkpoint_dir);
  const CheckpointMeta got = load_checkpoint(file, loaded);
  const auto mismatch = [&](const std::string& what, const std::string& theirs, const std::string& ours) {
    return InputError(fmt::format("checkpoint {} does not match this run: {} is {} there, {} here", file.string(), what, theirs, ours));
  };
  if (got.model_fingerprint != meta.model_fingerprint)
    throw mismatch("the model", got.model_name + " (" + got.model_fingerprint + ")", spec.name + " (" + meta.model_fingerprint + ")");
  if (got.seed != meta.seed) throw mismatch("--seed", std::to_string(got.seed), std::to_string(meta.seed));
  if (got.batch != meta.batch) throw mismatch("--batch-size", std::to_string(got.batch), std::to_string(meta.batch));
  if (got.train_rows != r.n_train || got.val_rows != r.n_val || got.data_source != data.source)
    throw mismatch("the data", fmt::format("{} ({}+{} rows)", got.data_source, got.train_rows, got.val_rows),
                   fmt::format("{} ({}+{} rows)", data.source, r.n_train, r.n_val));
  for (const auto& init : models::param_inits(spec))
    if (!loaded.has(init.name) || loaded.get(init.name).shape != init.shape)
      throw InputError(fmt::format("checkpoint {} is corrupt: param '{}' missing or misshapen", file.string(), init.name));
  store = std::move(loaded);
  return got.epochs_done + 1;
}

/// Across MPI ranks on the CPU each rank trains its shard of every global batch, and the gradients are
/// averaged over the ranks before the optimizer step, so the parameters stay equal (on GPUs the device's
/// executors average them with NCCL). `packed` is the staging buffer, kept for the run.
ExecutorOptions executor_options(const TrainConfig& cfg, const RunShape& r, std::vector<float>& packed) {
  ExecutorOptions opt{cfg.gemm, false, {}};
  if (r.ranks <= 1 || r.place.device != "cpu") return opt;
  const std::int64_t ranks = r.ranks;
  opt.reduce_gradients = [&packed, ranks](const std::vector<GradientSpan>& grads) {
    std::int64_t total = 0;
    for (const auto& g : grads) total += g.size;
    packed.resize(static_cast<std::size_t>(total));
    std::int64_t at = 0;
    for (const auto& g : grads) {
      std::copy(g.data, g.data + g.size, packed.data() + at);
      at += g.size;
    }
    dist::allreduce_sum(packed.data(), total, "gradient all-reduce");
    const float inv = 1.0f / static_cast<float>(ranks);
    at = 0;
    for (const auto& g : grads) {
      for (std::int64_t k = 0; k < g.size; ++k) g.data[k] = packed[static_cast<std::size_t>(at + k)] * inv;
      at += g.size;
    }
  };
  return opt;
}

/// What a run trains on: the CPU, one GPU (alone, or this rank's in an NCCL group across ranks), or --gpus N
/// replicas in one process. Outlives every executor it makes.
struct RunDevices {
  std::unique_ptr<gpu::TrainDevice> gpu;
  std::vector<std::unique_ptr<gpu::TrainDevice>> replicas;  // --gpus N > 1
  ExecutorFactory make = [](const ir::Graph& g, ParamStore& st, const ExecutorOptions& o) { return make_cpu_executor(g, st, o); };
  std::string description;  // empty on the CPU
  gpu::TrainDevice* first() const { return gpu ? gpu.get() : replicas.empty() ? nullptr : replicas[0].get(); }
};

RunDevices open_devices(const TrainConfig& cfg, const RunShape& r, const dist::World& world, TrainObserver& obs) {
  RunDevices d;
  if (r.place.device == "cpu") {
    if (!r.place.note.empty()) obs.on_note(r.place.note);
    return d;
  }
  std::string why;
  gpu::Api* api = gpu::plugin(why);
  gpu::TrainDeviceOptions o;
  o.device = cuda_index(r.place.device);
  o.memory = cfg.memory == "preallocate" ? AllocMode::preallocate : AllocMode::growth;
  o.fraction = cfg.memory_fraction;
  o.precision = cfg.precision == "fp32"       ? gpu::GpuPrecision::fp32
                : cfg.precision == "amp-bf16" ? gpu::GpuPrecision::amp_bf16
                : cfg.precision == "amp-fp16" ? gpu::GpuPrecision::amp_fp16
                                              : gpu::GpuPrecision::tf32;
  o.cuda_graphs = cfg.cuda_graphs;
  if (cfg.gpus > 1) {
    d.replicas = api->open_train_devices(o, cfg.gpus);
    gpu::TrainDevice* first = d.replicas[0].get();
    d.make = [first](const ir::Graph& g, ParamStore& st, const ExecutorOptions& eo) { return first->executor(g, st, eo); };
    d.description = fmt::format("{} GPUs data parallel: {}", cfg.gpus, first->describe());
    if (r.n_train % cfg.batch)
      obs.on_note(fmt::format("{} rows of each epoch are left out: only whole batches of {} split over {} GPUs", r.n_train % cfg.batch,
                              cfg.batch, cfg.gpus));
    return d;
  }
  if (r.ranks > 1) {
    // One GPU per rank: rank 0's NCCL group id reaches the others over MPI, then every rank joins.
    const std::string id = dist::broadcast(world.rank == 0 ? api->nccl_unique_id() : std::string(), "NCCL group id");
    {
      const dist::Deadline joining("joining the NCCL group");  // ncclCommInitRank waits for every rank
      d.gpu = api->open_train_device_in_group(o, id, world.rank, world.size);
    }
    d.description = fmt::format("{}; rank {} of {} ranks, gradients averaged with NCCL across them", d.gpu->describe(), world.rank,
                                world.size);
  } else {
    d.gpu = api->open_train_device(o);
    d.description = d.gpu->describe();
  }
  gpu::TrainDevice* dev = d.gpu.get();
  d.make = [dev](const ir::Graph& g, ParamStore& st, const ExecutorOptions& eo) { return dev->executor(g, st, eo); };
  return d;
}

/// The training steps of an epoch, whatever runs them: one executor pair (the CPU, one GPU, or one rank of
/// many, each on its shard of every global batch), or --gpus N replicas stepping at once.
class EpochSteps {
 public:
  virtual ~EpochSteps() = default;
  /// A new epoch over `order`; true when steps are queued on a device (totals wait for them).
  virtual bool begin_epoch(const std::vector<std::int64_t>& order, std::int64_t epoch_iteration) = 0;
  /// The step over the global batch at order[begin...] (this rank's shard of it), at `iteration`.
  virtual void step(const std::vector<std::int64_t>& order, std::int64_t begin, std::int64_t rows, std::int64_t iteration) = 0;
  virtual StepTotals totals() const = 0;
  /// Rows and steps the engine must report for an epoch of `steps` steps.
  virtual std::int64_t expected_rows(std::int64_t steps) const = 0;
  virtual std::int64_t expected_steps(std::int64_t steps) const = 0;
  virtual std::size_t workspace_bytes() const = 0;
  /// The executor whose per-node times --profile reports, or nullptr.
  virtual const Executor* profiled() const = 0;
};

class PairSteps final : public EpochSteps {
 public:
  PairSteps(const RunDevices& d, const models::ModelSpec& spec, const Dataset& data, const TrainConfig& cfg, const RunShape& r,
            ParamStore& store, const ExecutorOptions& opt)
      : data_(data), cfg_(cfg), r_(r) {
    const std::int64_t last_rows = r.ranks > 1 ? cfg.batch : std::min(cfg.batch, r.n_train - (r.steps - 1) * cfg.batch);
    ex_ = make_pair(d.make, spec, models::Mode::train, r.n_train >= cfg.batch ? cfg.batch : 0, last_rows != cfg.batch ? last_rows : 0, store,
                    opt, cfg.profile);
  }
  bool begin_epoch(const std::vector<std::int64_t>& order, std::int64_t epoch_iteration) override {
    ex_.bind(data_, order, cfg_.batch, {cfg_.seed, epoch_iteration, r_.shard_offset}, r_.shard_offset, r_.global_batch);
    return ex_.asynchronous();
  }
  void step(const std::vector<std::int64_t>& order, std::int64_t begin, std::int64_t rows, std::int64_t iteration) override {
    ex_.step(data_, order, begin, rows, cfg_.batch, {cfg_.seed, iteration, r_.shard_offset});
  }
  StepTotals totals() const override { return ex_.totals(); }
  std::int64_t expected_rows(std::int64_t steps) const override { return std::min(r_.n_train, steps * cfg_.batch); }
  std::int64_t expected_steps(std::int64_t steps) const override { return steps; }
  std::size_t workspace_bytes() const override {
    std::size_t w = 0;
    for (auto* e : {ex_.full.get(), ex_.tail.get()})
      if (e) w += e->workspace_bytes();
    return w;
  }
  const Executor* profiled() const override { return ex_.full.get(); }

 private:
  const Dataset& data_;
  const TrainConfig& cfg_;
  const RunShape& r_;
  ExecPair ex_;
};

class ReplicaSteps final : public EpochSteps {
 public:
  ReplicaSteps(const RunDevices& d, const models::ModelSpec& spec, const Dataset& data, const TrainConfig& cfg, ParamStore& store,
               const ExecutorOptions& opt)
      : data_(data), cfg_(cfg), shard_(cfg.batch / cfg.gpus), workers_(d.replicas.size()) {
    const ir::Graph g = models::build_graph(spec, {shard_, ir::DType::f32, models::Mode::train});
    for (std::size_t r = 0; r < d.replicas.size(); ++r) {
      ExecutorOptions ro = opt;
      ro.profile = cfg.profile && r == 0;
      ex_.push_back(d.replicas[r]->executor(g, store, ro));
    }
  }
  bool begin_epoch(const std::vector<std::int64_t>& order, std::int64_t epoch_iteration) override {
    bound_.clear();
    bool queued = false;
    for (std::size_t r = 0; r < ex_.size(); ++r) {
      ex_[r]->reset_totals();
      bound_.push_back(ex_[r]->bind_epoch(data_, order.data(), static_cast<std::int64_t>(order.size()), static_cast<std::int64_t>(r) * shard_,
                                          cfg_.batch, {seed(r), epoch_iteration}));
      queued = queued || ex_[r]->asynchronous();
    }
    return queued;
  }
  // All replicas run at once, each on its own thread for the whole run (each replica's NCCL calls need
  // the others' to be in flight).
  void step(const std::vector<std::int64_t>& order, std::int64_t begin, std::int64_t, std::int64_t iteration) override {
    for (std::size_t r = 0; r < ex_.size(); ++r)
      if (!bound_[r]) load_rows(*ex_[r], data_, order.data() + begin + static_cast<std::int64_t>(r) * shard_, shard_);
    workers_.run([&](std::size_t r) { ex_[r]->run_accumulate({seed(r), iteration}, shard_); });
  }
  StepTotals totals() const override {
    StepTotals t;
    for (const auto& e : ex_) t += e->totals();
    return t;
  }
  std::int64_t expected_rows(std::int64_t steps) const override { return steps * cfg_.batch; }
  std::int64_t expected_steps(std::int64_t steps) const override { return steps * static_cast<std::int64_t>(ex_.size()); }
  std::size_t workspace_bytes() const override {
    std::size_t w = 0;
    for (const auto& e : ex_) w += e->workspace_bytes();
    return w;
  }
  const Executor* profiled() const override { return ex_.empty() ? nullptr : ex_[0].get(); }

 private:
  // Each replica draws its own dropout masks.
  std::uint64_t seed(std::size_t r) const { return cfg_.seed + 0x9E3779B97F4A7C15ULL * r; }

  const Dataset& data_;
  const TrainConfig& cfg_;
  const std::int64_t shard_;
  std::vector<std::unique_ptr<Executor>> ex_;
  std::vector<char> bound_;  // per replica: takes its rows from the bound order itself
  ReplicaWorkers workers_;   // after ex_: stopped before the executors go
};

/// The training steps of one epoch, with progress and divergence reported about every 50 ms of work.
/// Returns the epoch's figures summed over the ranks; `step_times` gets one per-step time per window.
EpochResult train_epoch(EpochSteps& steps, const TrainConfig& cfg, const RunShape& r, std::int64_t epoch, ParamStore& store,
                        TrainObserver& obs, std::vector<double>& step_times, std::int64_t& full_runs) {
  obs.on_epoch_begin(epoch, cfg.epochs, r.steps);
  const auto order = epoch_order(r.n_train, cfg.seed, epoch);
  const std::int64_t epoch_iteration = store.iterations;
  // Executors that take their rows from the epoch's order themselves (a GPU gathers on the device); the
  // rest are loaded every step.
  const bool queued = steps.begin_epoch(order, epoch_iteration);
  StepTotals sum;
  std::int64_t window = 1, in_window = 0;  // steps queued since the last totals()
  const auto t_epoch = clock_type::now();
  auto t_window = t_epoch;
  for (std::int64_t s = 0; s < r.steps; ++s) {
    // On GPUs across ranks the step waits on the others inside NCCL, out of MPI's deadlines: give it one.
    std::optional<dist::Deadline> waiting;
    if (r.ranks > 1 && r.place.device != "cpu") waiting.emplace("a training step (NCCL across the ranks)");
    const std::int64_t begin = s * r.global_batch + r.shard_offset;
    const std::int64_t rows = std::min(cfg.batch, r.n_train - begin);
    full_runs += rows == cfg.batch ? 1 : 0;
    steps.step(order, begin, rows, store.iterations);
    ++store.iterations;
    if (++in_window < window && s + 1 < r.steps) continue;
    // Loss and accuracy so far (on a GPU this waits for the queued steps).
    sum = steps.totals();
    const double per_step = std::chrono::duration<double>(clock_type::now() - t_window).count() / static_cast<double>(in_window);
    step_times.push_back(per_step);
    if (queued) window = next_sync_window(per_step, cfg.steps_per_sync);
    in_window = 0;
    if (sum.first_nonfinite_iteration >= 0)
      throw RuntimeFailure(fmt::format("training diverged: loss is {} at epoch {} step {} (try a lower --lr)", sum.nonfinite_loss, epoch,
                                       sum.first_nonfinite_iteration - epoch_iteration + 1));
    obs.on_step(s + 1, sum.loss / static_cast<double>(sum.rows), sum.accuracy / static_cast<double>(sum.rows));
    t_window = clock_type::now();
  }
  if (sum.rows != steps.expected_rows(r.steps) || sum.steps != steps.expected_steps(r.steps))
    throw RuntimeFailure(fmt::format("the engine reported {} rows in {} steps for an epoch of {} rows in {} steps", sum.rows, sum.steps,
                                     steps.expected_rows(r.steps), r.steps));
  // Every rank's sums: the epoch's figures are the global batch's.
  double epoch_sums[3] = {sum.loss, sum.accuracy, static_cast<double>(sum.rows)};
  dist::allreduce_sum(epoch_sums, 3, "epoch totals");
  EpochResult e;
  e.epoch = epoch;
  e.seconds = std::chrono::duration<double>(clock_type::now() - t_epoch).count();
  e.samples = static_cast<std::int64_t>(epoch_sums[2]);
  e.samples_per_s = static_cast<double>(e.samples) / e.seconds;
  e.loss = epoch_sums[0] / static_cast<double>(e.samples);
  e.accuracy = epoch_sums[1] / static_cast<double>(e.samples);
  return e;
}

/// Validation over the held-out rows in order, queued like training steps where the device can (its
/// steps leave the optimizer's step index alone); across ranks each takes every ranks-th batch, from its own.
void validate_epoch(ExecPair& val_ex, const Dataset& data, const TrainConfig& cfg, const RunShape& r, const ParamStore& store,
                    EpochResult& e) {
  std::vector<std::int64_t> val_rows(static_cast<std::size_t>(r.n_val));
  std::iota(val_rows.begin(), val_rows.end(), r.n_train);
  const StepContext ctx{cfg.seed, store.iterations};
  // A rank whose first batch lies past the held-out rows has none this epoch (few rows, many ranks).
  if (r.shard_offset < r.n_val) val_ex.bind(data, val_rows, cfg.batch, ctx, r.shard_offset, r.global_batch);
  std::int64_t mine = 0;
  for (std::int64_t begin = r.shard_offset; begin < r.n_val; begin += r.global_batch) {
    val_ex.step(data, val_rows, begin, std::min(cfg.batch, r.n_val - begin), cfg.batch, ctx);
    mine += std::min(cfg.batch, r.n_val - begin);
  }
  const StepTotals vt = val_ex.totals();
  if (vt.rows != mine) throw RuntimeFailure(fmt::format("the engine reported {} validation rows of {}", vt.rows, mine));
  double val_sums[3] = {vt.loss, vt.accuracy, static_cast<double>(vt.rows)};
  dist::allreduce_sum(val_sums, 3, "validation totals");
  if (static_cast<std::int64_t>(val_sums[2]) != r.n_val)
    throw RuntimeFailure(fmt::format("the ranks reported {} validation rows of {}", val_sums[2], r.n_val));
  e.has_validation = true;
  e.val_loss = val_sums[0] / static_cast<double>(r.n_val);
  e.val_accuracy = val_sums[1] / static_cast<double>(r.n_val);
}

/// The ranks applied the same averaged gradients: their parameters and optimizer state must be bit for bit
/// equal. A digest of the store's bytes, rank 0's against each rank's own.
void check_ranks_agree(const ParamStore& store, std::int64_t ranks) {
  std::uint32_t digest = 0;
  for (const auto& [name, t] : store.tensors()) digest = crc32c(t.buffer.data(), t.bytes(), digest);
  const std::string theirs = dist::broadcast(std::to_string(digest), "parameter check");
  double differ = theirs == std::to_string(digest) ? 0.0 : 1.0;
  dist::allreduce_sum(&differ, 1, "parameter check");
  if (differ > 0) throw RuntimeFailure(fmt::format("after training, {} of {} ranks hold parameters that differ from rank 0's", differ, ranks));
}

}  // namespace

TrainResult train(const models::ModelSpec& spec_in, const Dataset& data, const TrainConfig& cfg, TrainObserver& obs,
                  ParamStore& store) {
  // ---- Everything that can be wrong is checked before anything is written.
  const dist::World& world = dist::world();
  models::ModelSpec spec = spec_in;
  if (cfg.learning_rate) spec.adam.learning_rate = *cfg.learning_rate;
  const RunShape r = shape_run(spec, data, cfg, world);
  refuse_what_cannot_fit(spec, cfg, r);
  CheckpointMeta meta;
  const std::int64_t first_epoch = resume_or_start(spec, data, cfg, r, meta, store);
  // Rank 0 writes checkpoints and TensorBoard files; the other ranks only read a checkpoint to resume.
  const bool writer = world.rank == 0;
  if (cfg.checkpoint_dir && writer) files::ensure_writable_dir(*cfg.checkpoint_dir, "--checkpoint");
  if (cfg.logdir && writer) {
    files::ensure_writable_dir(*cfg.logdir / "train", "--logdir");
    if (r.n_val > 0) files::ensure_writable_dir(*cfg.logdir / "validation", "--logdir");
  }

  // ---- Set-up: threads, params, devices, executors (all memory is allocated here, none inside a step).
  TrainResult result;
  result.threads = cfg.threads > 0 ? cfg.threads : cpu_threads();
  set_cpu_threads(result.threads);
  result.gemm = std::string(gemm_library_name(cfg.gemm));
  result.first_epoch = first_epoch;
  result.train_rows = r.n_train;
  result.val_rows = r.n_val;
  if (!cfg.resume) store.initialize(models::param_inits(spec), ir::DType::f32, cfg.seed);
  if (first_epoch > cfg.epochs) {
    obs.on_note(fmt::format("checkpoint already holds {} epochs (--epochs {}): nothing to train", first_epoch - 1, cfg.epochs));
    return result;
  }
  std::vector<float> packed;
  const ExecutorOptions opt = executor_options(cfg, r, packed);
  const RunDevices devices = open_devices(cfg, r, world, obs);  // outlives every executor below
  if (!devices.description.empty()) result.device = devices.description;
  std::unique_ptr<EpochSteps> steps;
  if (devices.replicas.empty()) steps = std::make_unique<PairSteps>(devices, spec, data, cfg, r, store, opt);
  else steps = std::make_unique<ReplicaSteps>(devices, spec, data, cfg, store, opt);
  ExecPair val_ex;
  if (r.n_val > 0)
    val_ex = make_pair(devices.make, spec, models::Mode::eval, r.n_val >= cfg.batch ? cfg.batch : 0, r.n_val % cfg.batch, store, opt, false);
  std::size_t workspace = steps->workspace_bytes();
  for (auto* e : {val_ex.full.get(), val_ex.tail.get()})
    if (e) workspace += e->workspace_bytes();
  std::unique_ptr<EventFileWriter> tb_train, tb_val;
  if (cfg.logdir && writer) {
    tb_train = std::make_unique<EventFileWriter>(*cfg.logdir / "train");
    if (r.n_val > 0) tb_val = std::make_unique<EventFileWriter>(*cfg.logdir / "validation");
  }

  // ---- The epochs.
  std::vector<double> step_times;
  step_times.reserve(static_cast<std::size_t>(r.steps * (cfg.epochs - first_epoch + 1)));
  double train_seconds = 0;
  std::int64_t train_samples = 0, full_runs = 0;
  for (std::int64_t epoch = first_epoch; epoch <= cfg.epochs; ++epoch) {
    EpochResult e = train_epoch(*steps, cfg, r, epoch, store, obs, step_times, full_runs);
    train_seconds += e.seconds;
    train_samples += e.samples;
    if (r.n_val > 0) validate_epoch(val_ex, data, cfg, r, store, e);
    // Keras logs epoch indices from 0.
    if (tb_train) {
      tb_train->add_scalar("epoch_loss", epoch - 1, e.loss);
      tb_train->add_scalar("epoch_accuracy", epoch - 1, e.accuracy);
      tb_train->flush();
    }
    if (tb_val) {
      tb_val->add_scalar("epoch_loss", epoch - 1, e.val_loss);
      tb_val->add_scalar("epoch_accuracy", epoch - 1, e.val_accuracy);
      tb_val->flush();
    }
    if (devices.first() && (cfg.checkpoint_dir || epoch == cfg.epochs)) devices.first()->sync_to_host(store);
    if (cfg.checkpoint_dir && writer) {
      meta.epochs_done = epoch;
      meta.iterations = store.iterations;
      save_checkpoint(checkpoint_file(*cfg.checkpoint_dir), meta, store);
    }
    result.history.push_back(e);
    obs.on_epoch_end(e);
  }
  if (r.ranks > 1) check_ranks_agree(store, r.ranks);

  // ---- What the run measured.
  const auto st = stats::summarize(step_times);
  result.step_time_median_s = st.median;
  result.step_time_p10_s = st.p10;
  result.step_time_p90_s = st.p90;
  result.samples_per_s = static_cast<double>(train_samples) / train_seconds;
  result.steps = static_cast<std::int64_t>(step_times.size());
  result.peak_memory_bytes = store.bytes() + workspace;
  result.peak_rss_bytes = peak_rss();
  if (gpu::TrainDevice* d = devices.first()) {
    const AllocStats m = d->memory();
    result.gpu_reserved_bytes = m.reserved;
    result.gpu_in_use_bytes = m.in_use;
    result.gpu_peak_in_use_bytes = m.peak_in_use;
    result.loss_scale = d->loss_scale();
    result.skipped_steps = d->skipped_steps();
  }
  if (const Executor* profiled = steps->profiled(); profiled && cfg.profile) {
    result.op_profile = collect_profile(*profiled, full_runs);
    result.gemm_impls = profiled->describe();
  }
  return result;
}

}  // namespace gpuvs::engine
