// Executors run a graph on a device. The CPU executor is the oracle the other backends are checked against.
//
// Contract: an executor is built once for a graph (all memory planned and allocated, GEMM primitives
// created); `run` then executes the whole graph with no allocation. Params and optimizer slots live in
// the ParamStore passed at construction and are updated in place by adam_update nodes.
#pragma once
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "engine/param_store.hpp"
#include "graph/ir.hpp"

namespace gpuvs::engine {

struct Dataset;  // engine/data.hpp

enum class GemmLibrary { onednn, openblas };
std::string_view gemm_library_name(GemmLibrary g);

struct ExecutorOptions {
  GemmLibrary gemm = GemmLibrary::onednn;
  bool profile = false;  // time every node (steady clock), for per-op calibration
};

/// What varies between steps: the RNG seed and the optimizer step index (Keras `iterations` before it).
struct StepContext {
  std::uint64_t seed = 0;
  std::int64_t iteration = 0;
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
  virtual std::vector<double> read(graph::NodeId id) const = 0;
  /// Bytes this executor allocated for activations, gradients and saved tensors (not params).
  virtual std::size_t workspace_bytes() const = 0;
  /// Seconds spent per node over all profiled runs (empty unless ExecutorOptions::profile).
  virtual const std::vector<double>& node_seconds() const = 0;
  /// Which library implementation each matmul got (diagnostics).
  virtual std::string describe() const = 0;
  virtual const graph::Graph& graph() const = 0;
  /// Optional fast path: fill the "x" and "labels" inputs with these rows of `data` itself (a GPU keeps
  /// the data set on the device and gathers on it). False: the caller fills input() buffers instead.
  /// An executor that accepted once must be given every later batch this way.
  virtual bool gather_rows(const Dataset& data, const std::int64_t* rows, std::int64_t count) {
    (void)data, (void)rows, (void)count;
    return false;
  }
};

std::unique_ptr<Executor> make_cpu_executor(const graph::Graph& g, ParamStore& store, const ExecutorOptions& opt);

/// Sets the thread count of every CPU math library (OpenMP, oneDNN, OpenBLAS).
void set_cpu_threads(int threads);
int cpu_threads();

}  // namespace gpuvs::engine
