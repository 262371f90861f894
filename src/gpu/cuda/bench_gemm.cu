// SPDX-License-Identifier: Apache-2.0
// GEMM throughput through cuBLASLt for each precision the tensor cores offer, in the TN layout every
// precision supports (FP8 requires it). Inputs are random (uniform in [-1, 1); INT8 in [-64, 64]);
// the L2 cache is overwritten before every timed repetition; the algorithm is cuBLASLt's first heuristic
// choice (what frameworks use by default). The result is checked on 64 elements against a float64
// dot product of the very values the GPU read.
#include <cublasLt.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include <cmath>
#include <cstdint>
#include <string>

#include "gpu/counting.hpp"
#include "gpu/cuda/common.hpp"

namespace gpuvs::gpu::cuda {

namespace {

void lt_check(cublasStatus_t s, const char* what) {
  if (s != CUBLAS_STATUS_SUCCESS) throw CudaFailure(std::string(what) + ": cuBLAS status " + std::to_string(static_cast<int>(s)));
}
#define GPUVS_LT(call) lt_check((call), #call)

template <class T>
__device__ T from_float(float v) {
  return T(v);
}
template <>
__device__ std::int8_t from_float<std::int8_t>(float v) {
  return static_cast<std::int8_t>(__float2int_rn(v * 64.0f));
}
template <>
__device__ __half from_float<__half>(float v) {
  return __float2half_rn(v);
}
template <>
__device__ __nv_bfloat16 from_float<__nv_bfloat16>(float v) {
  return __float2bfloat16_rn(v);
}

inline double to_double(float v) { return v; }
inline double to_double(__half v) { return static_cast<double>(__half2float(v)); }
inline double to_double(__nv_bfloat16 v) { return static_cast<double>(__bfloat162float(v)); }
inline double to_double(__nv_fp8_e4m3 v) { return static_cast<double>(static_cast<float>(v)); }
inline double to_double(std::int8_t v) { return v; }
inline double to_double(std::int32_t v) { return v; }

template <class T>
__global__ void fill_signed(T* p, std::size_t n, std::uint64_t seed) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n; i += std::size_t(gridDim.x) * blockDim.x)
    p[i] = from_float<T>(signed_value(i, seed));
}

struct Precision {
  cudaDataType_t ab, cd, scale;
  cublasComputeType_t compute;
  const char* accumulate;
  double tol_sum_abs, tol_rel;  // |got - ref| <= tol_sum_abs * sum|a*b| + tol_rel * |ref|
};

template <class In, class Out>
BenchResult run_gemm(const BenchRequest& r, const Precision& p, const std::string& label) {
  GPUVS_CUDA(cudaSetDevice(r.device));
  const std::int64_t m = r.quick ? 4096 : 8192, n = m, k = m;
  const std::size_t na = static_cast<std::size_t>(k * m), nb = static_cast<std::size_t>(k * n), nd = static_cast<std::size_t>(m * n);
  DeviceBuffer a(na * sizeof(In)), b(nb * sizeof(In)), d(nd * sizeof(Out));
  int l2 = 0;
  GPUVS_CUDA(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, r.device));
  DeviceBuffer flush(std::max<std::size_t>(2 * static_cast<std::size_t>(l2), 64u << 20));
  fill_signed<In><<<1024, 256>>>(a.get<In>(), na, 11);
  fill_signed<In><<<1024, 256>>>(b.get<In>(), nb, 12);
  GPUVS_CUDA(cudaGetLastError());
  GPUVS_CUDA(cudaMemset(d.get(), 0, d.bytes()));

  cublasLtHandle_t lt = nullptr;
  GPUVS_LT(cublasLtCreate(&lt));
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t la = nullptr, lb = nullptr, ld = nullptr;
  cublasLtMatmulPreference_t pref = nullptr;
  struct Guard {
    cublasLtHandle_t& lt;
    cublasLtMatmulDesc_t& desc;
    cublasLtMatrixLayout_t &la, &lb, &ld;
    cublasLtMatmulPreference_t& pref;
    ~Guard() {
      if (pref) cublasLtMatmulPreferenceDestroy(pref);
      if (ld) cublasLtMatrixLayoutDestroy(ld);
      if (lb) cublasLtMatrixLayoutDestroy(lb);
      if (la) cublasLtMatrixLayoutDestroy(la);
      if (desc) cublasLtMatmulDescDestroy(desc);
      if (lt) cublasLtDestroy(lt);
    }
  } guard{lt, desc, la, lb, ld, pref};
  GPUVS_LT(cublasLtMatmulDescCreate(&desc, p.compute, p.scale));
  const cublasOperation_t transa = CUBLAS_OP_T, transb = CUBLAS_OP_N;
  GPUVS_LT(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA, &transa, sizeof transa));
  GPUVS_LT(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSB, &transb, sizeof transb));
  // Column-major: A is stored k x m (used transposed), B k x n, D m x n.
  GPUVS_LT(cublasLtMatrixLayoutCreate(&la, p.ab, static_cast<std::uint64_t>(k), static_cast<std::uint64_t>(m), k));
  GPUVS_LT(cublasLtMatrixLayoutCreate(&lb, p.ab, static_cast<std::uint64_t>(k), static_cast<std::uint64_t>(n), k));
  GPUVS_LT(cublasLtMatrixLayoutCreate(&ld, p.cd, static_cast<std::uint64_t>(m), static_cast<std::uint64_t>(n), m));
  const std::uint64_t ws_bytes = 64u << 20;
  DeviceBuffer ws(ws_bytes);
  GPUVS_LT(cublasLtMatmulPreferenceCreate(&pref));
  GPUVS_LT(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws_bytes, sizeof ws_bytes));
  cublasLtMatmulHeuristicResult_t heur{};
  int found = 0;
  GPUVS_LT(cublasLtMatmulAlgoGetHeuristic(lt, desc, la, lb, ld, ld, pref, 1, &heur, &found));
  if (found == 0) return failed("cuBLASLt offers no algorithm for " + label);

  const float alpha_f = 1.0f, beta_f = 0.0f;
  const std::int32_t alpha_i = 1, beta_i = 0;
  const bool int_scale = p.scale == CUDA_R_32I;
  const void* alpha = int_scale ? static_cast<const void*>(&alpha_i) : static_cast<const void*>(&alpha_f);
  const void* beta = int_scale ? static_cast<const void*>(&beta_i) : static_cast<const void*>(&beta_f);
  auto matmul = [&] {
    GPUVS_LT(cublasLtMatmul(lt, desc, alpha, a.get(), la, b.get(), lb, beta, d.get(), ld, d.get(), ld, &heur.algo,
                            ws.get(), ws_bytes, nullptr));
  };
  const Reps reps = reps_for(r);
  for (int i = 0; i < reps.warmup; ++i) matmul();
  GPUVS_CUDA(cudaDeviceSynchronize());
  const double flop = gemm_flops(static_cast<double>(m), static_cast<double>(n), static_cast<double>(k));
  BenchResult res;
  Event e0, e1;
  for (int i = 0; i < reps.timed; ++i) {
    GPUVS_CUDA(cudaMemsetAsync(flush.get(), i & 0xFF, flush.bytes()));  // evict A, B and D from L2
    GPUVS_CUDA(cudaEventRecord(e0));
    matmul();
    GPUVS_CUDA(cudaEventRecord(e1));
    res.samples.push_back(flop / (elapsed_ms(e0, e1) * 1e-3) / 1e12);
  }
  read_while_queued(
      r,
      [&] {
        for (int i = 0; i < 8; ++i) matmul();
      },
      [] {});
  GPUVS_CUDA(cudaDeviceSynchronize());

  // Self-check on 64 elements: column i of A and column j of B are contiguous, so only they are copied.
  std::vector<In> col_a(static_cast<std::size_t>(k)), col_b(static_cast<std::size_t>(k));
  int wrong = 0;
  double worst = 0;
  for (int t = 0; t < 64; ++t) {
    const std::int64_t i = static_cast<std::int64_t>(mix64(static_cast<std::uint64_t>(t), 5) % static_cast<std::uint64_t>(m));
    const std::int64_t j = static_cast<std::int64_t>(mix64(static_cast<std::uint64_t>(t), 6) % static_cast<std::uint64_t>(n));
    GPUVS_CUDA(cudaMemcpy(col_a.data(), a.get<In>() + i * k, sizeof(In) * static_cast<std::size_t>(k), cudaMemcpyDeviceToHost));
    GPUVS_CUDA(cudaMemcpy(col_b.data(), b.get<In>() + j * k, sizeof(In) * static_cast<std::size_t>(k), cudaMemcpyDeviceToHost));
    Out got_raw;
    GPUVS_CUDA(cudaMemcpy(&got_raw, d.get<Out>() + i + j * m, sizeof(Out), cudaMemcpyDeviceToHost));
    double ref = 0, sum_abs = 0;
    for (std::int64_t q = 0; q < k; ++q) {
      const double prod = to_double(col_a[static_cast<std::size_t>(q)]) * to_double(col_b[static_cast<std::size_t>(q)]);
      ref += prod;
      sum_abs += std::fabs(prod);
    }
    const double got = to_double(got_raw);
    const double err = std::fabs(got - ref), tol = p.tol_sum_abs * sum_abs + p.tol_rel * std::fabs(ref);
    worst = std::max(worst, err / std::max(tol, 1e-30));
    if (!(err <= tol)) ++wrong;
  }
  if (wrong) return failed(std::to_string(wrong) + " of 64 sampled elements of the " + label + " GEMM differ from float64");
  char note[256];
  std::snprintf(note, sizeof note, "%lld^3 TN, %s, %s accumulate; L2 flushed per repetition; 64 elements checked (worst %.0f%% of tolerance)",
                static_cast<long long>(m), label.c_str(), p.accumulate, 100 * worst);
  res.note = note;
  return res;
}

}  // namespace

BenchResult gemm(const BenchRequest& r) {
  int major = 0, minor = 0;
  GPUVS_CUDA(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, r.device));
  GPUVS_CUDA(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, r.device));
  const int cc = major * 10 + minor;
  const std::string& k = r.key;
  if (k == "cuda.gemm.fp32")
    return run_gemm<float, float>(r, {CUDA_R_32F, CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F, "FP32", 2e-6, 1e-6}, "FP32 in, FP32 out");
  if (k == "cuda.gemm.tf32") {
    if (cc < 80) return waived("TF32 tensor cores need compute capability 8.0 (this GPU: " + std::to_string(major) + "." + std::to_string(minor) + ")");
    // Inputs are rounded to TF32 (10-bit mantissa) inside the GEMM, so the tolerance covers that rounding.
    return run_gemm<float, float>(r, {CUDA_R_32F, CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F_FAST_TF32, "FP32", 1.5e-3, 1e-6},
                                  "FP32 in (TF32 math), FP32 out");
  }
  if (k == "cuda.gemm.fp16")
    return run_gemm<__half, __half>(r, {CUDA_R_16F, CUDA_R_16F, CUDA_R_32F, CUBLAS_COMPUTE_32F, "FP32", 1e-5, 1.0 / 1024}, "FP16 in, FP16 out");
  if (k == "cuda.gemm.bf16") {
    if (cc < 80) return waived("BF16 tensor cores need compute capability 8.0");
    return run_gemm<__nv_bfloat16, __nv_bfloat16>(r, {CUDA_R_16BF, CUDA_R_16BF, CUDA_R_32F, CUBLAS_COMPUTE_32F, "FP32", 1e-5, 1.0 / 128},
                                                  "BF16 in, BF16 out");
  }
  if (k == "cuda.gemm.fp8") {
    if (cc < 89) return waived("FP8 tensor cores need compute capability 8.9 (Ada) or 9.0 (Hopper)");
    // Hopper's FP8 MMA accumulates with fewer than 32 bits internally, so the sum tolerance is wider.
    return run_gemm<__nv_fp8_e4m3, __nv_bfloat16>(r, {CUDA_R_8F_E4M3, CUDA_R_16BF, CUDA_R_32F, CUBLAS_COMPUTE_32F, "FP32", 5e-4, 1.0 / 128},
                                                  "FP8 E4M3 in, BF16 out");
  }
  if (k == "cuda.gemm.int8") {
    if (cc < 75) return waived("INT8 tensor cores need compute capability 7.5");
    return run_gemm<std::int8_t, std::int32_t>(r, {CUDA_R_8I, CUDA_R_32I, CUDA_R_32I, CUBLAS_COMPUTE_32I, "INT32", 0, 0},
                                               "INT8 in, INT32 out (exact)");
  }
  return failed("unknown GEMM key " + k);
}

}  // namespace gpuvs::gpu::cuda
