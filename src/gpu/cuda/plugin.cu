// SPDX-License-Identifier: Apache-2.0
// The CUDA plugin's entry point: reports what it was built with, counts devices, and dispatches each
// benchmark key to its implementation. CUDA failures become FAILED results with the call that failed.
#include <cublasLt.h>
#include <dlfcn.h>

#include <string>

#include "core/error.hpp"

#include "gpu/cuda/collective.hpp"
#include "gpu/cuda/common.hpp"

namespace gpuvs::engine::cuda {
std::unique_ptr<gpu::TrainDevice> open_train_device(const gpu::TrainDeviceOptions& o);  // cuda_executor.cu
std::vector<std::unique_ptr<gpu::TrainDevice>> open_train_devices(const gpu::TrainDeviceOptions& o, int count);
std::unique_ptr<gpu::TrainDevice> open_train_device_in_group(const gpu::TrainDeviceOptions& o, const std::string& unique_id, int rank,
                                                             int size);
}

namespace gpuvs::gpu::cuda {

namespace {

class Plugin final : public Api {
 public:
  int abi_version() const override { return kAbiVersion; }

  std::string build_info() const override {
    const std::size_t lt = cublasLtGetVersion();
    return "CUDA runtime " + std::to_string(CUDART_VERSION / 1000) + "." + std::to_string(CUDART_VERSION % 1000 / 10) +
           " (static), cuBLASLt " + std::to_string(lt / 10000) + "." + std::to_string(lt / 100 % 100) + "." +
           std::to_string(lt % 100) + ", " + nccl_version() + ", built for sm " GPUVS_CUDA_ARCHS;
  }

  int device_count(std::string& why) override {
    int n = 0;
    const cudaError_t e = cudaGetDeviceCount(&n);
    if (e == cudaSuccess && n > 0) return n;
    (void)cudaGetLastError();
    if (e == cudaErrorNoDevice || (e == cudaSuccess && n == 0))
      why = "the NVIDIA driver sees no GPU";
    else if (e == cudaErrorInsufficientDriver) {
      // The runtime says the same for a missing and an old driver; the loader tells them apart.
      void* h = ::dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
      if (h) ::dlclose(h);
      why = h ? "the NVIDIA driver is older than CUDA " + std::to_string(CUDART_VERSION / 1000) + "." +
                    std::to_string(CUDART_VERSION % 1000 / 10) + " needs"
              : std::string("no NVIDIA driver (libcuda.so.1 cannot be loaded)");
    }
    else
      why = std::string("the CUDA runtime cannot start: ") + cudaGetErrorString(e);
    return 0;
  }

  DeviceMemory memory_info(int device) override {
    std::string why;
    const int n = device_count(why);
    if (n == 0) throw RuntimeFailure("no GPU: " + why);
    if (device < 0 || device >= n)
      throw InputError("--device cuda:" + std::to_string(device) + ": this machine has " + std::to_string(n) + " GPU(s)");
    std::size_t free = 0, total = 0;
    cudaError_t e = cudaSetDevice(device);
    if (e == cudaSuccess) e = cudaMemGetInfo(&free, &total);
    if (e != cudaSuccess) {
      (void)cudaGetLastError();
      throw RuntimeFailure("cuda:" + std::to_string(device) + ": cudaMemGetInfo: " + cudaGetErrorString(e));
    }
    return {free, total};
  }

  BenchResult run(const BenchRequest& r) override {
    try {
      const std::string& k = r.key;
      auto starts = [&](const char* p) { return k.rfind(p, 0) == 0; };
      if (starts("cuda.mem.")) return mem_kernel(r);
      if (k == "cuda.memcpy.d2d") return memcpy_d2d(r);
      if (starts("cuda.memcpy.")) return memcpy_host(r);
      if (k == "cuda.p2p.copy") return p2p_copy(r);
      if (starts("cuda.launch.") || k == "cuda.graph.launch") return launch(r);
      if (starts("cuda.gemm.")) return gemm(r);
      if (k == "cuda.nccl.allreduce") return nccl_allreduce(r);
      return failed("the CUDA plugin has no benchmark '" + k + "'");
    } catch (const std::exception& e) {
      (void)cudaGetLastError();
      return failed(e.what());
    }
  }

  std::unique_ptr<TrainDevice> open_train_device(const TrainDeviceOptions& options) override {
    std::string why;
    const int n = device_count(why);
    if (n == 0) throw RuntimeFailure("no GPU: " + why);
    if (options.device < 0 || options.device >= n)
      throw InputError("--device cuda:" + std::to_string(options.device) + ": this machine has " + std::to_string(n) + " GPU(s)");
    return engine::cuda::open_train_device(options);
  }

  std::vector<std::unique_ptr<TrainDevice>> open_train_devices(const TrainDeviceOptions& options, int count) override {
    std::string why;
    const int n = device_count(why);
    if (n == 0) throw RuntimeFailure("no GPU: " + why);
    if (count < 1 || count > n)
      throw InputError("--gpus " + std::to_string(count) + ": this machine has " + std::to_string(n) + " GPU(s)");
    return engine::cuda::open_train_devices(options, count);
  }

  std::string nccl_unique_id() override { return cuda::nccl_unique_id(); }

  std::unique_ptr<TrainDevice> open_train_device_in_group(const TrainDeviceOptions& options, const std::string& unique_id, int rank,
                                                          int size) override {
    check_device(options.device);
    return engine::cuda::open_train_device_in_group(options, unique_id, rank, size);
  }

  std::unique_ptr<RankCollectives> open_rank_collectives(int device, const std::string& unique_id, int rank, int size) override {
    check_device(device);
    return cuda::open_rank_collectives(device, unique_id, rank, size);
  }

 private:
  void check_device(int device) {
    std::string why;
    const int n = device_count(why);
    if (n == 0) throw RuntimeFailure("no GPU: " + why);
    if (device < 0 || device >= n)
      throw InputError("cuda:" + std::to_string(device) + ": this machine has " + std::to_string(n) + " GPU(s)");
  }
};

}  // namespace

}  // namespace gpuvs::gpu::cuda

extern "C" __attribute__((visibility("default"))) gpuvs::gpu::Api* gpuvs_gpu_plugin() {
  static gpuvs::gpu::cuda::Plugin plugin;
  return &plugin;
}
