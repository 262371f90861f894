// SPDX-License-Identifier: Apache-2.0
// Device memory a training step or an inference pass needs: weights, gradients and optimizer state by
// precision regime, the activations the backward pass keeps (read off the graph), a transient working set,
// and the runtime's own context; compared against the card's usable capacity.
#pragma once
#include <cstdint>
#include <vector>

#include "catalog/catalog.hpp"
#include "ir/ir.hpp"
#include "perf/precision.hpp"

namespace gpuvs::perf {

struct MemoryEstimate {
  double weights_bytes = 0, gradients_bytes = 0, optimizer_bytes = 0;
  double activations_bytes = 0;  // tensors saved by the forward pass for the backward pass
  double transient_bytes = 0;    // what else is live at the step's peak (peak_live_bytes less the saved tensors)
  double runtime_bytes = 0;      // CUDA context, library workspaces
  double fragmentation_bytes = 0;
  double peak_bytes = 0;
  double capacity_bytes = 0;     // usable: the card's memory less what the driver keeps
  bool fits = false;
};

/// Bytes per parameter for weights, gradients and Adam state under a precision regime (training):
/// fp32/tf32 4+4+8 = 16; AMP (ZeRO accounting: fp16/bf16 weights and grads, fp32 master, m, v) 2+2+12 = 16;
/// pure bf16/fp16 (half-precision Adam state) 2+2+4 = 8.
struct ParamBytes {
  double weights = 0, gradients = 0, optimizer = 0;
};
ParamBytes param_bytes(const PrecisionPlan& plan, bool training);

/// `frozen_params` (LoRA's base model) hold weights only, `frozen_bytes_per_param` each (2 for 16-bit,
/// 0.516 for QLoRA's NF4 with double-quantised block scales).
MemoryEstimate estimate_memory(const ir::Graph& g, std::int64_t params, const PrecisionPlan& plan, bool training,
                               const catalog::Gpu& gpu, std::int64_t frozen_params = 0,
                               double frozen_bytes_per_param = 0);
/// Recomputes allocator slack, peak and fit from the parts (after a caller changed a part: sharding,
/// recompute, a KV cache).
void update_peak(MemoryEstimate& m);
/// What a process can allocate of `bytes` of device memory (a card's, or a MIG slice's): the rest the driver
/// and ECC keep. Every fit check (training, the advisor's serving slices) measures against this.
double usable_device_bytes(double bytes);
/// What the backward pass keeps of one forward node: its output where a backward node reads it, and the side data a
/// backward kernel reads instead (a dropout's 1-byte mask, a norm's FP32 mean and inverse deviation, a max pool's
/// int64 indices, a loss's FP32 probabilities).
struct SavedTensor {
  ir::NodeId id = ir::kNone;
  double bytes = 0;
};
/// The forward pass's tensors the backward pass keeps, in node order: each forward output a backward node takes as
/// an input (views resolved to their storage), and the side data of the forward node a backward node refers to. A
/// reference alone keeps no output: a batch norm's backward reads its input and statistics, not its output (PyTorch's
/// and cuDNN's kernels), so a BN followed by a ReLU keeps the convolution's output and the ReLU's, not the BN's; a
/// dropout before a residual add keeps its mask, not its output.
std::vector<SavedTensor> saved_tensors(const ir::Graph& g);
/// The most bytes of the step's own tensors live at once, the graph run in node order (forward, backward) as an
/// eager framework frees memory: each tensor from the node that writes it to its last reader (a view keeps its
/// storage alive; a backward kernel's side data lives from its forward node to that kernel). Parameters, constants,
/// the parameters' gradients (MemoryEstimate's gradients) and the optimizer are not counted. A training step peaks
/// where the backward pass has freed some saved tensors and holds the gradients it is computing: a CNN at the start
/// of its backward pass (its largest gradients come last, when most of what they needed is freed).
double peak_live_bytes(const ir::Graph& g);

}  // namespace gpuvs::perf
