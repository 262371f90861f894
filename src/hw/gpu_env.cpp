// SPDX-License-Identifier: Apache-2.0
#include "hw/gpu_env.hpp"

#include <fmt/format.h>

#include "hw/dynlib.hpp"

namespace gpuvs::hw {

namespace {
using nvmlReturn_t = int;
using nvmlDevice_t = struct nvmlDevice_st*;
constexpr int kClockSm = 1, kClockMem = 2, kTemperatureGpu = 0;
}  // namespace

std::vector<std::pair<std::string, std::string>> GpuEnv::fields() const {
  return {{"sm_clock_mhz", std::to_string(sm_mhz)},
          {"mem_clock_mhz", std::to_string(mem_mhz)},
          {"power_w", fmt::format("{:.1f}", power_w)},
          {"temperature_c", std::to_string(temperature_c)},
          {"throttle", throttle.empty() ? "none" : fmt::format("{}", fmt::join(throttle, "+"))}};
}

std::vector<std::string> throttle_reasons(unsigned long long mask) {
  static const std::pair<unsigned long long, const char*> bits[] = {
      {0x1, "gpu_idle"},          {0x2, "applications_clocks"}, {0x4, "sw_power_cap"},
      {0x8, "hw_slowdown"},       {0x10, "sync_boost"},         {0x20, "sw_thermal"},
      {0x40, "hw_thermal"},       {0x80, "hw_power_brake"},     {0x100, "display_clocks"}};
  std::vector<std::string> out;
  unsigned long long known = 0;
  for (const auto& [bit, name] : bits) {
    known |= bit;
    if (mask & bit) out.emplace_back(name);
  }
  if (mask & ~known) out.push_back(fmt::format("other_0x{:x}", mask & ~known));
  return out;
}

struct GpuEnvSampler::Impl {
  Library lib;
  bool ok = false;
  nvmlReturn_t (*shutdown)() = nullptr;
  nvmlReturn_t (*by_bus_id)(const char*, nvmlDevice_t*) = nullptr;
  nvmlReturn_t (*clock)(nvmlDevice_t, int, unsigned*) = nullptr;
  nvmlReturn_t (*power)(nvmlDevice_t, unsigned*) = nullptr;
  nvmlReturn_t (*temperature)(nvmlDevice_t, int, unsigned*) = nullptr;
  nvmlReturn_t (*reasons)(nvmlDevice_t, unsigned long long*) = nullptr;
  explicit Impl(const std::string& name) : lib(name) {
    auto init = lib.get<nvmlReturn_t (*)()>("nvmlInit_v2");
    shutdown = lib.get<decltype(shutdown)>("nvmlShutdown");
    by_bus_id = lib.get<decltype(by_bus_id)>("nvmlDeviceGetHandleByPciBusId_v2");
    clock = lib.get<decltype(clock)>("nvmlDeviceGetClockInfo");
    power = lib.get<decltype(power)>("nvmlDeviceGetPowerUsage");
    temperature = lib.get<decltype(temperature)>("nvmlDeviceGetTemperature");
    // Renamed in NVML 12.2 ("clocks event reasons"); the old name remains as an alias.
    reasons = lib.get<decltype(reasons)>("nvmlDeviceGetCurrentClocksEventReasons");
    if (!reasons) reasons = lib.get<decltype(reasons)>("nvmlDeviceGetCurrentClocksThrottleReasons");
    ok = init && by_bus_id && init() == 0;
  }
  ~Impl() {
    if (ok && shutdown) shutdown();
  }
};

GpuEnvSampler::GpuEnvSampler(const std::string& libnvml) : impl_(std::make_unique<Impl>(libnvml)) {}
GpuEnvSampler::~GpuEnvSampler() = default;
bool GpuEnvSampler::available() const { return impl_->ok; }

std::optional<GpuEnv> GpuEnvSampler::sample(const std::string& pci_bus_id) const {
  if (!impl_->ok) return std::nullopt;
  nvmlDevice_t h = nullptr;
  if (impl_->by_bus_id(pci_bus_id.c_str(), &h) != 0) return std::nullopt;
  GpuEnv e;
  unsigned v = 0;
  if (impl_->clock && impl_->clock(h, kClockSm, &v) == 0) e.sm_mhz = static_cast<int>(v);
  if (impl_->clock && impl_->clock(h, kClockMem, &v) == 0) e.mem_mhz = static_cast<int>(v);
  if (impl_->power && impl_->power(h, &v) == 0) e.power_w = v / 1000.0;
  if (impl_->temperature && impl_->temperature(h, kTemperatureGpu, &v) == 0) e.temperature_c = static_cast<int>(v);
  unsigned long long mask = 0;
  if (impl_->reasons && impl_->reasons(h, &mask) == 0) e.throttle = throttle_reasons(mask);
  return e;
}

}  // namespace gpuvs::hw
