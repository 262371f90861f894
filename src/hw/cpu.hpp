// SPDX-License-Identifier: Apache-2.0
// The host CPU: what the engine and the CPU benchmarks run on. Topology from hwloc, ISA features from
// CPUID (what the code may use, not what the kernel reports), memory from the OS.
#pragma once
#include <cstdint>
#include <string>
#include <vector>
#include <algorithm>

namespace gpuvs::hw {

struct CpuInfo {
  std::string model;
  std::string vendor;
  int sockets = 0, cores = 0, threads = 0, numa_nodes = 0;
  std::uint64_t l1d_bytes = 0, l2_bytes = 0, l3_bytes = 0;  // per core (L1d, L2) and the largest L3 instance
  std::uint64_t memory_bytes = 0;
  // ISA features that matter for ML kernels.
  bool sse42 = false, avx = false, avx2 = false, fma = false, avx512f = false, avx512bw = false, avx512vl = false,
       avx512_vnni = false, avx512_bf16 = false, avx_vnni = false, amx_tile = false, amx_bf16 = false, amx_int8 = false;
  std::vector<std::string> features() const;  // names of the features present
};

CpuInfo probe_cpu();

}  // namespace gpuvs::hw
