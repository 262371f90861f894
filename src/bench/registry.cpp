// SPDX-License-Identifier: Apache-2.0
#include "bench/registry.hpp"

#include <fmt/format.h>

#include <set>

#include "bench/cpu_benchmarks.hpp"
#include "bench/gpu_benchmarks.hpp"
#include "core/error.hpp"
#include "core/strings.hpp"
#include "engine/executor.hpp"
#include "hw/cpu.hpp"

namespace gpuvs::bench {

namespace {

std::optional<std::string> always() { return std::nullopt; }

std::optional<std::string> needs_bf16_isa() {
  static const hw::CpuInfo cpu = hw::probe_cpu();
  if (cpu.avx512_bf16 || cpu.amx_bf16) return std::nullopt;
  return std::string("this CPU has neither AVX512_BF16 nor AMX-BF16 (oneDNN would only emulate BF16)");
}

bool is_stream(const std::string& key) { return key.rfind("cpu.stream.", 0) == 0 && key.find(".1t") == std::string::npos; }
bool is_gpu(const std::string& key) { return key.rfind("cuda.", 0) == 0; }

}  // namespace

const std::vector<Benchmark>& registry() {
  static const std::vector<Benchmark> r = [] {
    std::vector<Benchmark> v;
    for (const char* k : {"copy", "scale", "add", "triad"})
      v.push_back({fmt::format("cpu.stream.{}", k), fmt::format("STREAM {} memory bandwidth", k), "GB/s", always, nullptr});
    v.push_back({"cpu.stream.triad.1t", "STREAM triad on one thread (with cpu.stream.triad: bandwidth scaling)", "GB/s", always,
                 [](const BenchOptions& o) {
                   engine::set_cpu_threads(1);
                   Measurement m = stream_benchmarks(o)[3];
                   m.key = "cpu.stream.triad.1t";
                   m.description = "STREAM triad a = b + s*c on one thread, 24 bytes per element";
                   return m;
                 }});
    v.push_back({"cpu.fma.peak.1t", "FP32 FMA peak of the widest vector ISA, one thread", "GFLOP/s", always,
                 [](const BenchOptions& o) { return fma_peak(o); }});
    v.push_back({"cpu.gemm.sgemm", "SGEMM through oneDNN (the engine's GEMM) on every thread", "GFLOP/s", always,
                 [](const BenchOptions& o) { return sgemm(o, o.threads > 0 ? o.threads : engine::cpu_threads(), "cpu.gemm.sgemm"); }});
    v.push_back({"cpu.gemm.sgemm.1t", "SGEMM through oneDNN on one thread", "GFLOP/s", always,
                 [](const BenchOptions& o) { return sgemm(o, 1, "cpu.gemm.sgemm.1t"); }});
    v.push_back({"cpu.gemm.bf16", "BF16 GEMM (FP32 accumulate) through oneDNN on every thread", "GFLOP/s", needs_bf16_isa,
                 [](const BenchOptions& o) { return gemm_bf16(o, o.threads > 0 ? o.threads : engine::cpu_threads()); }});
    for (auto& g : gpu_benchmarks()) v.push_back(std::move(g));
    return v;
  }();
  return r;
}

std::vector<Measurement> run_benchmarks(const std::vector<std::string>& keys, const BenchOptions& opt) {
  std::vector<std::string> valid;
  for (const auto& b : registry()) valid.push_back(b.key);
  for (const auto& k : keys)
    if (std::find(valid.begin(), valid.end(), k) == valid.end())
      throw InputError(fmt::format("--only: unknown benchmark '{}' (valid: {})", strings::printable(k), strings::join(valid, ", ")));
  check_device(opt);
  auto wanted = [&](const std::string& k) { return keys.empty() || std::find(keys.begin(), keys.end(), k) != keys.end(); };
  const int threads = opt.threads > 0 ? opt.threads : engine::cpu_threads();
  engine::set_cpu_threads(threads);
  std::vector<Measurement> out;
  bool stream_done = false;
  for (const auto& b : registry()) {
    if (!wanted(b.key)) continue;
    if (auto why = b.waived()) {
      Measurement m;
      m.key = b.key;
      m.description = b.description;
      m.unit = b.unit;
      m.status = "waived";
      m.note = *why;
      m.device = is_gpu(b.key) ? fmt::format("cuda:{}", opt.device.value_or(0)) : "cpu";
      out.push_back(m);
      continue;
    }
    if (is_stream(b.key)) {
      if (stream_done) continue;
      stream_done = true;
      for (auto& m : stream_benchmarks(opt))
        if (wanted(m.key)) {
          m.device = "cpu";
          out.push_back(m);
        }
      continue;
    }
    out.push_back(b.run(opt));
    if (out.back().device.empty()) out.back().device = "cpu";
    engine::set_cpu_threads(threads);  // single-thread runs change it
  }
  return out;
}

}  // namespace gpuvs::bench
