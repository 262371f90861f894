// SPDX-License-Identifier: Apache-2.0
// Facts about the software and systems around the math that the model prices (data/system.toml, compiled
// in): what the CUDA runtime and the caching allocator keep, the share of a link's rate NCCL reaches, GPUs
// per server, framework and engine thresholds, default batches per model family. Each is sourced in the
// file with its unit; the parser requires every fact the model reads, with the unit it expects, and
// refuses unknown ones, so a fact cannot silently fall back to a number written in code.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "models/networks.hpp"

namespace gpuvs::perf {

/// A MIG instance profile of a 7-slice part: k of 7 compute slices with memory_eighths / 8 of the memory.
struct MigProfile {
  int compute_slices = 0;
  int memory_eighths = 0;
};

struct SystemFacts {
  double runtime_bytes = 0;        // CUDA context and library workspaces per process
  double allocator_slack = 0;      // share of dynamic memory the caching allocator cannot reuse
  double driver_reserve = 0;       // share of capacity the driver and ECC keep
  double nvlink_busbw = 0;         // NCCL busbw over the link rate, large messages
  double pcie_busbw = 0;
  double network_busbw = 0;
  double copy_engine = 0;          // a copy engine's transfer over the link rate, where no card figure is published
  // NCCL's protocols inside one node (perf/collective.hpp): base latency, per ring step over NVLink and PCIe,
  // and each protocol's share of the bus bandwidth.
  double nccl_ll_base_s = 0, nccl_ll128_base_s = 0, nccl_simple_base_s = 0;
  double nccl_ll_step_nvlink_s = 0, nccl_ll128_step_nvlink_s = 0, nccl_simple_step_nvlink_s = 0;
  double nccl_ll_step_pcie_s = 0, nccl_simple_step_pcie_s = 0;
  double nccl_ll_allreduce_share = 0, nccl_ll_gather_share = 0, nccl_ll128_share = 0, nccl_ll_max_busbw_gbs = 0;
  // NVLink SHARP (NVLS): the all-reduce NCCL runs through an NVSwitch that reduces and multicasts itself. Its latency,
  // and per switch generation the share of the ring's bus bandwidth it keeps, with the compute capabilities of the
  // boards whose NVSwitch has it.
  double nccl_nvls_latency_s = 0;
  struct ChipShare {
    double efficiency = 0;
    std::vector<std::string> compute_capabilities;
  };
  ChipShare nvls_hopper, nvls_blackwell;
  // What gpuvs's own microbenchmarks reach on a healthy card, as fractions of the catalog's peaks:
  // calibration compares a measured card with these, and they stand in where no card has a published figure.
  double bench_gemm_tensor_datacenter = 0;
  double bench_gemm_tensor_geforce = 0;
  double bench_gemm_cuda_cores = 0;
  double bench_memory = 0;
  // What training kernels reach that the fit leaves alone, as fractions of the matrix peak they run on.
  double attention_datacenter = 0;  // fused attention on tensor cores (softmax between two GEMMs)
  double attention_geforce = 0;
  double cuda_core_gemm = 0;        // FP32 math on CUDA cores: no tensor-core pipeline to fill
  double cuda_core_conv = 0;
  double cuda_core_attention = 0;
  // SMs whose second FP32 datapath also runs INT32 (GA10x, AD10x, GB20x): the share of the other SMs' CUDA-core
  // fractions their FP32 kernels keep (integer instructions take FP32 issue slots), and which compute capabilities.
  double shared_lane_fp32 = 0;
  std::vector<std::string> shared_lane_compute_capabilities;
  double tile_fixed_cycles = 0;    // a GEMM tile's fixed cost beside its main loop, SM cycles (the K ramp)
  int gpus_per_server = 0;         // one NVLink domain
  double host_stream_fraction = 0; // STREAM over the DDR theoretical rate
  double kernel_gap_s = 0;         // idle time between queued kernels
  double stream_ramp_s = 0;        // a memory-bound kernel's fill and drain at the card's DRAM rate (its bytes reach half of mem_max at rate x this)
  double ddp_bucket_bytes = 0;     // PyTorch DDP's gradient bucket
  double megatron_bucket_bytes = 0;
  double qlora_bytes_per_param = 0;
  double vector_kernel_rows = 0;   // llama.cpp: quantized matrix-vector kernels up to this many rows
  double offload_batch_rows = 0;   // ggml: offloaded matrix products run on the GPU from this many rows
  std::int64_t default_batch[7] = {};  // per models::Family, in enum order
  std::vector<MigProfile> mig_profiles;  // by compute slices, ascending

  std::int64_t batch_for(models::Family f) const { return default_batch[static_cast<int>(f)]; }
};

/// The facts every pricer reads: the compiled-in data/system.toml, or what a ScopedSystemFacts installed.
const SystemFacts& system_facts();
const SystemFacts& builtin_system_facts();

/// Installs `f` as the facts every pricer reads, for the scope's life. Process-wide, not per thread: the CLI's
/// --facts installs it once, before any work starts or any thread is made.
class ScopedSystemFacts {
 public:
  explicit ScopedSystemFacts(const SystemFacts& f);
  ~ScopedSystemFacts();
  ScopedSystemFacts(const ScopedSystemFacts&) = delete;
  ScopedSystemFacts& operator=(const ScopedSystemFacts&) = delete;

 private:
  const SystemFacts* previous_;
  SystemFacts mine_;
};
/// Parses a system-facts file; InputError "WHERE:LINE: ..." for a missing or unknown fact, a unit other
/// than the expected one, a value out of its range, or a fact without a source; MIG profiles must be
/// whole slices (1-7 compute, 1-8 memory eighths), sourced, listed once each, in ascending order.
SystemFacts parse_system_facts(const std::string& text, const std::string& where);
/// A user's changes over `base`: the same form as data/system.toml, holding only the facts to change (each with
/// its value, unit and source, checked as in the full file) and, optionally, [[mig_profile]] entries that replace
/// the list. `changed`, when given, receives one "section.name = value unit" line per fact the file sets.
SystemFacts parse_system_facts_over(const std::string& text, const std::string& where, const SystemFacts& base,
                                    std::vector<std::string>* changed = nullptr);

}  // namespace gpuvs::perf
