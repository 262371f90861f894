// SPDX-License-Identifier: Apache-2.0
// The device probe on this machine (whatever it has) and the parts that do not need a GPU.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "catalog/catalog.hpp"
#include "hw/cpu.hpp"
#include "hw/gpu_env.hpp"
#include "hw/match.hpp"
#include "hw/nvidia.hpp"

using namespace gpuvs;

namespace {
std::string proc_field(const char* file, const std::string& key) {
  std::ifstream in(file);
  std::string line;
  while (std::getline(in, line))
    if (line.rfind(key, 0) == 0) return line.substr(line.find(':') + 1);
  return "";
}
bool has_flag(const std::string& flags, const std::string& f) {
  std::istringstream ss(flags);
  std::string w;
  while (ss >> w)
    if (w == f) return true;
  return false;
}
}  // namespace

TEST(Cpu, ProbeIsSaneAndAgreesWithTheKernel) {
  const hw::CpuInfo c = hw::probe_cpu();
  EXPECT_FALSE(c.model.empty());
  EXPECT_GE(c.sockets, 1);
  EXPECT_GE(c.cores, 1);
  EXPECT_GE(c.threads, c.cores);
  EXPECT_GE(c.numa_nodes, 1);
  EXPECT_GT(c.l1d_bytes, 0u);
  EXPECT_GT(c.l2_bytes, c.l1d_bytes);
  const double kb = std::stod(proc_field("/proc/meminfo", "MemTotal"));
  EXPECT_NEAR(static_cast<double>(c.memory_bytes) / (kb * 1024.0), 1.0, 0.01);
  // CPUID's view matches the kernel's flags for the features both name the same way.
  const std::string flags = proc_field("/proc/cpuinfo", "flags");
  EXPECT_EQ(c.avx2, has_flag(flags, "avx2"));
  EXPECT_EQ(c.fma, has_flag(flags, "fma"));
  EXPECT_EQ(c.avx512f, has_flag(flags, "avx512f"));
  EXPECT_EQ(c.avx512_bf16, has_flag(flags, "avx512_bf16"));
  EXPECT_EQ(c.amx_tile, has_flag(flags, "amx_tile"));
}

TEST(Nvidia, MissingDriverIsSaidPlainly) {
  const hw::NvidiaReport r = hw::probe_nvidia("libcuda-that-does-not-exist.so.1");
  EXPECT_EQ(r.status, "no-driver");
  EXPECT_NE(r.detail.find("libcuda-that-does-not-exist.so.1"), std::string::npos);
  EXPECT_TRUE(r.gpus.empty());
  // The real probe on this machine answers one of the four states and never throws.
  const hw::NvidiaReport here = hw::probe_nvidia();
  EXPECT_TRUE(here.status == "ok" || here.status == "no-driver" || here.status == "no-device" || here.status == "error");
  if (here.status == "ok") {
    EXPECT_FALSE(here.gpus.empty());
  }
}

TEST(Nvidia, CatalogMatchByNameSmsAndMemory) {
  const catalog::Catalog cat = catalog::Catalog::builtin();
  auto match = [&](const char* name, int sms, double gib) {
    hw::GpuDevice d;
    d.name = name;
    d.sm_count = sms;
    d.memory_total_bytes = static_cast<std::uint64_t>(gib * 1073741824.0);
    return hw::match_catalog(d, cat);
  };
  EXPECT_EQ(match("NVIDIA H100 80GB HBM3", 132, 79.6), "h100-sxm");
  EXPECT_EQ(match("NVIDIA H100 PCIe", 114, 79.6), "h100-pcie");
  EXPECT_EQ(match("NVIDIA A100-SXM4-80GB", 108, 79.2), "a100-80gb-sxm");
  EXPECT_EQ(match("NVIDIA A100-PCIE-40GB", 108, 39.4), "a100-40gb-pcie");
  EXPECT_EQ(match("NVIDIA GeForce RTX 4090", 128, 23.6), "rtx-4090");
  EXPECT_EQ(match("NVIDIA RTX 6000 Ada Generation", 142, 47.5), "rtx-6000-ada");
  EXPECT_EQ(match("NVIDIA RTX A6000", 84, 47.5), "rtx-a6000");
  EXPECT_EQ(match("NVIDIA H200", 132, 139.8), "h200-sxm");
  EXPECT_EQ(match("NVIDIA GH200 480GB", 132, 95.0), "gh200");
  EXPECT_EQ(match("Tesla V100-SXM2-16GB", 80, 15.8), "v100-sxm2-16gb");
  EXPECT_EQ(match("NVIDIA GeForce GTX 1080", 20, 8.0), "");
}

// The names users type (issue 33): what nvidia-smi and torch.cuda.get_device_name() print, with no SM count
// or memory reading to go on.
TEST(Nvidia, TypedDeviceNamesNameTheirCatalogCard) {
  const catalog::Catalog cat = catalog::Catalog::builtin();
  EXPECT_EQ(hw::match_catalog_name("NVIDIA GeForce RTX 4090", cat), "rtx-4090");
  EXPECT_EQ(hw::match_catalog_name("NVIDIA H100 80GB HBM3", cat), "h100-sxm");
  EXPECT_EQ(hw::match_catalog_name("NVIDIA H100 PCIe", cat), "h100-pcie");
  EXPECT_EQ(hw::match_catalog_name("NVIDIA A100-SXM4-40GB", cat), "a100-40gb-sxm");
  EXPECT_EQ(hw::match_catalog_name("NVIDIA A100 80GB PCIe", cat), "a100-80gb-pcie");
  EXPECT_EQ(hw::match_catalog_name("Tesla V100-SXM2-16GB", cat), "v100-sxm2-16gb");
  EXPECT_EQ(hw::match_catalog_name("NVIDIA RTX 6000 Ada Generation", cat), "rtx-6000-ada");
  EXPECT_EQ(hw::match_catalog_name("NVIDIA RTX A6000", cat), "rtx-a6000");
  EXPECT_EQ(hw::match_catalog_name("NVIDIA A10", cat), "a10");  // a word, not the start of "a100"
  EXPECT_EQ(hw::match_catalog_name("NVIDIA A100", cat), "");   // two SXM A100s fit equally: not guessed
  EXPECT_EQ(hw::catalog_names_matching("NVIDIA A100", cat), (std::vector<std::string>{"a100-40gb-sxm", "a100-80gb-sxm"}));
  EXPECT_EQ(hw::match_catalog_name("NVIDIA GeForce GTX 1080", cat), "");
  EXPECT_EQ(hw::match_catalog_name("", cat), "");
}

TEST(Hw, ThrottleReasonsAreNamed) {
  EXPECT_TRUE(hw::throttle_reasons(0).empty());
  EXPECT_EQ(hw::throttle_reasons(0x4), std::vector<std::string>{"sw_power_cap"});
  EXPECT_EQ(hw::throttle_reasons(0x1 | 0x40), (std::vector<std::string>{"gpu_idle", "hw_thermal"}));
  const auto other = hw::throttle_reasons(0x10000);
  ASSERT_EQ(other.size(), 1u);
  EXPECT_EQ(other[0], "other_0x10000");
}

TEST(Hw, EnvSamplerWithoutNvmlSamplesNothing) {
  const hw::GpuEnvSampler s("libnvidia-ml-absent.so.1");
  EXPECT_FALSE(s.available());
  EXPECT_FALSE(s.sample("00000000:01:00.0").has_value());
  hw::GpuEnv e;
  e.sm_mhz = 1980;
  e.power_w = 612.25;
  e.throttle = {"sw_power_cap"};
  const auto f = e.fields();
  EXPECT_EQ(f[0], (std::pair<std::string, std::string>{"sm_clock_mhz", "1980"}));
  EXPECT_EQ(f[2].second, "612.2");
  EXPECT_EQ(f[4].second, "sw_power_cap");
}
