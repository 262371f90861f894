// SPDX-License-Identifier: Apache-2.0
// One graph priced op by op (a roofline per op): every node on a catalog GPU under a precision policy. Whole workloads
// (batch, parallelism, serving, memory) are perf/predict.hpp's.
//   time(op) = max(matrix FLOPs / (matrix peak x GEMM efficiency), vector FLOPs / (vector peak x eff),
//                  bytes / (DRAM bandwidth x memory efficiency)) + launch cost
// Efficiencies are size-dependent (wave quantization, K ramp, transfer size), shared per device class.
#pragma once
#include <string>
#include <vector>

#include "catalog/catalog.hpp"
#include "ir/ir.hpp"
#include "perf/efficiency.hpp"
#include "perf/precision.hpp"

namespace gpuvs::perf {

/// What limits an op. `latency`: a memory-bound kernel too small to stream at the card's rate, whose time is
/// the ramp and tail of its few bytes (mem_half_bytes) more than the bytes themselves: more bandwidth barely
/// helps it, fewer or fused kernels do.
enum class Bound { compute, memory, latency, launch };
std::string_view bound_name(Bound b);

struct OpTime {
  ir::NodeId id = ir::kNone;
  double seconds = 0;
  double compute_s = 0, memory_s = 0;
  Bound bound = Bound::launch;
  double efficiency = 0;  // of the limiting unit
};

struct StepPrediction {
  double step_s = 0;
  double compute_s = 0, memory_s = 0, latency_s = 0, launch_s = 0;  // time by what bounds each op (step_s is their sum)
  double matrix_flops = 0, vector_flops = 0, bytes = 0;
  int kernels = 0;
  std::vector<OpTime> ops;  // one per node that does work
};

/// How convolution activations are laid out in memory. Tensor-core convolutions run on channels-last (NHWC)
/// data; with channels-first (NCHW, PyTorch's default layout) cuDNN transposes each convolution's input and
/// output, two extra memory-bound kernels per convolution pass.
enum class ConvLayout { nhwc, nchw };

/// Kernels a framework fuses that eager code runs apart (a framework profile's `fuses`, perf/framework.hpp). Each
/// removes memory-bound kernels around FP8 GEMMs the way Transformer Engine with Megatron Core runs them.
struct KernelFusion {
  bool shared_input_cast = false;  // GEMMs that read one input (the fused QKV, the fused gate/up) cast it to FP8 once
  bool norm_cast = false;          // a norm writes the FP8 input (and its transpose) of the GEMMs it feeds itself
                                   // (TE's LayerNormLinear / LayerNormMLP): no cast kernel for that input
  bool activation_cast = false;    // an activation between two GEMMs writes the FP8 input of the one it feeds, and
                                   // its gradient kernel writes the FP8 output gradients of the ones that fed it; a
                                   // gated one's gradient is one kernel for both halves, in any precision (TE's
                                   // fused SwiGLU/GeLU with cast-transpose)
  bool scale_mask_softmax = false; // attention's scale and mask run inside the softmax kernel, forward and backward
                                   // (Megatron's FusedScaleMaskSoftmax)
  bool dropout_add = false;        // a dropout and the residual add after it are one kernel (Megatron's
                                   // bias-dropout-add): its output is neither written nor read back
  bool add_norm = false;           // a residual add whose only reader is a norm runs inside the norm's kernel
                                   // (TensorRT's skip-layernorm): the sum is neither written nor read back
  bool gemm_activation = false;    // an activation whose input is a GEMM's output read by nothing else runs in the
                                   // GEMM's epilogue: the pre-activation is neither written nor read back
};

/// Prices `g` (built with plan.activations as its dtype) on `gpu`. `params` overrides the class defaults.
StepPrediction predict_graph(const ir::Graph& g, const catalog::Gpu& gpu, const PrecisionPlan& plan,
                             const EfficiencyParams& params, ConvLayout layout = ConvLayout::nhwc, const KernelFusion& fusion = {});
StepPrediction predict_graph(const ir::Graph& g, const catalog::Gpu& gpu, const PrecisionPlan& plan);

/// The share of a convolution's direct multiply count its algorithm does: 16/36 for 3x3 stride-1 FP32
/// convolutions on CUDA cores (cuDNN's Winograd F(2x2, 3x3)), 1 otherwise (implicit GEMM, and any other op).
double conv_flop_factor(const ir::Graph& g, const ir::Node& n, const PrecisionPlan& plan);

/// GEMM dimensions of a matrix op (matmul, batch_matmul, conv and its gradients), for waves and ramps.
GemmDims gemm_dims(const ir::Graph& g, const ir::Node& n);

}  // namespace gpuvs::perf
