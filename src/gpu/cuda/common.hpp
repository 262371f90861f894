// SPDX-License-Identifier: Apache-2.0
// Shared helpers of the CUDA plugin: error checks that throw with the call that failed, RAII device and
// host buffers, a deterministic never-zero data generator usable on host and device (so self-checks can
// recompute any element), and the repetition counts every GPU benchmark uses.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "gpu/plugin_api.hpp"

namespace gpuvs::gpu::cuda {

/// A CUDA call failed: the benchmark is reported FAILED with this text.
struct CudaFailure : std::runtime_error {
  using std::runtime_error::runtime_error;
};

inline void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw CudaFailure(std::string(what) + ": " + cudaGetErrorString(e));
}
#define GPUVS_CUDA(call) ::gpuvs::gpu::cuda::check((call), #call)

class DeviceBuffer {
 public:
  explicit DeviceBuffer(std::size_t bytes) : bytes_(bytes) { GPUVS_CUDA(cudaMalloc(&p_, bytes)); }
  ~DeviceBuffer() { cudaFree(p_); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  template <class T = void>
  T* get() const { return static_cast<T*>(p_); }
  std::size_t bytes() const { return bytes_; }

 private:
  void* p_ = nullptr;
  std::size_t bytes_;
};

class PinnedBuffer {
 public:
  explicit PinnedBuffer(std::size_t bytes) { GPUVS_CUDA(cudaMallocHost(&p_, bytes)); }
  ~PinnedBuffer() { cudaFreeHost(p_); }
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;
  template <class T = void>
  T* get() const { return static_cast<T*>(p_); }

 private:
  void* p_ = nullptr;
};

class Event {
 public:
  Event() { GPUVS_CUDA(cudaEventCreate(&e_)); }
  ~Event() { cudaEventDestroy(e_); }
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  operator cudaEvent_t() const { return e_; }

 private:
  cudaEvent_t e_ = nullptr;
};

/// Milliseconds between two recorded events (synchronises on the second).
inline double elapsed_ms(const Event& a, const Event& b) {
  GPUVS_CUDA(cudaEventSynchronize(b));
  float ms = 0;
  GPUVS_CUDA(cudaEventElapsedTime(&ms, a, b));
  return ms;
}

/// splitmix64: element i of stream `seed` -> 64 random bits. Same on host and device.
__host__ __device__ inline std::uint64_t mix64(std::uint64_t i, std::uint64_t seed) {
  std::uint64_t z = i * 0x9E3779B97F4A7C15ull + seed * 0xD1B54A32D192ED03ull + 0x632BE59BD9B4E019ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
/// Uniform in [0.5, 1.5): random and never zero, so a kernel that skips work cannot pass a check.
__host__ __device__ inline float unit_value(std::uint64_t i, std::uint64_t seed) {
  return 0.5f + static_cast<float>(mix64(i, seed) >> 40) * (1.0f / 16777216.0f);
}
/// Uniform in [-1, 1).
__host__ __device__ inline float signed_value(std::uint64_t i, std::uint64_t seed) {
  return -1.0f + static_cast<float>(mix64(i, seed) >> 40) * (2.0f / 16777216.0f);
}

struct Reps {
  int warmup, timed;
};
inline Reps reps_for(const BenchRequest& r) { return r.quick ? Reps{2, 8} : Reps{3, 20}; }

inline BenchResult failed(const std::string& why) {
  BenchResult r;
  r.status = "FAILED";
  r.note = why;
  return r;
}
inline BenchResult waived(const std::string& why) {
  BenchResult r;
  r.status = "waived";
  r.note = why;
  return r;
}

/// Reads clocks, power and throttle reasons (r.while_busy) while the GPU works, not after it went idle:
/// `queue` enqueues asynchronous work (kernels, async copies, collectives) and returns; the reading is
/// taken with that work in flight, then `drain` waits for it.
template <class Queue, class Drain>
void read_while_queued(const BenchRequest& r, Queue&& queue, Drain&& drain) {
  if (!r.while_busy) return;
  queue();
  r.while_busy();
  drain();
}

/// As read_while_queued for work the host thread waits on (pageable copies are synchronous): `work` runs
/// on a worker thread bound to `device`, and the reading is taken once it has started. The worker's error,
/// if any, is rethrown here.
void read_while_blocking(const BenchRequest& r, int device, const std::function<void()>& work);

/// GB (1e9 bytes) formatting helper for notes.
std::string mib(std::size_t bytes);

// The benchmarks, one function per key family (bench_*.cu).
BenchResult mem_kernel(const BenchRequest& r);        // cuda.mem.read | write | copy
BenchResult memcpy_d2d(const BenchRequest& r);        // cuda.memcpy.d2d
BenchResult memcpy_host(const BenchRequest& r);       // cuda.memcpy.{h2d,d2h}.{pinned,pageable}
BenchResult p2p_copy(const BenchRequest& r);          // cuda.p2p.copy
BenchResult launch(const BenchRequest& r);            // cuda.launch.latency | async, cuda.graph.launch
BenchResult gemm(const BenchRequest& r);              // cuda.gemm.{fp32,tf32,fp16,bf16,fp8,int8}
BenchResult nccl_allreduce(const BenchRequest& r);    // cuda.nccl.allreduce
std::string nccl_version();                            // "NCCL 2.x.y" or why it is absent
/// The cluster benchmark's NCCL group member (nccl_group_bench.cu): GPU `device` as `rank` of `size`.
std::unique_ptr<RankCollectives> open_rank_collectives(int device, const std::string& unique_id, int rank, int size);

}  // namespace gpuvs::gpu::cuda
