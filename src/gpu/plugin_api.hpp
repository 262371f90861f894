// SPDX-License-Identifier: Apache-2.0
// The contract between gpuvs and its CUDA plugin (libgpuvs_cuda.so). Everything that needs the CUDA
// runtime, cuBLASLt or NCCL lives in the plugin, which gpuvs loads with dlopen, so one gpuvs binary runs
// on machines without a driver or toolkit (the GPU benchmarks are then waived with the reason). Both
// sides are built by the same toolchain in the same build, so C++ types cross the boundary; the entry
// point is a C symbol, and kAbiVersion guards against a plugin from another build.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "engine/executor.hpp"
#include "engine/memory/caching_allocator.hpp"
#include "engine/param_store.hpp"
#include "ir/ir.hpp"

namespace gpuvs::gpu {

constexpr int kAbiVersion = 5;  // 4: NCCL groups across processes (MPI ranks); 5: memory_info

/// The math of a GPU training run: fp32 (CUDA cores), tf32 (FP32 GEMMs on TF32 tensor cores), amp_bf16
/// and amp_fp16 (GEMM inputs cast to 16 bits, FP32 accumulate, FP32 master weights and elementwise math;
/// fp16 with dynamic loss scaling).
enum class GpuPrecision { fp32, tf32, amp_bf16, amp_fp16 };

/// A GPU's memory as the driver reports it (cudaMemGetInfo), in bytes.
struct DeviceMemory {
  std::uint64_t free = 0, total = 0;
};

/// How a training run uses one GPU.
struct TrainDeviceOptions {
  int device = 0;
  engine::AllocMode memory = engine::AllocMode::growth;
  double fraction = 1.0;  // preallocate: share of the device's memory mapped up front
  GpuPrecision precision = GpuPrecision::tf32;  // tf32: the framework default on Ampere and later
  bool cuda_graphs = true;  // capture the step once, replay it (the compiled path); false: eager launches
};

/// One training run's GPU: the device copies of the params and optimizer slots (shared by every executor
/// it makes), the caching allocator, the stream and the cuBLASLt handle.
class TrainDevice {
 public:
  virtual ~TrainDevice() = default;
  /// An executor for `g` on this device; params bind to the device copies of `store`'s tensors (copied up
  /// on first use). Throws RuntimeFailure on CUDA errors, InputError for ops the CUDA engine lacks.
  virtual std::unique_ptr<engine::Executor> executor(const ir::Graph& g, engine::ParamStore& store,
                                                     const engine::ExecutorOptions& opt) = 0;
  /// Copies every device param and optimizer slot back into `store` (before checkpoints and at the end).
  virtual void sync_to_host(engine::ParamStore& store) = 0;
  virtual engine::AllocStats memory() const = 0;
  /// amp_fp16: the current loss scale and how many steps were skipped for non-finite gradients.
  virtual double loss_scale() const = 0;
  virtual std::int64_t skipped_steps() const = 0;
  /// "cuda:0 NVIDIA H200, growth, tf32, CUDA graphs"
  virtual std::string describe() const = 0;
};

struct BenchRequest {
  std::string key;  // e.g. "cuda.gemm.bf16"; the host registry owns the list, units and descriptions
  int device = 0;   // CUDA ordinal
  bool quick = false;
  /// Called by the plugin while the last timed repetition is still running on the GPU, so clocks,
  /// power and throttle reasons are read under load. May be empty.
  std::function<void()> while_busy;
};

struct BenchResult {
  std::string status = "ok";    // ok | FAILED | waived
  std::string note;             // sizes, conventions, what was checked, or why waived / failed
  std::vector<double> samples;  // one figure per timed repetition, in the registry's unit
  std::string detail;           // optional extra table (sweeps, peer matrix), one line per row
};

/// One rank's side of NCCL collectives between processes (one GPU per MPI rank), for the cluster benchmark.
/// Every rank of the group calls each collective method at the same time, as with MPI.
enum class GroupOp { allreduce, allgather, reduce_scatter };
class RankCollectives {
 public:
  virtual ~RankCollectives() = default;
  /// Times `iterations` of `op` on `count` floats after `warmup` untimed ones (allgather and
  /// reduce_scatter: `count` is the whole buffer, split evenly over the ranks), each from the enqueue to the
  /// stream's end, in seconds (this rank's). The send buffer holds (rank + 1) * (1 + i % 7) at element i of
  /// the whole buffer; `wrong` counts the last result's elements that differ from what they must hold.
  virtual std::vector<double> time(GroupOp op, std::int64_t count, int warmup, int iterations, std::int64_t& wrong) = 0;
  /// Seconds of one one-way transfer of `bytes` from rank `a` to rank `b` (half a ping-pong, median of
  /// `iterations`) on the pair; the other ranks return 0 at once.
  virtual double send_recv(int a, int b, std::int64_t bytes, int iterations) = 0;
  /// "NCCL 2.27.3, cuda:1 NVIDIA H200"
  virtual std::string describe() const = 0;
};

class Api {
 public:
  virtual ~Api() = default;
  virtual int abi_version() const = 0;
  /// "CUDA runtime 13.0 (static), cuBLASLt 13.0.x, built for sm_80,sm_90".
  virtual std::string build_info() const = 0;
  /// Devices the CUDA runtime sees; 0 with a one-line reason when there is no driver or no device.
  virtual int device_count(std::string& why) = 0;
  /// GPU `device`'s memory now, read in its primary context (which a training run on it creates anyway),
  /// so a run can be refused before it allocates. RuntimeFailure when CUDA refuses, InputError for a device
  /// this machine lacks.
  virtual DeviceMemory memory_info(int device) = 0;
  /// Runs one benchmark. Unknown keys come back FAILED (the host validates keys first).
  virtual BenchResult run(const BenchRequest& request) = 0;
  /// Opens a GPU for training. RuntimeFailure when there is no GPU or the CUDA runtime refuses (the
  /// message says why), InputError for a device index this machine lacks.
  virtual std::unique_ptr<TrainDevice> open_train_device(const TrainDeviceOptions& options) = 0;
  /// Opens GPUs 0..count-1 (count >= 1; one is a group of one) as data-parallel replicas
  /// (MirroredStrategy): each device's executors average the gradients across the replicas with NCCL,
  /// in ~25 MB buckets as soon as backward produces each, on a second stream so the exchange overlaps the
  /// rest of the backward pass. options.device is ignored. RuntimeFailure without NCCL.
  virtual std::vector<std::unique_ptr<TrainDevice>> open_train_devices(const TrainDeviceOptions& options, int count) = 0;

  // ---- Across processes (MPI ranks, one GPU each). The plugin has no transport: rank 0 makes the group's
  // id, the host broadcasts it over MPI, and every rank joins with it (ncclCommInitRank).
  /// A new group id (ncclGetUniqueId's bytes). RuntimeFailure without NCCL.
  virtual std::string nccl_unique_id() = 0;
  /// GPU options.device as rank `rank` of `size` data-parallel replicas in as many processes: its executors
  /// average the gradients over the group with NCCL in buckets overlapped with backward, as
  /// open_train_devices does within one process. RuntimeFailure without NCCL, InputError for a bad device.
  virtual std::unique_ptr<TrainDevice> open_train_device_in_group(const TrainDeviceOptions& options, const std::string& unique_id,
                                                                  int rank, int size) = 0;
  /// GPU `device` as rank `rank` of `size` for the collectives benchmark. Errors as above.
  virtual std::unique_ptr<RankCollectives> open_rank_collectives(int device, const std::string& unique_id, int rank, int size) = 0;
};

}  // namespace gpuvs::gpu

/// The plugin's only exported symbol.
extern "C" gpuvs::gpu::Api* gpuvs_gpu_plugin();
