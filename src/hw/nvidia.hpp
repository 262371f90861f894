// SPDX-License-Identifier: Apache-2.0
// NVIDIA GPUs through the CUDA driver API and NVML, both loaded at run time (dlopen), so one binary runs
// on machines without a driver and says so plainly. No CUDA header is needed: the few entry points used
// are declared here by their stable C ABI.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace gpuvs::hw {

struct GpuDevice {
  int index = 0;  // CUDA ordinal
  std::string name, uuid, pci_bus_id;
  int cc_major = 0, cc_minor = 0, sm_count = 0;
  std::uint64_t memory_total_bytes = 0, memory_free_bytes = 0;
  int clock_sm_mhz = 0, clock_sm_max_mhz = 0, clock_mem_max_mhz = 0;
  int pcie_gen = 0, pcie_width = 0, pcie_gen_max = 0, pcie_width_max = 0;
  int nvlink_links_active = 0;
  std::string ecc_mode;  // enabled | disabled | n/a
  std::uint64_t ecc_corrected = 0, ecc_uncorrected = 0;
  std::string mig_mode;  // enabled | disabled | n/a
  int mig_instances = 0;  // GPU instances present when MIG is enabled
  double power_limit_w = 0;
  std::string catalog_id;  // matching catalog device, or empty
};

struct NvidiaReport {
  std::string status;  // ok | no-driver | no-device | error
  std::string detail;  // one line: why, for anything but ok
  int cuda_driver_version = 0;  // e.g. 12040
  std::string driver_version;   // NVML's text, e.g. "550.54.15"
  bool nvml = false;            // NVML loaded and initialised
  std::vector<GpuDevice> gpus;
  std::vector<std::vector<bool>> p2p;  // p2p[i][j]: device i can access device j
};

/// Probes the GPUs. The library names are parameters so tests can make the driver absent.
NvidiaReport probe_nvidia(const std::string& libcuda = "libcuda.so.1", const std::string& libnvml = "libnvidia-ml.so.1");

}  // namespace gpuvs::hw
