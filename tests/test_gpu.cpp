// SPDX-License-Identifier: Apache-2.0
// The CUDA plugin: that a CUDA build loads it, that it reports why there is no GPU when there is none,
// and — wherever a GPU is present (scripts/device-check) — that every GPU benchmark runs, passes its own
// self-check and lands in a sane range. Without a GPU those tests are reported skipped, not passed.
#include <gtest/gtest.h>

#include <cstdlib>

#include "bench/gpu_benchmarks.hpp"
#include "bench/registry.hpp"
#include "engine/cuda/cuda_build.hpp"
#include "gpu/counting.hpp"
#include "gpu/plugin_loader.hpp"

using namespace gpuvs;

namespace {

int gpu_count() {
  std::string why;
  gpu::Api* api = gpu::plugin(why);
  return api ? api->device_count(why) : 0;
}

}  // namespace

TEST(Gpu, CountingConventions) {
  EXPECT_DOUBLE_EQ(gpu::bytes_counted("cuda.mem.copy", 1e9), 2e9);
  EXPECT_DOUBLE_EQ(gpu::bytes_counted("cuda.memcpy.d2d", 1e9), 2e9);
  for (const char* k : {"cuda.mem.read", "cuda.mem.write", "cuda.memcpy.h2d.pinned", "cuda.memcpy.d2h.pageable", "cuda.p2p.copy"})
    EXPECT_DOUBLE_EQ(gpu::bytes_counted(k, 1e9), 1e9) << k;
  EXPECT_DOUBLE_EQ(gpu::gemm_flops(8192, 8192, 8192), 2.0 * 8192 * 8192 * 8192);
  EXPECT_DOUBLE_EQ(gpu::allreduce_bus_factor(2), 1.0);
  EXPECT_DOUBLE_EQ(gpu::allreduce_bus_factor(8), 1.75);
  EXPECT_DOUBLE_EQ(gpu::allreduce_bus_factor(1), 0.0);
}

TEST(Gpu, PcieTheoreticalBandwidth) {
  EXPECT_NEAR(bench::pcie_gbs(3, 16), 15.754, 1e-3);  // 8 GT/s, 128b/130b
  EXPECT_NEAR(bench::pcie_gbs(4, 16), 31.508, 1e-3);
  EXPECT_NEAR(bench::pcie_gbs(5, 16), 63.015, 1e-3);
  EXPECT_NEAR(bench::pcie_gbs(2, 8), 4.0, 1e-9);  // 5 GT/s, 8b/10b
  EXPECT_EQ(bench::pcie_gbs(0, 16), 0);
  EXPECT_EQ(bench::pcie_gbs(4, 0), 0);
}

TEST(Gpu, PluginLoadsInACudaBuild) {
  std::string why;
  gpu::Api* api = gpu::plugin(why);
  if (!engine::cuda::built_with_cuda()) {
    EXPECT_EQ(api, nullptr);
    EXPECT_NE(why.find("without CUDA"), std::string::npos) << why;
    return;
  }
  ASSERT_NE(api, nullptr) << why;
  EXPECT_EQ(api->abi_version(), gpu::kAbiVersion);
  EXPECT_NE(api->build_info().find("cuBLASLt"), std::string::npos) << api->build_info();
  std::string none;
  const int n = api->device_count(none);
  if (n == 0) {
    EXPECT_FALSE(none.empty());
  }
  // An unknown key is a failure, never a silent pass.
  const auto r = api->run({"cuda.nothing", 0, true, nullptr});
  EXPECT_EQ(r.status, "FAILED");
}

TEST(Gpu, BenchmarksAreWaivedWithTheReasonWhenNoGpu) {
  if (gpu_count() > 0) GTEST_SKIP() << "a GPU is present; covered by QuickBenchmarksOnTheGpu";
  const auto results = bench::run_benchmarks({"cuda.mem.read", "cuda.gemm.bf16", "cuda.nccl.allreduce"}, {true, 1, std::nullopt});
  ASSERT_EQ(results.size(), 3u);
  for (const auto& m : results) {
    EXPECT_EQ(m.status, "waived") << m.key;
    EXPECT_FALSE(m.note.empty()) << m.key;
    EXPECT_FALSE(m.pct_of_spec().has_value());
  }
}

TEST(Gpu, QuickBenchmarksOnTheGpu) {
  const int n = gpu_count();
  if (n == 0 && std::getenv("GPUVS_EXPECT_GPU")) FAIL() << "GPUVS_EXPECT_GPU is set but: " << bench::gpu_status();
  if (n == 0) GTEST_SKIP() << "no GPU here: " << bench::gpu_status();
  std::vector<std::string> keys;
  for (const auto& b : bench::registry())
    if (b.key.rfind("cuda.", 0) == 0) keys.push_back(b.key);
  const auto results = bench::run_benchmarks(keys, {true, 0, 0});
  for (const auto& m : results) {
    if (m.status == "waived") {
      EXPECT_TRUE(m.key == "cuda.p2p.copy" || m.key == "cuda.nccl.allreduce" || m.key == "cuda.gemm.fp8") << m.key << ": " << m.note;
      continue;
    }
    ASSERT_EQ(m.status, "ok") << m.key << ": " << m.note;
    EXPECT_GT(m.median, 0) << m.key;
    EXPECT_GE(m.repetitions, 8) << m.key;
    if (auto pct = m.pct_of_spec()) {
      // A figure above its spec means a counting error; one below 5% means a broken benchmark.
      EXPECT_LT(*pct, 105.0) << m.key << " " << m.median << " " << m.unit << " vs " << *m.spec;
      EXPECT_GT(*pct, 5.0) << m.key;
    }
    if (std::getenv("GPUVS_EXPECT_NVML")) {
      EXPECT_FALSE(m.env.empty()) << m.key << ": no NVML sample";
    }
  }
}
