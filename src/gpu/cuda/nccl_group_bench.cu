// SPDX-License-Identifier: Apache-2.0
// The cluster benchmark's NCCL side (`mpirun -np N gpuvs bench` with a GPU per rank): this rank's GPU in a
// group across processes, timing all-reduce, all-gather and reduce-scatter as nccl-tests does (out of
// place, float, sum) and send/recv between a pair. Every result is checked element by element on the GPU
// against the pattern each rank can recompute: (rank + 1) * (1 + i % 7) at element i of the whole buffer,
// small whole numbers, so every sum over ranks is exact in float.
#include <algorithm>
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "gpu/cuda/common.hpp"
#include "gpu/cuda/nccl_library.hpp"

namespace gpuvs::gpu::cuda {

namespace {

__global__ void fill_pattern(float* p, std::int64_t n, std::int64_t first, int rank) {
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < n; i += std::int64_t(gridDim.x) * blockDim.x)
    p[i] = static_cast<float>((rank + 1) * (1 + (first + i) % 7));
}

/// Counts the elements of `got` (n of them, the first at whole-buffer index `first`) that differ from the
/// op's result: a sum over ranks (ranks_sum = 1 + 2 + ... + size) or, for all-gather, the owner's values.
__global__ void count_wrong(const float* got, std::int64_t n, std::int64_t first, int op, std::int64_t per_rank, float ranks_sum,
                            unsigned long long* wrong) {
  unsigned long long mine = 0;
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < n; i += std::int64_t(gridDim.x) * blockDim.x) {
    const std::int64_t at = first + i;
    const float want = op == static_cast<int>(GroupOp::allgather) ? static_cast<float>((at / per_rank + 1) * (1 + at % 7))
                                                                   : static_cast<float>(1 + at % 7) * ranks_sum;
    mine += got[i] != want;
  }
  if (mine) atomicAdd(wrong, mine);
}

class NcclRankCollectives final : public RankCollectives {
 public:
  NcclRankCollectives(int device, const std::string& unique_id, int rank, int size) : device_(device), rank_(rank), size_(size) {
    GPUVS_CUDA(cudaSetDevice(device));
    comm_ = join_group(unique_id, rank, size);
    GPUVS_CUDA(cudaStreamCreate(&stream_));
    GPUVS_CUDA(cudaMalloc(&wrong_, sizeof(unsigned long long)));
    cudaDeviceProp prop{};
    GPUVS_CUDA(cudaGetDeviceProperties(&prop, device));
    name_ = prop.name;
  }
  ~NcclRankCollectives() override {
    cudaSetDevice(device_);
    nccl().destroy(comm_);
    cudaStreamDestroy(stream_);
    cudaFree(wrong_);
    cudaFree(send_);
    cudaFree(recv_);
  }

  std::vector<double> time(GroupOp op, std::int64_t count, int warmup, int iterations, std::int64_t& wrong) override {
    GPUVS_CUDA(cudaSetDevice(device_));
    if (count < size_ || count % size_ != 0)
      throw CudaFailure("the collective's " + std::to_string(count) + " floats do not split evenly over " + std::to_string(size_) + " ranks");
    const std::int64_t per_rank = count / size_;
    const std::int64_t send_n = op == GroupOp::allgather ? per_rank : count, recv_n = op == GroupOp::reduce_scatter ? per_rank : count;
    const std::int64_t send_first = op == GroupOp::allgather ? rank_ * per_rank : 0, recv_first = op == GroupOp::reduce_scatter ? rank_ * per_rank : 0;
    ensure(send_, send_bytes_, static_cast<std::size_t>(send_n) * 4);
    ensure(recv_, recv_bytes_, static_cast<std::size_t>(recv_n) * 4);
    fill_pattern<<<256, 256, 0, stream_>>>(send_, send_n, send_first, rank_);
    GPUVS_CUDA(cudaGetLastError());
    GPUVS_CUDA(cudaMemsetAsync(recv_, 0, static_cast<std::size_t>(recv_n) * 4, stream_));
    const NcclLibrary& lib = nccl();
    auto once = [&] {
      switch (op) {
        case GroupOp::allreduce:
          nccl_check(lib.all_reduce(send_, recv_, static_cast<std::size_t>(count), ncclFloat, ncclSum, comm_, stream_), "ncclAllReduce");
          break;
        case GroupOp::allgather:
          nccl_check(lib.all_gather(send_, recv_, static_cast<std::size_t>(per_rank), ncclFloat, comm_, stream_), "ncclAllGather");
          break;
        case GroupOp::reduce_scatter:
          nccl_check(lib.reduce_scatter(send_, recv_, static_cast<std::size_t>(per_rank), ncclFloat, ncclSum, comm_, stream_),
                     "ncclReduceScatter");
          break;
      }
      GPUVS_CUDA(cudaStreamSynchronize(stream_));
    };
    for (int i = 0; i < warmup; ++i) once();
    std::vector<double> seconds;
    for (int i = 0; i < iterations; ++i) {
      const auto t0 = std::chrono::steady_clock::now();
      once();
      seconds.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
    GPUVS_CUDA(cudaMemsetAsync(wrong_, 0, sizeof(unsigned long long), stream_));
    const float ranks_sum = static_cast<float>(size_) * static_cast<float>(size_ + 1) / 2.0f;
    count_wrong<<<256, 256, 0, stream_>>>(recv_, recv_n, recv_first, static_cast<int>(op), per_rank, ranks_sum, wrong_);
    GPUVS_CUDA(cudaGetLastError());
    unsigned long long w = 0;
    GPUVS_CUDA(cudaMemcpyAsync(&w, wrong_, sizeof w, cudaMemcpyDeviceToHost, stream_));
    GPUVS_CUDA(cudaStreamSynchronize(stream_));
    wrong = static_cast<std::int64_t>(w);
    return seconds;
  }

  double send_recv(int a, int b, std::int64_t bytes, int iterations) override {
    if (rank_ != a && rank_ != b) return 0;
    GPUVS_CUDA(cudaSetDevice(device_));
    ensure(send_, send_bytes_, static_cast<std::size_t>(bytes));
    ensure(recv_, recv_bytes_, static_cast<std::size_t>(bytes));
    const NcclLibrary& lib = nccl();
    const int peer = rank_ == a ? b : a;
    const auto n = static_cast<std::size_t>(bytes);
    auto send = [&] {
      nccl_check(lib.send(send_, n, ncclChar, peer, comm_, stream_), "ncclSend");
      GPUVS_CUDA(cudaStreamSynchronize(stream_));
    };
    auto recv = [&] {
      nccl_check(lib.recv(recv_, n, ncclChar, peer, comm_, stream_), "ncclRecv");
      GPUVS_CUDA(cudaStreamSynchronize(stream_));
    };
    std::vector<double> half;
    for (int i = 0; i < iterations + 1; ++i) {  // the first round trip warms the connection up
      const auto t0 = std::chrono::steady_clock::now();
      if (rank_ == a) {
        send();
        recv();
      } else {
        recv();
        send();
      }
      if (i > 0) half.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / 2);
    }
    std::nth_element(half.begin(), half.begin() + static_cast<std::ptrdiff_t>(half.size() / 2), half.end());
    return half[half.size() / 2];
  }

  std::string describe() const override { return nccl_version() + ", cuda:" + std::to_string(device_) + " " + name_; }

 private:
  static void ensure(float*& p, std::size_t& have, std::size_t bytes) {
    if (bytes <= have) return;
    cudaFree(p);
    p = nullptr;
    have = 0;
    GPUVS_CUDA(cudaMalloc(reinterpret_cast<void**>(&p), bytes));
    have = bytes;
  }

  int device_, rank_, size_;
  ncclComm_t comm_ = nullptr;
  cudaStream_t stream_ = nullptr;
  float *send_ = nullptr, *recv_ = nullptr;
  std::size_t send_bytes_ = 0, recv_bytes_ = 0;
  unsigned long long* wrong_ = nullptr;
  std::string name_;
};

}  // namespace

std::unique_ptr<RankCollectives> open_rank_collectives(int device, const std::string& unique_id, int rank, int size) {
  return std::make_unique<NcclRankCollectives>(device, unique_id, rank, size);
}

}  // namespace gpuvs::gpu::cuda
