// The benchmark registry: keys, bad keys, and that each CPU benchmark runs and passes its own check.
#include <gtest/gtest.h>

#include "bench/cpu_benchmarks.hpp"
#include "bench/registry.hpp"
#include "core/error.hpp"

using namespace gpuvs;

TEST(Bench, RegistryKeysAreStableAndUnique) {
  std::vector<std::string> keys;
  for (const auto& b : bench::registry()) {
    EXPECT_FALSE(b.description.empty()) << b.key;
    EXPECT_FALSE(b.unit.empty()) << b.key;
    keys.push_back(b.key);
  }
  for (const char* k : {"cpu.stream.copy", "cpu.stream.scale", "cpu.stream.add", "cpu.stream.triad", "cpu.fma.peak.1t",
                        "cpu.gemm.sgemm", "cpu.gemm.sgemm.1t"})
    EXPECT_NE(std::find(keys.begin(), keys.end(), k), keys.end()) << k;
  std::sort(keys.begin(), keys.end());
  EXPECT_EQ(std::adjacent_find(keys.begin(), keys.end()), keys.end());
}

TEST(Bench, UnknownKeyNamesTheValidOnes) {
  try {
    bench::run_benchmarks({"cpu.stream.tirad"}, {true, 1});
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("valid: cpu.stream.copy"), std::string::npos) << e.what();
  }
}

TEST(Bench, QuickCpuBenchmarksRunAndPassTheirChecks) {
  const auto results =
      bench::run_benchmarks({"cpu.stream.triad", "cpu.stream.copy", "cpu.gemm.sgemm.1t", "cpu.fma.peak.1t"}, {true, 1});
  ASSERT_EQ(results.size(), 4u);
  for (const auto& m : results) {
    EXPECT_EQ(m.status, "ok") << m.key << ": " << m.note;
    EXPECT_GT(m.median, 0) << m.key;
    EXPECT_LE(m.min, m.median);
    EXPECT_GE(m.max, m.median);
    EXPECT_GE(m.repetitions, 3);
  }
  EXPECT_EQ(results[0].key, "cpu.stream.copy");  // registry order
  EXPECT_EQ(results[0].unit, "GB/s");
  EXPECT_EQ(results[2].key, "cpu.fma.peak.1t");  // registry order: stream, fma, gemm
  // --quick arrays: 128 MiB of doubles at most.
  EXPECT_LE(bench::stream_elements({true, 1}) * 8, 128u * 1048576u);
}
