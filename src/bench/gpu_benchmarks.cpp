// SPDX-License-Identifier: Apache-2.0
#include "bench/gpu_benchmarks.hpp"

#include <fmt/format.h>

#include <mutex>

#include "catalog/catalog.hpp"
#include "core/error.hpp"
#include "core/stats.hpp"
#include "gpu/plugin_loader.hpp"
#include "hw/gpu_env.hpp"
#include "hw/match.hpp"
#include "hw/nvidia.hpp"

namespace gpuvs::bench {

namespace {

enum class Spec { none, memory, pcie, peer, fp32, tf32, fp16, bf16, fp8, int8 };

struct GpuKey {
  const char* key;
  const char* description;
  const char* unit;
  Spec spec;
  int min_gpus;
};

constexpr GpuKey kKeys[] = {
    {"cuda.mem.read", "device memory read bandwidth (reduction kernel)", "GB/s", Spec::memory, 1},
    {"cuda.mem.write", "device memory write bandwidth (store kernel)", "GB/s", Spec::memory, 1},
    {"cuda.mem.copy", "device memory copy bandwidth (kernel; read + write counted)", "GB/s", Spec::memory, 1},
    {"cuda.memcpy.d2d", "cudaMemcpy device to device (read + write counted)", "GB/s", Spec::memory, 1},
    {"cuda.memcpy.h2d.pinned", "host to device copy from pinned memory", "GB/s", Spec::pcie, 1},
    {"cuda.memcpy.d2h.pinned", "device to host copy into pinned memory", "GB/s", Spec::pcie, 1},
    {"cuda.memcpy.h2d.pageable", "host to device copy from pageable memory", "GB/s", Spec::pcie, 1},
    {"cuda.memcpy.d2h.pageable", "device to host copy into pageable memory", "GB/s", Spec::pcie, 1},
    {"cuda.p2p.copy", "peer-to-peer copy, median over GPU pairs", "GB/s", Spec::peer, 2},
    {"cuda.launch.latency", "kernel launch + synchronize round trip", "us", Spec::none, 1},
    {"cuda.launch.async", "back-to-back kernel launches, per kernel", "us", Spec::none, 1},
    {"cuda.graph.launch", "kernels replayed from a CUDA graph, per kernel", "us", Spec::none, 1},
    {"cuda.gemm.fp32", "cuBLASLt SGEMM (FP32, no tensor cores)", "TFLOP/s", Spec::fp32, 1},
    {"cuda.gemm.tf32", "cuBLASLt GEMM, TF32 tensor cores, FP32 accumulate", "TFLOP/s", Spec::tf32, 1},
    {"cuda.gemm.fp16", "cuBLASLt GEMM, FP16 in/out, FP32 accumulate", "TFLOP/s", Spec::fp16, 1},
    {"cuda.gemm.bf16", "cuBLASLt GEMM, BF16 in/out, FP32 accumulate", "TFLOP/s", Spec::bf16, 1},
    {"cuda.gemm.fp8", "cuBLASLt GEMM, FP8 E4M3 in, BF16 out, FP32 accumulate", "TFLOP/s", Spec::fp8, 1},
    {"cuda.gemm.int8", "cuBLASLt GEMM, INT8 in, INT32 accumulate", "TOPS", Spec::int8, 1},
    {"cuda.nccl.allreduce", "NCCL all-reduce bus bandwidth across all GPUs (nccl-tests busbw)", "GB/s", Spec::peer, 2},
};

/// What the GPU benchmarks need to know about this machine, gathered once per process.
struct Context {
  gpu::Api* api = nullptr;
  std::string why;  // no plugin, or no device
  int count = 0;
  hw::NvidiaReport probe;
  catalog::Catalog catalog = catalog::Catalog::builtin();
};

const Context& context() {
  static const Context ctx = [] {
    Context c;
    c.api = gpu::plugin(c.why);
    if (c.api) c.count = c.api->device_count(c.why);
    if (c.api && c.count == 0) {  // the driver probe says more precisely what is missing
      const hw::NvidiaReport p = hw::probe_nvidia();
      if (p.status != "ok") c.why = p.detail;
    }
    if (c.count > 0) {
      c.probe = hw::probe_nvidia_matched(c.catalog);
    }
    return c;
  }();
  return ctx;
}

const hw::GpuDevice* probed(int device) {
  for (const auto& g : context().probe.gpus)
    if (g.index == device) return &g;
  return nullptr;
}

void set_spec(Measurement& m, Spec spec, const hw::GpuDevice* dev, const Context& ctx) {
  if (spec == Spec::none || !dev || dev->catalog_id.empty()) return;
  const catalog::Gpu& g = ctx.catalog.find(dev->catalog_id);
  auto peak = [&](const catalog::Peak& p, const char* what) {
    if (p.dense) {
      m.spec = *p.dense;
      m.spec_what = fmt::format("{} dense {} peak", g.id, what);
    }
  };
  switch (spec) {
    case Spec::memory:
      m.spec = g.memory_bandwidth_gbs;
      m.spec_what = fmt::format("{} {} bandwidth", g.id, g.memory_type);
      break;
    case Spec::pcie: {
      // The link's maximum, not its current state: an idle GPU trains its link down (to gen 1 at times),
      // and the copy itself brings it back up.
      const int gen = dev->pcie_gen_max > 0 ? dev->pcie_gen_max : g.pcie_gen;
      const int width = dev->pcie_width_max > 0 ? dev->pcie_width_max : 16;
      if (gen > 0) {
        m.spec = pcie_gbs(gen, width);
        m.spec_what = fmt::format("PCIe gen {} x{} one direction{}", gen, width, dev->pcie_gen_max > 0 ? " (link maximum)" : " (catalog)");
      }
      break;
    }
    case Spec::peer:
      if (g.has_nvlink()) {
        m.spec = g.nvlink_gbs / 2;
        m.spec_what = fmt::format("{} {} one direction", g.id, g.nvlink);
      } else if (g.pcie_gen > 0) {
        m.spec = pcie_gbs(g.pcie_gen, 16);
        m.spec_what = fmt::format("PCIe gen {} x16 one direction", g.pcie_gen);
      }
      break;
    case Spec::fp32:
      m.spec = g.fp32_tflops;
      m.spec_what = fmt::format("{} FP32 non-tensor peak", g.id);
      break;
    case Spec::tf32: peak(g.tf32, "TF32"); break;
    case Spec::fp16: peak(g.fp16_fp32acc, "FP16 (FP32 accumulate)"); break;
    case Spec::bf16: peak(g.bf16, "BF16"); break;
    case Spec::fp8: peak(g.fp8_fp32acc, "FP8 (FP32 accumulate)"); break;
    case Spec::int8: peak(g.int8, "INT8"); break;
    case Spec::none: break;
  }
}

Measurement run_gpu(const GpuKey& k, const BenchOptions& opt) {
  const Context& ctx = context();
  const int device = opt.device.value_or(0);
  const hw::GpuDevice* dev = probed(device);
  Measurement m;
  m.key = k.key;
  m.description = k.description;
  m.unit = k.unit;
  m.device = dev ? fmt::format("cuda:{} {}{}", device, dev->name, dev->catalog_id.empty() ? "" : " (" + dev->catalog_id + ")")
                 : fmt::format("cuda:{}", device);
  static const hw::GpuEnvSampler sampler;
  gpu::BenchRequest req{k.key, device, opt.quick, nullptr};
  if (dev && sampler.available())
    req.while_busy = [&] {
      if (auto e = sampler.sample(dev->pci_bus_id)) m.env = e->fields();
    };
  const gpu::BenchResult r = ctx.api->run(req);
  m.status = r.status;
  m.note = r.note;
  m.detail = r.detail;
  if (r.status == "ok" && r.samples.empty()) {
    m.status = "FAILED";
    m.note = "the benchmark returned no samples";
  }
  if (m.status == "ok") {
    const auto st = stats::summarize(r.samples);
    m.median = st.median;
    m.min = st.min;
    m.max = st.max;
    m.spread = st.rel_mad;
    m.repetitions = static_cast<int>(r.samples.size());
  }
  set_spec(m, k.spec, dev, ctx);
  return m;
}

}  // namespace

double pcie_gbs(int gen, int width) {
  // GT/s per lane and line-coding efficiency: 8b/10b up to gen 2, 128b/130b from gen 3 (gen 6's FLIT
  // mode is counted like gen 5's coding here, a slight overstatement).
  static const double gts[] = {0, 2.5, 5, 8, 16, 32, 64};
  if (gen < 1 || gen > 6 || width <= 0) return 0;
  const double coding = gen <= 2 ? 0.8 : 128.0 / 130.0;
  return gts[gen] * coding / 8.0 * width;
}

std::string gpu_status() {
  const Context& ctx = context();
  if (!ctx.api) return "GPU benchmarks waived: " + ctx.why;
  if (ctx.count == 0) return fmt::format("CUDA plugin: {}; GPU benchmarks waived: {}", ctx.api->build_info(), ctx.why);
  return fmt::format("CUDA plugin: {}; {} GPU{}", ctx.api->build_info(), ctx.count, ctx.count == 1 ? "" : "s");
}

std::string plugin_info() {
  const Context& ctx = context();
  return ctx.api ? "CUDA plugin: " + ctx.api->build_info() : "CUDA plugin: none (" + ctx.why + ")";
}

void check_device(const BenchOptions& opt) {
  if (!opt.device) return;
  const Context& ctx = context();
  if (*opt.device < 0) throw InputError(fmt::format("--device {}: a CUDA ordinal is 0 or more", *opt.device));
  if (ctx.count == 0) throw InputError(fmt::format("--device {}: no GPU to run on ({})", *opt.device, ctx.why));
  if (*opt.device >= ctx.count)
    throw InputError(fmt::format("--device {}: this machine has {} GPU{} (cuda:0..cuda:{})", *opt.device, ctx.count,
                                 ctx.count == 1 ? "" : "s", ctx.count - 1));
}

std::vector<Benchmark> gpu_benchmarks() {
  std::vector<Benchmark> out;
  for (const GpuKey& k : kKeys) {
    Benchmark b;
    b.key = k.key;
    b.description = k.description;
    b.unit = k.unit;
    b.waived = [&k]() -> std::optional<std::string> {
      const Context& ctx = context();
      if (!ctx.api || ctx.count == 0) return ctx.why;
      if (ctx.count < k.min_gpus) return fmt::format("needs {} or more GPUs (this machine has {})", k.min_gpus, ctx.count);
      return std::nullopt;
    };
    b.run = [&k](const BenchOptions& o) { return run_gpu(k, o); };
    out.push_back(std::move(b));
  }
  return out;
}

}  // namespace gpuvs::bench
