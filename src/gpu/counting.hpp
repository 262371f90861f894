// SPDX-License-Identifier: Apache-2.0
// How the GPU benchmarks count work, shared by the plugin (which measures) and the tests (which check
// the conventions without a GPU). GB = 1e9 bytes; FLOP counts are for dense math.
#pragma once
#include <string_view>

namespace gpuvs::gpu {

/// Bytes credited to one pass of a memory benchmark over an array of `array_bytes`: copies (kernel or
/// cudaMemcpy within the device) count read + write, as STREAM does, so they compare with the memory's
/// spec; read, write, host<->device and peer copies count the bytes once.
constexpr double bytes_counted(std::string_view key, double array_bytes) {
  return key == "cuda.mem.copy" || key == "cuda.memcpy.d2d" ? 2 * array_bytes : array_bytes;
}

/// A dense m x n x k GEMM: one multiply and one add per inner-product term.
constexpr double gemm_flops(double m, double n, double k) { return 2 * m * n * k; }

/// nccl-tests' all-reduce bus-bandwidth factor: busbw = algbw * 2(n-1)/n.
constexpr double allreduce_bus_factor(int ranks) { return ranks > 0 ? 2.0 * (ranks - 1) / ranks : 0; }

}  // namespace gpuvs::gpu
