// SPDX-License-Identifier: Apache-2.0
// Device memory bandwidth (read, write and copy kernels; cudaMemcpy device-to-device), host<->device
// copies (pinned and pageable) and peer-to-peer copies. Byte counting: read and write kernels count the
// bytes they touch once; copy kernels and device-to-device copies count read + write (STREAM's
// convention, so the figure compares with the memory's spec); host<->device and peer copies count the
// bytes moved once, per direction.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <memory>
#include <exception>
#include <future>
#include <string>
#include <thread>

#include "gpu/counting.hpp"
#include "gpu/cuda/common.hpp"

namespace gpuvs::gpu::cuda {

std::string mib(std::size_t bytes) { return std::to_string(bytes >> 20) + " MiB"; }

void read_while_blocking(const BenchRequest& r, int device, const std::function<void()>& work) {
  if (!r.while_busy) return;
  std::promise<void> started;
  std::exception_ptr error;
  std::thread worker([&] {
    try {
      GPUVS_CUDA(cudaSetDevice(device));
      started.set_value();
      work();
    } catch (...) {
      error = std::current_exception();
    }
  });
  // If cudaSetDevice failed the promise was never set: the join below reports that error instead.
  if (started.get_future().wait_for(std::chrono::seconds(10)) == std::future_status::ready) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));  // the first copy is under way
    r.while_busy();
  }
  worker.join();
  if (error) std::rethrow_exception(error);
}

namespace {

constexpr std::uint64_t kSeed = 0x5EED;

__global__ void fill_unit(float* p, std::size_t n, std::uint64_t seed) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n; i += std::size_t(gridDim.x) * blockDim.x)
    p[i] = unit_value(i, seed);
}

// Each block writes one partial sum; float accumulation over ~1k elements per thread is exact enough
// for a 1e-4 relative check.
__global__ void read_sum(const float4* __restrict__ p, std::size_t n4, float* __restrict__ partial) {
  float s = 0;
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n4; i += std::size_t(gridDim.x) * blockDim.x) {
    const float4 v = p[i];
    s += (v.x + v.y) + (v.z + v.w);
  }
  __shared__ float red[1024];
  red[threadIdx.x] = s;
  __syncthreads();
  for (unsigned w = blockDim.x / 2; w > 0; w /= 2) {
    if (threadIdx.x < w) red[threadIdx.x] += red[threadIdx.x + w];
    __syncthreads();
  }
  if (threadIdx.x == 0) partial[blockIdx.x] = red[0];
}

// A cheap, index-dependent, never-zero pattern: a hash per element would make the kernel ALU-bound.
__global__ void write_pattern(float4* __restrict__ p, std::size_t n4, float base) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n4; i += std::size_t(gridDim.x) * blockDim.x) {
    const float v = base + static_cast<float>(i & 1023u);
    p[i] = make_float4(v, v + 0.25f, v + 0.5f, v + 0.75f);
  }
}

__global__ void copy4(const float4* __restrict__ src, float4* __restrict__ dst, std::size_t n4) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n4; i += std::size_t(gridDim.x) * blockDim.x)
    dst[i] = src[i];
}

struct Launch {
  int blocks, threads;
};
Launch launch_shape(int device) {
  int sms = 0, per_sm = 0;
  GPUVS_CUDA(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  GPUVS_CUDA(cudaDeviceGetAttribute(&per_sm, cudaDevAttrMaxThreadsPerMultiProcessor, device));
  return {sms * std::max(1, per_sm / 512), 512};
}

/// Bytes per array: 1 GiB (256 MiB quick), at most a quarter of free memory; >> any L2 (H200: 50 MB).
std::size_t array_bytes(const BenchRequest& r) {
  std::size_t free_b = 0, total = 0;
  GPUVS_CUDA(cudaMemGetInfo(&free_b, &total));
  std::size_t b = r.quick ? (256u << 20) : (1024u << 20);
  b = std::min(b, free_b / 4);
  return b & ~std::size_t(0xFFFFF);
}

std::vector<std::size_t> sample_indices(std::size_t n, int count) {
  std::vector<std::size_t> idx;
  for (int t = 0; t < count; ++t) idx.push_back(mix64(static_cast<std::uint64_t>(t), 77) % n);
  idx.push_back(0);
  idx.push_back(n - 1);
  return idx;
}

/// Times `body` (which enqueues work on the default stream) with events; returns bytes/ms -> GB/s.
template <class F>
std::vector<double> time_gbs(const BenchRequest& r, double bytes, F&& body) {
  const Reps reps = reps_for(r);
  for (int i = 0; i < reps.warmup; ++i) body();
  GPUVS_CUDA(cudaDeviceSynchronize());
  std::vector<double> out;
  Event a, b;
  for (int i = 0; i < reps.timed; ++i) {
    GPUVS_CUDA(cudaEventRecord(a));
    body();
    GPUVS_CUDA(cudaEventRecord(b));
    out.push_back(bytes / (elapsed_ms(a, b) * 1e-3) / 1e9);
  }
  read_while_queued(
      r,
      [&] {
        for (int i = 0; i < 8; ++i) body();
      },
      [] {});
  GPUVS_CUDA(cudaDeviceSynchronize());
  return out;
}

}  // namespace

BenchResult mem_kernel(const BenchRequest& r) {
  GPUVS_CUDA(cudaSetDevice(r.device));
  const std::size_t bytes = array_bytes(r), n = bytes / 4, n4 = n / 4;
  const Launch ls = launch_shape(r.device);
  DeviceBuffer src(bytes);
  fill_unit<<<ls.blocks, ls.threads>>>(src.get<float>(), n, kSeed);
  GPUVS_CUDA(cudaGetLastError());
  BenchResult res;
  if (r.key == "cuda.mem.read") {
    DeviceBuffer partial(sizeof(float) * static_cast<std::size_t>(ls.blocks));
    res.samples = time_gbs(r, bytes_counted(r.key, static_cast<double>(bytes)), [&] {
      read_sum<<<ls.blocks, ls.threads>>>(src.get<const float4>(), n4, partial.get<float>());
    });
    GPUVS_CUDA(cudaGetLastError());
    std::vector<float> parts(static_cast<std::size_t>(ls.blocks));
    GPUVS_CUDA(cudaMemcpy(parts.data(), partial.get(), parts.size() * sizeof(float), cudaMemcpyDeviceToHost));
    double got = 0, want = 0;
    for (float p : parts) got += p;
    for (std::size_t i = 0; i < n; ++i) want += unit_value(i, kSeed);
    if (!(std::fabs(got - want) <= 1e-4 * want)) return failed("read kernel sum " + std::to_string(got) + " != " + std::to_string(want));
    res.note = "reads a " + mib(bytes) + " array of random floats; bytes read counted once; sum checked on the host";
  } else if (r.key == "cuda.mem.write") {
    res.samples = time_gbs(r, bytes_counted(r.key, static_cast<double>(bytes)), [&] { write_pattern<<<ls.blocks, ls.threads>>>(src.get<float4>(), n4, 3.0f); });
    GPUVS_CUDA(cudaGetLastError());
    for (std::size_t i : sample_indices(n4, 512)) {
      float4 v;
      GPUVS_CUDA(cudaMemcpy(&v, src.get<float4>() + i, sizeof v, cudaMemcpyDeviceToHost));
      const float want = 3.0f + static_cast<float>(i & 1023u);
      if (v.x != want || v.w != want + 0.75f) return failed("write kernel left a wrong value at float4 " + std::to_string(i));
    }
    res.note = "writes a " + mib(bytes) + " array; bytes written counted once; 514 elements checked";
  } else {
    DeviceBuffer dst(bytes);
    res.samples = time_gbs(r, bytes_counted(r.key, static_cast<double>(bytes)),
                           [&] { copy4<<<ls.blocks, ls.threads>>>(src.get<const float4>(), dst.get<float4>(), n4); });
    GPUVS_CUDA(cudaGetLastError());
    for (std::size_t i : sample_indices(n, 512)) {
      float v;
      GPUVS_CUDA(cudaMemcpy(&v, dst.get<float>() + i, sizeof v, cudaMemcpyDeviceToHost));
      if (v != unit_value(i, kSeed)) return failed("copy kernel result differs from the source at element " + std::to_string(i));
    }
    res.note = "copies a " + mib(bytes) + " array with a kernel; read + write bytes counted (STREAM convention); 514 elements checked";
  }
  return res;
}

BenchResult memcpy_d2d(const BenchRequest& r) {
  GPUVS_CUDA(cudaSetDevice(r.device));
  const std::size_t bytes = array_bytes(r), n = bytes / 4;
  const Launch ls = launch_shape(r.device);
  DeviceBuffer src(bytes), dst(bytes);
  fill_unit<<<ls.blocks, ls.threads>>>(src.get<float>(), n, kSeed);
  GPUVS_CUDA(cudaGetLastError());
  BenchResult res;
  res.samples = time_gbs(r, bytes_counted(r.key, static_cast<double>(bytes)),
                         [&] { GPUVS_CUDA(cudaMemcpyAsync(dst.get(), src.get(), bytes, cudaMemcpyDeviceToDevice)); });
  for (std::size_t i : sample_indices(n, 512)) {
    float v;
    GPUVS_CUDA(cudaMemcpy(&v, dst.get<float>() + i, sizeof v, cudaMemcpyDeviceToHost));
    if (v != unit_value(i, kSeed)) return failed("device-to-device copy differs from the source at element " + std::to_string(i));
  }
  res.note = "cudaMemcpyAsync of " + mib(bytes) + " within the device; read + write bytes counted; 514 elements checked";
  return res;
}

BenchResult memcpy_host(const BenchRequest& r) {
  GPUVS_CUDA(cudaSetDevice(r.device));
  const bool h2d = r.key.find(".h2d.") != std::string::npos;
  const bool pinned = r.key.find(".pinned") != std::string::npos;
  const std::size_t bytes = r.quick ? (64u << 20) : (256u << 20), n = bytes / 4;
  DeviceBuffer dev(bytes);
  std::unique_ptr<PinnedBuffer> pin;
  std::unique_ptr<float[]> page;
  float* host = nullptr;
  if (pinned) {
    pin = std::make_unique<PinnedBuffer>(bytes);
    host = pin->get<float>();
  } else {
    page.reset(new float[n]);
    host = page.get();
  }
  for (std::size_t i = 0; i < n; ++i) host[i] = unit_value(i, kSeed);  // also faults every page in
  if (!h2d) GPUVS_CUDA(cudaMemcpy(dev.get(), host, bytes, cudaMemcpyHostToDevice));
  const Reps reps = reps_for(r);
  auto once = [&] {
    GPUVS_CUDA(h2d ? cudaMemcpy(dev.get(), host, bytes, cudaMemcpyHostToDevice)
                   : cudaMemcpy(host, dev.get(), bytes, cudaMemcpyDeviceToHost));
  };
  for (int i = 0; i < reps.warmup; ++i) once();
  BenchResult res;
  for (int i = 0; i < reps.timed; ++i) {
    // Host clock: a pageable copy is synchronous and staged by the driver, so what the caller waits
    // for is the figure that matters.
    const auto t0 = std::chrono::steady_clock::now();
    once();
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    res.samples.push_back(bytes_counted(r.key, static_cast<double>(bytes)) / s / 1e9);
  }
  read_while_blocking(r, r.device, [&] {
    for (int i = 0; i < 8; ++i) once();
  });
  // Check: the data survived the trip (device -> host copies bring back what was uploaded).
  std::vector<float> back(n);
  GPUVS_CUDA(cudaMemcpy(back.data(), dev.get(), bytes, cudaMemcpyDeviceToHost));
  for (std::size_t i : sample_indices(n, 4096))
    if (back[i] != unit_value(i, kSeed) || host[i] != unit_value(i, kSeed))
      return failed("host/device copy corrupted element " + std::to_string(i));
  res.note = std::string(h2d ? "host to device" : "device to host") + ", " + (pinned ? "pinned" : "pageable") +
             " host memory, " + mib(bytes) + " per copy, host-timed cudaMemcpy; bytes counted once; 4098 elements checked";
  return res;
}

BenchResult p2p_copy(const BenchRequest& r) {
  int count = 0;
  GPUVS_CUDA(cudaGetDeviceCount(&count));
  if (count < 2) return waived("needs two or more GPUs");
  const std::size_t bytes = r.quick ? (64u << 20) : (256u << 20), n = bytes / 4;
  std::vector<std::unique_ptr<DeviceBuffer>> buf;
  for (int d = 0; d < count; ++d) {
    GPUVS_CUDA(cudaSetDevice(d));
    buf.push_back(std::make_unique<DeviceBuffer>(bytes));
    const Launch ls = launch_shape(d);
    fill_unit<<<ls.blocks, ls.threads>>>(buf.back()->get<float>(), n, kSeed + static_cast<std::uint64_t>(d));
    GPUVS_CUDA(cudaGetLastError());
    GPUVS_CUDA(cudaDeviceSynchronize());
  }
  BenchResult res;
  res.detail = "src\\dst GB/s (one direction; 'via host' where peer access is unavailable)\n";
  for (int s = 0; s < count; ++s) {
    std::string row = "GPU" + std::to_string(s) + ":";
    for (int d = 0; d < count; ++d) {
      if (s == d) {
        row += "  -";
        continue;
      }
      int can = 0;
      GPUVS_CUDA(cudaDeviceCanAccessPeer(&can, s, d));
      GPUVS_CUDA(cudaSetDevice(s));
      if (can) {
        const cudaError_t e = cudaDeviceEnablePeerAccess(d, 0);
        if (e != cudaSuccess && e != cudaErrorPeerAccessAlreadyEnabled) check(e, "cudaDeviceEnablePeerAccess");
        (void)cudaGetLastError();
      }
      BenchRequest sub = r;
      sub.while_busy = nullptr;
      std::vector<double> g = time_gbs(sub, bytes_counted(r.key, static_cast<double>(bytes)), [&] {
        GPUVS_CUDA(cudaMemcpyPeerAsync(buf[static_cast<std::size_t>(d)]->get(), d, buf[static_cast<std::size_t>(s)]->get(), s, bytes));
      });
      float v = 0;
      GPUVS_CUDA(cudaMemcpy(&v, buf[static_cast<std::size_t>(d)]->get<float>() + (n - 1), sizeof v, cudaMemcpyDeviceToHost));
      if (v != unit_value(n - 1, kSeed + static_cast<std::uint64_t>(s))) return failed("peer copy GPU" + std::to_string(s) + "->GPU" + std::to_string(d) + " corrupted data");
      // Restore the destination's own data for the copies into it that follow.
      GPUVS_CUDA(cudaSetDevice(d));
      const Launch ls = launch_shape(d);
      fill_unit<<<ls.blocks, ls.threads>>>(buf[static_cast<std::size_t>(d)]->get<float>(), n, kSeed + static_cast<std::uint64_t>(d));
      GPUVS_CUDA(cudaDeviceSynchronize());
      std::nth_element(g.begin(), g.begin() + g.size() / 2, g.end());
      const double med = g[g.size() / 2];
      res.samples.push_back(med);
      char cell[64];
      std::snprintf(cell, sizeof cell, "  %.1f%s", med, can ? "" : " (via host)");
      row += cell;
    }
    res.detail += row + "\n";
  }
  // Read under load: copies from GPU0 to GPU1 queued (GPU1's data is not checked after this).
  read_while_queued(
      r,
      [&] {
        GPUVS_CUDA(cudaSetDevice(0));
        for (int i = 0; i < 8; ++i) GPUVS_CUDA(cudaMemcpyPeerAsync(buf[1]->get(), 1, buf[0]->get(), 0, bytes));
      },
      [&] { GPUVS_CUDA(cudaDeviceSynchronize()); });
  res.note = "cudaMemcpyPeerAsync of " + mib(bytes) + " for every ordered pair; the figure is the median over pairs";
  return res;
}

}  // namespace gpuvs::gpu::cuda
