// SPDX-License-Identifier: Apache-2.0
// A planned GEMM with a fused epilogue: C = act(op(A) . op(B) + bias), row-major, op = optional transpose.
// Planned once (library primitive, scratchpad) and run many times with no allocation.
// f32 runs through oneDNN (matmul primitive with bias and eltwise post-op) or OpenBLAS (sgemm + epilogue
// loop); f64 (the gradient-check oracle) through OpenBLAS dgemm; bf16 inputs (f32 bias and output) through
// oneDNN only.
#pragma once
#include <cstdint>
#include <memory>
#include <string>

#include "engine/executor.hpp"
#include "ir/ir.hpp"

namespace gpuvs::engine::cpu {

struct GemmShape {
  std::int64_t m = 0, n = 0, k = 0;
  bool trans_a = false, trans_b = false;
};

class GemmPlan {
 public:
  GemmPlan(GemmLibrary lib, ir::DType dtype, const GemmShape& shape, const void* a, const void* b,
           const void* bias, void* c, ir::Act act);
  ~GemmPlan();
  GemmPlan(const GemmPlan&) = delete;
  GemmPlan& operator=(const GemmPlan&) = delete;
  void run();
  /// Library and implementation chosen (e.g. "onednn:brg:avx512_core").
  std::string impl() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace gpuvs::engine::cpu
