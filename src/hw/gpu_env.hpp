// SPDX-License-Identifier: Apache-2.0
// The state a GPU figure was measured in: SM and memory clocks, power draw, temperature and the reasons
// the clocks are held down (NVML's clock-event reasons), read through NVML loaded at run time.
#pragma once
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace gpuvs::hw {

struct GpuEnv {
  int sm_mhz = 0, mem_mhz = 0;
  double power_w = 0;
  int temperature_c = 0;
  std::vector<std::string> throttle;  // e.g. {"sw_power_cap"}; empty when nothing holds the clocks down
  /// Pairs for reports: ("sm_clock_mhz", "1980"), ...
  std::vector<std::pair<std::string, std::string>> fields() const;
};

/// Names of the clock-event reason bits set in `mask` (NVML's nvmlClocksEventReason*).
std::vector<std::string> throttle_reasons(unsigned long long mask);

/// Opens NVML once; samples one GPU, named by its PCI bus id (NVML's order need not match CUDA's).
class GpuEnvSampler {
 public:
  explicit GpuEnvSampler(const std::string& libnvml = "libnvidia-ml.so.1");
  ~GpuEnvSampler();
  GpuEnvSampler(const GpuEnvSampler&) = delete;
  GpuEnvSampler& operator=(const GpuEnvSampler&) = delete;
  bool available() const;
  std::optional<GpuEnv> sample(const std::string& pci_bus_id) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace gpuvs::hw
