// SPDX-License-Identifier: Apache-2.0
// Executors run a graph on a device. The CPU executor is the oracle the other backends are checked against.
//
// Contract: an executor is built once for a graph (all memory planned and allocated, GEMM primitives
// created); `run` then executes the whole graph with no allocation. Params and optimizer slots live in
// the ParamStore passed at construction and are updated in place by adam_update nodes.
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "engine/param_store.hpp"
#include "ir/ir.hpp"

namespace gpuvs::engine {

struct Dataset;  // engine/data.hpp

enum class GemmLibrary { onednn, openblas };
std::string_view gemm_library_name(GemmLibrary g);

/// A parameter's gradient, as an optimizer step is about to read it.
struct GradientSpan {
  float* data = nullptr;
  std::int64_t size = 0;
};

struct ExecutorOptions {
  GemmLibrary gemm = GemmLibrary::onednn;
  bool profile = false;  // time every node (steady clock), for per-op calibration
  /// Data parallel across processes: called once per training step with every gradient, after backward and
  /// before the first Adam update, to replace them in place (by their average over ranks). CPU executor only.
  std::function<void(const std::vector<GradientSpan>&)> reduce_gradients;
};

/// What varies between steps: the RNG seed and the optimizer step index (Keras `iterations` before it).
struct StepContext {
  std::uint64_t seed = 0;
  std::int64_t iteration = 0;
  /// This executor's first row within the step's whole batch (a rank's shard starts past the others'):
  /// dropout draws the masks of those rows, as one process running the whole batch would.
  std::int64_t row_offset = 0;
};

/// Running sums over the training steps run with Executor::run_accumulate since reset_totals().
struct StepTotals {
  double loss = 0;      // sum over steps of loss x rows
  double accuracy = 0;  // sum over steps of accuracy x rows
  std::int64_t rows = 0;
  std::int64_t steps = 0;
  std::int64_t first_nonfinite_iteration = -1;  // StepContext::iteration of the first step whose loss was inf/NaN
  double nonfinite_loss = 0;                    // that step's loss
  /// Sums; the earlier non-finite step wins.
  StepTotals& operator+=(const StepTotals& o);
};

class Executor {
 public:
  virtual ~Executor() = default;
  /// Host buffer of an input node, to fill before `run` (numel x dtype bytes).
  virtual void* input(std::string_view name) = 0;
  virtual void run(const StepContext& ctx) = 0;
  /// A scalar output ("loss", "accuracy") of the last run.
  virtual double scalar(std::string_view output) const = 0;
  /// Any node's value from the last run, converted to double (tests, debugging).
  virtual std::vector<double> read(ir::NodeId id) const = 0;
  /// Bytes this executor allocated for activations, gradients and saved tensors (not params).
  virtual std::size_t workspace_bytes() const = 0;
  /// Seconds spent per node over all profiled runs (empty unless ExecutorOptions::profile).
  virtual const std::vector<double>& node_seconds() const = 0;
  /// Which library implementation each matmul got (diagnostics).
  virtual std::string describe() const = 0;
  virtual const ir::Graph& graph() const = 0;
  /// Optional fast path: fill the "x" and "labels" inputs with these rows of `data` itself (a GPU keeps
  /// the data set on the device and gathers on it). False: the caller fills input() buffers instead.
  /// An executor that accepted once must be given every later batch this way.
  virtual bool gather_rows(const Dataset& data, const std::int64_t* rows, std::int64_t count) {
    (void)data, (void)rows, (void)count;
    return false;
  }

  // ---- Epochs (training or validation): steps that report into running totals, so a GPU can queue them.
  /// Binds the steps that follow to an epoch's row order: the k-th run_accumulate after this
  /// call trains on rows order[offset + k*stride, ... + rows) of `data` (`count` = the order's length;
  /// it must stay valid until the next bind) and the caller loads no inputs. `first` is the step that
  /// comes next. False when this graph has no "x"/"labels" inputs shaped for `data`.
  virtual bool bind_epoch(const Dataset& data, const std::int64_t* order, std::int64_t count, std::int64_t offset,
                          std::int64_t stride, const StepContext& first);
  /// One step of `rows` rows (the graph's batch: training, or evaluation for an eval graph) whose
  /// "loss" and "accuracy" are added to the running totals. An asynchronous executor may return before
  /// the step has run; successive training steps carry successive iterations.
  virtual void run_accumulate(const StepContext& ctx, std::int64_t rows);
  /// Waits for every queued step and returns the totals since the last reset_totals().
  virtual StepTotals totals();
  virtual void reset_totals();
  /// True when run_accumulate queues the step and returns early (a bound GPU executor): callers ask for
  /// totals() only every few steps, since each call drains the queue.
  virtual bool asynchronous() const { return false; }

 protected:
  StepTotals host_totals_;  // the synchronous path's sums

 private:
  struct Binding {
    const Dataset* data = nullptr;
    const std::int64_t* order = nullptr;
    std::int64_t count = 0, offset = 0, stride = 0, cursor = 0;
  } binding_;
};

/// Fills `ex`'s "x" and "labels" inputs with rows `rows[0..count)` of `data` (or lets it gather them itself).
void load_rows(Executor& ex, const Dataset& data, const std::int64_t* rows, std::int64_t count);

std::unique_ptr<Executor> make_cpu_executor(const ir::Graph& g, ParamStore& store, const ExecutorOptions& opt);
/// The bytes the CPU executor's arena for `g` will hold (every intermediate and saved tensor), computed from
/// the graph's shapes without allocating.
std::size_t cpu_workspace_bytes(const ir::Graph& g);

/// Sets the thread count of every CPU math library (OpenMP, oneDNN, OpenBLAS).
void set_cpu_threads(int threads);
int cpu_threads();

}  // namespace gpuvs::engine
