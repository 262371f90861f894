// SPDX-License-Identifier: Apache-2.0
// Kernel launch cost: the round trip of one launch and synchronize, the per-kernel cost of back-to-back
// asynchronous launches, and the per-kernel cost inside a replayed CUDA graph (the "compiled step" path).
// All host-timed in microseconds; every launch increments a counter, which is checked at the end.
#include <chrono>
#include <string>

#include "gpu/cuda/common.hpp"

namespace gpuvs::gpu::cuda {

namespace {

__global__ void tick(unsigned long long* counter) {
  if (threadIdx.x == 0) atomicAdd(counter, 1ull);
}

double now_us() {
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace

BenchResult launch(const BenchRequest& r) {
  GPUVS_CUDA(cudaSetDevice(r.device));
  DeviceBuffer counter(sizeof(unsigned long long));
  auto* c = counter.get<unsigned long long>();
  cudaStream_t stream = nullptr;
  GPUVS_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  struct StreamGuard {
    cudaStream_t s;
    ~StreamGuard() { cudaStreamDestroy(s); }
  } guard{stream};
  // Zeroed on the benchmark's own stream: a non-blocking stream does not wait for the legacy stream, so a
  // plain cudaMemset could land after the first ticks and the count would come up short.
  GPUVS_CUDA(cudaMemsetAsync(counter.get(), 0, sizeof(unsigned long long), stream));
  const Reps reps = reps_for(r);
  const int batch = r.quick ? 200 : 1000;
  unsigned long long expected = 0;
  BenchResult res;
  if (r.key == "cuda.launch.latency") {
    const int n = r.quick ? 200 : 2000;
    for (int i = 0; i < 50; ++i, ++expected) tick<<<1, 32, 0, stream>>>(c);
    GPUVS_CUDA(cudaStreamSynchronize(stream));
    for (int i = 0; i < n; ++i, ++expected) {
      const double t0 = now_us();
      tick<<<1, 32, 0, stream>>>(c);
      GPUVS_CUDA(cudaStreamSynchronize(stream));
      res.samples.push_back(now_us() - t0);
    }
    res.note = "one 1-block kernel launched and synchronised, " + std::to_string(n) + " times; microseconds per round trip";
  } else if (r.key == "cuda.launch.async") {
    for (int rep = -reps.warmup; rep < reps.timed; ++rep) {
      const double t0 = now_us();
      for (int i = 0; i < batch; ++i) tick<<<1, 32, 0, stream>>>(c);
      GPUVS_CUDA(cudaStreamSynchronize(stream));
      expected += static_cast<unsigned long long>(batch);
      if (rep >= 0) res.samples.push_back((now_us() - t0) / batch);
    }
    res.note = std::to_string(batch) + " back-to-back launches then one synchronise; microseconds per kernel";
  } else {  // cuda.graph.launch
    cudaGraph_t graph = nullptr;
    cudaGraphExec_t exec = nullptr;
    GPUVS_CUDA(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
    for (int i = 0; i < batch; ++i) tick<<<1, 32, 0, stream>>>(c);
    GPUVS_CUDA(cudaStreamEndCapture(stream, &graph));
    GPUVS_CUDA(cudaGraphInstantiate(&exec, graph, 0));
    struct GraphGuard {
      cudaGraph_t g;
      cudaGraphExec_t e;
      ~GraphGuard() {
        cudaGraphExecDestroy(e);
        cudaGraphDestroy(g);
      }
    } gg{graph, exec};
    for (int rep = -reps.warmup; rep < reps.timed; ++rep) {
      const double t0 = now_us();
      GPUVS_CUDA(cudaGraphLaunch(exec, stream));
      GPUVS_CUDA(cudaStreamSynchronize(stream));
      expected += static_cast<unsigned long long>(batch);
      if (rep >= 0) res.samples.push_back((now_us() - t0) / batch);
    }
    res.note = "a CUDA graph of " + std::to_string(batch) + " kernels, launched and synchronised; microseconds per kernel";
  }
  // Read under load: a long queue of launches in flight (each counted like the timed ones).
  read_while_queued(
      r,
      [&] {
        for (int i = 0; i < 20 * batch; ++i, ++expected) tick<<<1, 32, 0, stream>>>(c);
        GPUVS_CUDA(cudaGetLastError());
      },
      [&] { GPUVS_CUDA(cudaStreamSynchronize(stream)); });
  unsigned long long got = 0;
  GPUVS_CUDA(cudaMemcpy(&got, c, sizeof got, cudaMemcpyDeviceToHost));
  if (got != expected)
    return failed("the kernels ran " + std::to_string(got) + " times, " + std::to_string(expected) + " were launched");
  return res;
}

}  // namespace gpuvs::gpu::cuda
