// SPDX-License-Identifier: Apache-2.0
#include "hw/nvidia.hpp"

#include <dlfcn.h>
#include <fmt/format.h>

#include <cstring>

#include "hw/dynlib.hpp"

namespace gpuvs::hw {

namespace {

// Stable C ABI of the entry points used (cuda.h, nvml.h).
using CUresult = int;
using CUdevice = int;
using nvmlReturn_t = int;
using nvmlDevice_t = struct nvmlDevice_st*;
struct nvmlMemory_t {
  unsigned long long total, free, used;
};
constexpr int kAttrClockRate = 13, kAttrMemClock = 36, kAttrSmCount = 16, kAttrCcMajor = 75, kAttrCcMinor = 76;
constexpr int kNvmlClockSm = 1, kNvmlClockMem = 2;

struct Nvml {
  const Library& lib;
  nvmlReturn_t (*init)() = nullptr;
  nvmlReturn_t (*shutdown)() = nullptr;
  nvmlReturn_t (*driver_version)(char*, unsigned) = nullptr;
  nvmlReturn_t (*by_bus_id)(const char*, nvmlDevice_t*) = nullptr;
  nvmlReturn_t (*uuid)(nvmlDevice_t, char*, unsigned) = nullptr;
  nvmlReturn_t (*memory)(nvmlDevice_t, nvmlMemory_t*) = nullptr;
  nvmlReturn_t (*clock)(nvmlDevice_t, int, unsigned*) = nullptr;
  nvmlReturn_t (*max_clock)(nvmlDevice_t, int, unsigned*) = nullptr;
  nvmlReturn_t (*pcie_gen)(nvmlDevice_t, unsigned*) = nullptr;
  nvmlReturn_t (*pcie_width)(nvmlDevice_t, unsigned*) = nullptr;
  nvmlReturn_t (*pcie_gen_max)(nvmlDevice_t, unsigned*) = nullptr;
  nvmlReturn_t (*pcie_width_max)(nvmlDevice_t, unsigned*) = nullptr;
  nvmlReturn_t (*ecc_mode)(nvmlDevice_t, int*, int*) = nullptr;
  nvmlReturn_t (*ecc_errors)(nvmlDevice_t, int, int, unsigned long long*) = nullptr;
  nvmlReturn_t (*mig_mode)(nvmlDevice_t, unsigned*, unsigned*) = nullptr;
  nvmlReturn_t (*power_limit)(nvmlDevice_t, unsigned*) = nullptr;
  nvmlReturn_t (*nvlink_state)(nvmlDevice_t, unsigned, int*) = nullptr;
  nvmlReturn_t (*mig_max)(nvmlDevice_t, unsigned*) = nullptr;
  nvmlReturn_t (*mig_handle)(nvmlDevice_t, unsigned, nvmlDevice_t*) = nullptr;

  explicit Nvml(const Library& l) : lib(l) {
    init = l.get<decltype(init)>("nvmlInit_v2");
    shutdown = l.get<decltype(shutdown)>("nvmlShutdown");
    driver_version = l.get<decltype(driver_version)>("nvmlSystemGetDriverVersion");
    by_bus_id = l.get<decltype(by_bus_id)>("nvmlDeviceGetHandleByPciBusId_v2");
    uuid = l.get<decltype(uuid)>("nvmlDeviceGetUUID");
    memory = l.get<decltype(memory)>("nvmlDeviceGetMemoryInfo");
    clock = l.get<decltype(clock)>("nvmlDeviceGetClockInfo");
    max_clock = l.get<decltype(max_clock)>("nvmlDeviceGetMaxClockInfo");
    pcie_gen = l.get<decltype(pcie_gen)>("nvmlDeviceGetCurrPcieLinkGeneration");
    pcie_width = l.get<decltype(pcie_width)>("nvmlDeviceGetCurrPcieLinkWidth");
    pcie_gen_max = l.get<decltype(pcie_gen_max)>("nvmlDeviceGetMaxPcieLinkGeneration");
    pcie_width_max = l.get<decltype(pcie_width_max)>("nvmlDeviceGetMaxPcieLinkWidth");
    ecc_mode = l.get<decltype(ecc_mode)>("nvmlDeviceGetEccMode");
    ecc_errors = l.get<decltype(ecc_errors)>("nvmlDeviceGetTotalEccErrors");
    mig_mode = l.get<decltype(mig_mode)>("nvmlDeviceGetMigMode");
    power_limit = l.get<decltype(power_limit)>("nvmlDeviceGetPowerManagementLimit");
    nvlink_state = l.get<decltype(nvlink_state)>("nvmlDeviceGetNvLinkState");
    mig_max = l.get<decltype(mig_max)>("nvmlDeviceGetMaxMigDeviceCount");
    mig_handle = l.get<decltype(mig_handle)>("nvmlDeviceGetMigDeviceHandleByIndex");
  }
};

void fill_from_nvml(const Nvml& n, GpuDevice& d) {
  nvmlDevice_t h = nullptr;
  if (!n.by_bus_id || n.by_bus_id(d.pci_bus_id.c_str(), &h) != 0) return;
  char buf[96] = {0};
  if (n.uuid && n.uuid(h, buf, sizeof buf) == 0) d.uuid = buf;
  nvmlMemory_t mem{};
  if (n.memory && n.memory(h, &mem) == 0) d.memory_free_bytes = mem.free;
  unsigned v = 0;
  if (n.clock && n.clock(h, kNvmlClockSm, &v) == 0) d.clock_sm_mhz = static_cast<int>(v);
  if (n.max_clock && n.max_clock(h, kNvmlClockSm, &v) == 0) d.clock_sm_max_mhz = static_cast<int>(v);
  if (n.max_clock && n.max_clock(h, kNvmlClockMem, &v) == 0) d.clock_mem_max_mhz = static_cast<int>(v);
  if (n.pcie_gen && n.pcie_gen(h, &v) == 0) d.pcie_gen = static_cast<int>(v);
  if (n.pcie_width && n.pcie_width(h, &v) == 0) d.pcie_width = static_cast<int>(v);
  if (n.pcie_gen_max && n.pcie_gen_max(h, &v) == 0) d.pcie_gen_max = static_cast<int>(v);
  if (n.pcie_width_max && n.pcie_width_max(h, &v) == 0) d.pcie_width_max = static_cast<int>(v);
  int cur = 0, pend = 0;
  d.ecc_mode = n.ecc_mode && n.ecc_mode(h, &cur, &pend) == 0 ? (cur ? "enabled" : "disabled") : "n/a";
  unsigned long long count = 0;
  if (d.ecc_mode == "enabled" && n.ecc_errors) {
    if (n.ecc_errors(h, 0, 1, &count) == 0) d.ecc_corrected = count;    // corrected, aggregate
    if (n.ecc_errors(h, 1, 1, &count) == 0) d.ecc_uncorrected = count;  // uncorrected, aggregate
  }
  unsigned mcur = 0, mpend = 0;
  d.mig_mode = n.mig_mode && n.mig_mode(h, &mcur, &mpend) == 0 ? (mcur ? "enabled" : "disabled") : "n/a";
  unsigned mig_slots = 0;
  if (d.mig_mode == "enabled" && n.mig_max && n.mig_handle && n.mig_max(h, &mig_slots) == 0)
    for (unsigned i = 0; i < mig_slots; ++i) {
      nvmlDevice_t mh = nullptr;
      if (n.mig_handle(h, i, &mh) == 0) ++d.mig_instances;  // slots without an instance return NOT_FOUND
    }
  if (n.power_limit && n.power_limit(h, &v) == 0) d.power_limit_w = v / 1000.0;
  if (n.nvlink_state)
    for (unsigned link = 0; link < 18; ++link) {
      int state = 0;
      if (n.nvlink_state(h, link, &state) != 0) break;
      d.nvlink_links_active += state ? 1 : 0;
    }
}

}  // namespace

NvidiaReport probe_nvidia(const std::string& libcuda, const std::string& libnvml) {
  NvidiaReport r;
  const Library cuda(libcuda);
  if (!cuda) {
    r.status = "no-driver";
    r.detail = fmt::format("no NVIDIA driver: {} cannot be loaded ({})", libcuda, ::dlerror());
    return r;
  }
  auto cuInit = cuda.get<CUresult (*)(unsigned)>("cuInit");
  auto cuDriverGetVersion = cuda.get<CUresult (*)(int*)>("cuDriverGetVersion");
  auto cuDeviceGetCount = cuda.get<CUresult (*)(int*)>("cuDeviceGetCount");
  auto cuDeviceGet = cuda.get<CUresult (*)(CUdevice*, int)>("cuDeviceGet");
  auto cuDeviceGetName = cuda.get<CUresult (*)(char*, int, CUdevice)>("cuDeviceGetName");
  auto cuDeviceGetAttribute = cuda.get<CUresult (*)(int*, int, CUdevice)>("cuDeviceGetAttribute");
  auto cuDeviceTotalMem = cuda.get<CUresult (*)(std::size_t*, CUdevice)>("cuDeviceTotalMem_v2");
  auto cuDeviceGetPCIBusId = cuda.get<CUresult (*)(char*, int, CUdevice)>("cuDeviceGetPCIBusId");
  auto cuDeviceCanAccessPeer = cuda.get<CUresult (*)(int*, CUdevice, CUdevice)>("cuDeviceCanAccessPeer");
  if (!cuInit || !cuDeviceGetCount || !cuDeviceGet || !cuDeviceGetName || !cuDeviceGetAttribute || !cuDeviceTotalMem) {
    r.status = "error";
    r.detail = fmt::format("{} lacks the CUDA driver entry points gpuvs needs", libcuda);
    return r;
  }
  const CUresult init = cuInit(0);
  if (cuDriverGetVersion) cuDriverGetVersion(&r.cuda_driver_version);
  int count = 0;
  if (init != 0 || cuDeviceGetCount(&count) != 0 || count == 0) {
    r.status = "no-device";
    r.detail = init == 100 || count == 0 ? "the NVIDIA driver is loaded but sees no GPU"
                                         : fmt::format("cuInit failed with CUDA error {}", init);
    return r;
  }
  const Library nvml_lib(libnvml);
  Nvml nvml(nvml_lib);
  r.nvml = nvml.init && nvml.init() == 0;
  if (r.nvml && nvml.driver_version) {
    char buf[96] = {0};
    if (nvml.driver_version(buf, sizeof buf) == 0) r.driver_version = buf;
  }
  for (int i = 0; i < count; ++i) {
    GpuDevice d;
    d.index = i;
    CUdevice dev = 0;
    if (cuDeviceGet(&dev, i) != 0) continue;
    char name[256] = {0};
    cuDeviceGetName(name, sizeof name, dev);
    d.name = name;
    cuDeviceGetAttribute(&d.sm_count, kAttrSmCount, dev);
    cuDeviceGetAttribute(&d.cc_major, kAttrCcMajor, dev);
    cuDeviceGetAttribute(&d.cc_minor, kAttrCcMinor, dev);
    int khz = 0;
    if (cuDeviceGetAttribute(&khz, kAttrClockRate, dev) == 0) d.clock_sm_max_mhz = khz / 1000;
    if (cuDeviceGetAttribute(&khz, kAttrMemClock, dev) == 0) d.clock_mem_max_mhz = khz / 1000;
    std::size_t total = 0;
    if (cuDeviceTotalMem(&total, dev) == 0) d.memory_total_bytes = total;
    char bus[64] = {0};
    if (cuDeviceGetPCIBusId && cuDeviceGetPCIBusId(bus, sizeof bus, dev) == 0) d.pci_bus_id = bus;
    if (r.nvml) fill_from_nvml(nvml, d);
    r.gpus.push_back(d);
  }
  r.p2p.assign(r.gpus.size(), std::vector<bool>(r.gpus.size(), false));
  for (std::size_t a = 0; a < r.gpus.size(); ++a)
    for (std::size_t b = 0; b < r.gpus.size(); ++b) {
      int ok = 0;
      if (a != b && cuDeviceCanAccessPeer &&
          cuDeviceCanAccessPeer(&ok, static_cast<CUdevice>(a), static_cast<CUdevice>(b)) == 0)
        r.p2p[a][b] = ok != 0;
    }
  if (r.nvml && nvml.shutdown) nvml.shutdown();
  r.status = "ok";
  return r;
}

}  // namespace gpuvs::hw
