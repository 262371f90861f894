// SPDX-License-Identifier: Apache-2.0
#include "hw/cpu.hpp"

#include <cpuid.h>
#include <hwloc.h>
#include <unistd.h>

#include <fstream>

namespace gpuvs::hw {

namespace {

struct Regs {
  unsigned a = 0, b = 0, c = 0, d = 0;
};

Regs cpuid(unsigned leaf, unsigned sub) {
  Regs r;
  if (!__get_cpuid_count(leaf, sub, &r.a, &r.b, &r.c, &r.d)) r = {};
  return r;
}

bool bit(unsigned v, int n) { return (v >> n) & 1u; }

// The OS must save the wide registers for AVX/AVX-512/AMX to be usable (XGETBV).
std::uint64_t xcr0() {
  unsigned lo = 0, hi = 0;
  __asm__("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return (static_cast<std::uint64_t>(hi) << 32) | lo;
}

std::string cpuinfo_field(const std::string& key) {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind(key, 0) == 0) {
      const auto c = line.find(':');
      if (c != std::string::npos) return line.substr(line.find_first_not_of(" \t", c + 1));
    }
  return "";
}

int count(hwloc_topology_t t, hwloc_obj_type_t type) {
  const int n = hwloc_get_nbobjs_by_type(t, type);
  return n > 0 ? n : 0;
}

std::uint64_t cache_size(hwloc_topology_t t, hwloc_obj_type_t type) {
  std::uint64_t best = 0;
  for (int i = 0; i < count(t, type); ++i) {
    const hwloc_obj_t o = hwloc_get_obj_by_type(t, type, static_cast<unsigned>(i));
    if (o && o->attr) best = std::max<std::uint64_t>(best, o->attr->cache.size);
  }
  return best;
}

}  // namespace

std::vector<std::string> CpuInfo::features() const {
  std::vector<std::string> f;
  const std::pair<bool, const char*> all[] = {
      {sse42, "sse4.2"},     {avx, "avx"},       {avx2, "avx2"},         {fma, "fma"},
      {avx512f, "avx512f"},  {avx512bw, "avx512bw"}, {avx512vl, "avx512vl"}, {avx512_vnni, "avx512_vnni"},
      {avx512_bf16, "avx512_bf16"}, {avx_vnni, "avx_vnni"}, {amx_tile, "amx_tile"}, {amx_bf16, "amx_bf16"},
      {amx_int8, "amx_int8"}};
  for (const auto& [on, name] : all)
    if (on) f.emplace_back(name);
  return f;
}

CpuInfo probe_cpu() {
  CpuInfo c;
  c.model = cpuinfo_field("model name");
  c.vendor = cpuinfo_field("vendor_id");
  hwloc_topology_t t;
  if (hwloc_topology_init(&t) == 0 && hwloc_topology_load(t) == 0) {
    c.sockets = count(t, HWLOC_OBJ_PACKAGE);
    c.cores = count(t, HWLOC_OBJ_CORE);
    c.threads = count(t, HWLOC_OBJ_PU);
    c.numa_nodes = count(t, HWLOC_OBJ_NUMANODE);
    c.l1d_bytes = cache_size(t, HWLOC_OBJ_L1CACHE);
    c.l2_bytes = cache_size(t, HWLOC_OBJ_L2CACHE);
    c.l3_bytes = cache_size(t, HWLOC_OBJ_L3CACHE);
    hwloc_topology_destroy(t);
  }
  if (c.threads == 0) c.threads = static_cast<int>(::sysconf(_SC_NPROCESSORS_ONLN));
  if (c.cores == 0) c.cores = c.threads;
  // The OS's total (MemTotal): NUMA nodes of VMs can under-report what hotplug added.
  c.memory_bytes = static_cast<std::uint64_t>(::sysconf(_SC_PHYS_PAGES)) * static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
  const Regs l1 = cpuid(1, 0), l7 = cpuid(7, 0), l71 = cpuid(7, 1);
  const bool osxsave = bit(l1.c, 27);
  const std::uint64_t x = osxsave ? xcr0() : 0;
  const bool ymm = (x & 0x6) == 0x6, zmm = (x & 0xE6) == 0xE6, amx = (x & 0x60000) == 0x60000;
  c.sse42 = bit(l1.c, 20);
  c.avx = bit(l1.c, 28) && ymm;
  c.fma = bit(l1.c, 12) && ymm;
  c.avx2 = bit(l7.b, 5) && ymm;
  c.avx512f = bit(l7.b, 16) && zmm;
  c.avx512bw = bit(l7.b, 30) && zmm;
  c.avx512vl = bit(l7.b, 31) && zmm;
  c.avx512_vnni = bit(l7.c, 11) && zmm;
  c.avx512_bf16 = bit(l71.a, 5) && zmm;
  c.avx_vnni = bit(l71.a, 4) && ymm;
  c.amx_bf16 = bit(l7.d, 22) && amx;
  c.amx_tile = bit(l7.d, 24) && amx;
  c.amx_int8 = bit(l7.d, 25) && amx;
  return c;
}

}  // namespace gpuvs::hw
