// SPDX-License-Identifier: Apache-2.0
// The benchmark registry: keys, bad keys, and that each CPU benchmark runs and passes its own check.
#include <gtest/gtest.h>

#include "bench/cpu_benchmarks.hpp"
#include "bench/registry.hpp"
#include "bench/results_json.hpp"
#include "core/rng.hpp"
#include "hw/cpu.hpp"
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
                        "cpu.gemm.sgemm", "cpu.gemm.sgemm.1t", "cpu.gemm.bf16", "cpu.stream.triad.1t", "cuda.mem.read", "cuda.mem.write",
                        "cuda.mem.copy", "cuda.memcpy.d2d", "cuda.memcpy.h2d.pinned", "cuda.memcpy.d2h.pageable",
                        "cuda.p2p.copy", "cuda.launch.latency", "cuda.graph.launch", "cuda.gemm.fp32", "cuda.gemm.tf32",
                        "cuda.gemm.fp16", "cuda.gemm.bf16", "cuda.gemm.fp8", "cuda.gemm.int8", "cuda.nccl.allreduce"})
    EXPECT_NE(std::find(keys.begin(), keys.end(), k), keys.end()) << k;
  std::sort(keys.begin(), keys.end());
  EXPECT_EQ(std::adjacent_find(keys.begin(), keys.end()), keys.end());
}

TEST(Bench, UnknownKeyNamesTheValidOnes) {
  try {
    bench::run_benchmarks({"cpu.stream.tirad"}, {true, 1, std::nullopt});
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("valid: cpu.stream.copy"), std::string::npos) << e.what();
  }
}

TEST(Bench, QuickCpuBenchmarksRunAndPassTheirChecks) {
  const auto results =
      bench::run_benchmarks({"cpu.stream.triad", "cpu.stream.copy", "cpu.gemm.sgemm.1t", "cpu.fma.peak.1t"}, {true, 1, std::nullopt});
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
  EXPECT_LE(bench::stream_elements({true, 1, std::nullopt}) * 8, 128u * 1048576u);
}

TEST(Bench, Bf16GemmRunsWhereTheIsaHasIt) {
  const auto r = bench::run_benchmarks({"cpu.gemm.bf16"}, {true, 1, std::nullopt});
  ASSERT_EQ(r.size(), 1u);
  const hw::CpuInfo cpu = hw::probe_cpu();
  if (cpu.avx512_bf16 || cpu.amx_bf16) {
    EXPECT_EQ(r[0].status, "ok") << r[0].note;
    EXPECT_GT(r[0].median, 0);
    EXPECT_EQ(r[0].device, "cpu");
  } else {
    EXPECT_EQ(r[0].status, "waived");
    EXPECT_NE(r[0].note.find("AVX512_BF16"), std::string::npos);
  }
}

TEST(Bench, PercentOfSpecOnlyForOkFiguresWithASpec) {
  bench::Measurement m;
  m.median = 4080;
  EXPECT_FALSE(m.pct_of_spec());
  m.spec = 4800;
  EXPECT_NEAR(*m.pct_of_spec(), 85.0, 1e-12);
  m.status = "FAILED";
  EXPECT_FALSE(m.pct_of_spec());
}

TEST(Bench, ResultsRecordRoundTrips) {
  bench::Measurement m;
  m.key = "cuda.memcpy.d2d";
  m.unit = "GB/s";
  m.device = "cuda:0 NVIDIA H200 (h200-sxm)";
  m.median = 4100;
  m.min = 4000;
  m.max = 4200;
  m.spread = 0.01;
  m.repetitions = 20;
  m.spec = 4800;
  m.spec_what = "h200-sxm HBM3e bandwidth";
  m.env = {{"sm_clock_mhz", "1980"}, {"throttle", "none"}};
  bench::Measurement w;
  w.key = "cuda.p2p.copy";
  w.unit = "GB/s";
  w.status = "waived";
  w.note = "needs two or more GPUs";
  const auto j = bench::results_json({m, w}, true, "test");
  EXPECT_EQ(j["schema_version"], bench::kResultsSchema);
  EXPECT_NEAR(j["results"][0]["pct_of_spec"].get<double>(), 100.0 * 4100 / 4800, 1e-9);
  EXPECT_TRUE(j["results"][1]["median"].is_null());
  EXPECT_TRUE(j["results"][1]["pct_of_spec"].is_null());
  const auto back = bench::measurements_from_json(nlohmann::json::parse(j.dump()), "t.json");
  ASSERT_EQ(back.size(), 2u);
  EXPECT_EQ(back[0].key, m.key);
  EXPECT_DOUBLE_EQ(back[0].median, 4100);
  EXPECT_DOUBLE_EQ(*back[0].spec, 4800);
  EXPECT_EQ(back[0].env.size(), 2u);
  EXPECT_EQ(back[1].status, "waived");
}

TEST(Bench, MalformedResultsRecordsAreInputErrors) {
  for (const char* bad : {R"([])", R"({"results": []})", R"({"schema_version": 1, "results": []})",
                          R"({"schema_version": 2, "results": {}})", R"({"schema_version": 2, "results": [{"key": 1}]})",
                          R"({"schema_version": 2, "results": [{"key": "k", "unit": "GB/s", "status": "ok"}]})",
                          R"({"schema_version": 2, "results": [{"key": "k", "unit": "GB/s", "status": "ok", "median": -1}]})",
                          // A repetition count of 1e308 was converted to int (undefined; found by fuzz_bench_record).
                          R"({"schema_version": 2, "results": [{"key": "k", "unit": "GB/s", "status": "waived", "repetitions": 1e308}]})",
                          R"({"schema_version": 2, "results": [{"key": "k", "unit": "GB/s", "status": "waived", "repetitions": -1}]})",
                          // Read as int, 2^32 + 2 was schema 2 (found in review).
                          R"({"schema_version": 4294967298, "results": []})"}) {
    try {
      bench::measurements_from_json(nlohmann::json::parse(bad), "bad.json");
      ADD_FAILURE() << bad;
    } catch (const InputError& e) {
      EXPECT_EQ(std::string(e.what()).rfind("bad.json", 0), 0u) << e.what();
    }
  }
}

TEST(Bench, ResultsReaderSurvivesMutatedRecords) {
  // Fuzz-style: flip, drop and retype fields of a valid record; the reader either accepts or throws
  // InputError, never anything else.
  bench::Measurement m;
  m.key = "cuda.gemm.bf16";
  m.unit = "TFLOP/s";
  m.median = 700;
  m.spec = 989.4;
  const std::string good = bench::results_json({m}, true, "t").dump();
  const CounterRng rng(9, 9);
  int accepted = 0, rejected = 0;
  for (std::uint64_t t = 0; t < 400; ++t) {
    std::string s = good;
    const auto pos = static_cast<std::size_t>(rng.uniform(t) * static_cast<double>(s.size()));
    const char repl[] = {'"', '{', '}', '[', ']', ',', ':', '0', '-', 'x', ' '};
    s[pos] = repl[static_cast<std::size_t>(rng.uniform(t + 1000) * 11) % 11];
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(s);
    } catch (const nlohmann::json::exception&) {
      continue;  // not JSON at all: the command layer reports that
    }
    try {
      bench::measurements_from_json(j, "f.json");
      ++accepted;
    } catch (const InputError&) {
      ++rejected;
    }
  }
  EXPECT_GT(accepted + rejected, 50);
}

TEST(Bench, OneThreadTriadIsItsOwnFigure) {
  const auto r = bench::run_benchmarks({"cpu.stream.triad.1t"}, {true, 2, std::nullopt});
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].key, "cpu.stream.triad.1t");
  EXPECT_EQ(r[0].status, "ok") << r[0].note;
  EXPECT_GT(r[0].median, 0);
}
