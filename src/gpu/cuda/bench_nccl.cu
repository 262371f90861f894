// SPDX-License-Identifier: Apache-2.0
// All-reduce sweep through NCCL across every visible GPU in one process (ncclCommInitAll), reported as
// nccl-tests does: algbw = bytes / time, busbw = algbw * 2(n-1)/n, out of place, float sum. Waived where
// NCCL cannot be loaded.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "gpu/counting.hpp"
#include "gpu/cuda/common.hpp"
#include "gpu/cuda/nccl_library.hpp"

namespace gpuvs::gpu::cuda {

namespace {

__global__ void fill_rank(float* p, std::size_t n, int rank) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n; i += std::size_t(gridDim.x) * blockDim.x)
    p[i] = static_cast<float>((i * 7 + static_cast<std::size_t>(rank)) % 16 + 1);  // small integers: sums are exact
}

}  // namespace

BenchResult nccl_allreduce(const BenchRequest& r) {
  int count = 0;
  GPUVS_CUDA(cudaGetDeviceCount(&count));
  if (count < 2) return waived("needs two or more GPUs");
  const NcclLibrary& lib = nccl();
  if (!lib.why.empty()) return waived(lib.why);
  std::vector<ncclComm_t> comms(static_cast<std::size_t>(count));
  std::vector<int> devs(static_cast<std::size_t>(count));
  for (int i = 0; i < count; ++i) devs[static_cast<std::size_t>(i)] = i;
  nccl_check(lib.init_all(comms.data(), count, devs.data()), "ncclCommInitAll");
  struct CommGuard {
    const NcclLibrary& lib;
    std::vector<ncclComm_t>& c;
    ~CommGuard() {
      for (auto x : c) lib.destroy(x);
    }
  } cg{lib, comms};
  const std::size_t max_bytes = r.quick ? (256u << 20) : (1024u << 20);
  std::vector<std::unique_ptr<DeviceBuffer>> send, recv;
  std::vector<cudaStream_t> streams(static_cast<std::size_t>(count));
  for (int i = 0; i < count; ++i) {
    GPUVS_CUDA(cudaSetDevice(i));
    send.push_back(std::make_unique<DeviceBuffer>(max_bytes));
    recv.push_back(std::make_unique<DeviceBuffer>(max_bytes));
    fill_rank<<<256, 256>>>(send.back()->get<float>(), max_bytes / 4, i);
    GPUVS_CUDA(cudaGetLastError());
    GPUVS_CUDA(cudaStreamCreate(&streams[static_cast<std::size_t>(i)]));
  }
  struct StreamGuard {
    std::vector<cudaStream_t>& s;
    ~StreamGuard() {
      for (auto x : s) cudaStreamDestroy(x);
    }
  } sg{streams};
  auto queue_all_reduce = [&](std::size_t bytes) {
    nccl_check(lib.group_start(), "ncclGroupStart");
    for (int i = 0; i < count; ++i) {
      const auto u = static_cast<std::size_t>(i);
      nccl_check(lib.all_reduce(send[u]->get(), recv[u]->get(), bytes / 4, ncclFloat, ncclSum, comms[u], streams[u]), "ncclAllReduce");
    }
    nccl_check(lib.group_end(), "ncclGroupEnd");
  };
  auto drain = [&] {
    for (int i = 0; i < count; ++i) {
      GPUVS_CUDA(cudaSetDevice(i));
      GPUVS_CUDA(cudaStreamSynchronize(streams[static_cast<std::size_t>(i)]));
    }
  };
  auto all_reduce = [&](std::size_t bytes) {
    queue_all_reduce(bytes);
    drain();
  };
  const Reps reps = reps_for(r);
  const double factor = allreduce_bus_factor(count);
  BenchResult res;
  res.detail = "bytes  time_us  algbw_GB/s  busbw_GB/s\n";
  for (std::size_t bytes = 1u << 20; bytes <= max_bytes; bytes *= (r.quick ? 16 : 4)) {
    for (int i = 0; i < reps.warmup; ++i) all_reduce(bytes);
    std::vector<double> t_us;
    for (int i = 0; i < reps.timed; ++i) {
      const auto t0 = std::chrono::steady_clock::now();
      all_reduce(bytes);
      t_us.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
    }
    std::vector<double> sorted = t_us;
    std::nth_element(sorted.begin(), sorted.begin() + sorted.size() / 2, sorted.end());
    const double med = sorted[sorted.size() / 2];
    const double algbw = static_cast<double>(bytes) / (med * 1e-6) / 1e9;
    char line[128];
    std::snprintf(line, sizeof line, "%zu  %.1f  %.2f  %.2f\n", bytes, med, algbw, algbw * factor);
    res.detail += line;
    if (bytes * (r.quick ? 16 : 4) > max_bytes) {
      for (double t : t_us) res.samples.push_back(static_cast<double>(bytes) / (t * 1e-6) / 1e9 * factor);
      // Check: every rank holds the exact sum of all ranks' values.
      for (int i = 0; i < count; ++i) {
        for (std::size_t e : {std::size_t(0), bytes / 8, bytes / 4 - 1}) {
          float v = 0;
          GPUVS_CUDA(cudaMemcpy(&v, recv[static_cast<std::size_t>(i)]->get<float>() + e, sizeof v, cudaMemcpyDeviceToHost));
          float want = 0;
          for (int q = 0; q < count; ++q) want += static_cast<float>((e * 7 + static_cast<std::size_t>(q)) % 16 + 1);
          if (v != want) return failed("all-reduce result wrong on GPU" + std::to_string(i) + " at element " + std::to_string(e));
        }
      }
    }
  }
  // Read under load: the largest all-reduce queued eight times (the same sums into the same buffers).
  read_while_queued(
      r,
      [&] {
        for (int i = 0; i < 8; ++i) queue_all_reduce(max_bytes);
      },
      drain);
  res.note = "busbw (nccl-tests formula, " + std::to_string(count) + " GPUs) at " + mib(max_bytes) + ", float sum, out of place; " +
             nccl_version() + "; sweep in detail";
  return res;
}

}  // namespace gpuvs::gpu::cuda
