// SPDX-License-Identifier: Apache-2.0
#include "perf/achievable.hpp"

#include "perf/system_facts.hpp"

#include <fmt/format.h>


#include <algorithm>
#include <cmath>
#include <map>

#include "core/error.hpp"
#include "core/toml_input.hpp"
#include "core/stats.hpp"
#include "core/strings.hpp"
#include "perf/clocks.hpp"
#include "perf/collective.hpp"
#include "perf/constants.hpp"

namespace gpuvs::embedded {
extern const char* const kAchievable;
}

namespace gpuvs::perf {

namespace {

const std::vector<std::string> kKeys = {"gemm-fp32", "gemm-tf32", "gemm-fp16", "gemm-bf16", "gemm-fp8", "gemm-int8",
                                        "mem-read",  "mem-copy",  "mem-triad", "h2d",       "d2h",      "p2p-copy"};

/// Figures of one kind share a learned fraction: tensor GEMMs of one precision, the CUDA-core GEMM,
/// DRAM streams, the host link, peer copies.
std::string group_of(const std::string& key) {
  if (key.rfind("mem-", 0) == 0) return "mem";
  if (key == "h2d" || key == "d2h") return "host";
  if (key == "gemm-fp16" || key == "gemm-bf16") return "gemm-16bit";  // one tensor pipeline, one rate
  return key;
}


/// What gpuvs's own microbenchmarks expect of a healthy card (perf/efficiency.hpp's bench references):
/// the last resort when no card has a published figure of the kind.
double prior(const std::string& key) {
  const SystemFacts& facts = system_facts();
  if (key == "gemm-fp32") return facts.bench_gemm_cuda_cores;
  if (key.rfind("gemm-", 0) == 0) return facts.bench_gemm_tensor_datacenter;
  if (key.rfind("mem-", 0) == 0) return facts.bench_memory;
  return facts.copy_engine;  // host link and peer copies
}

std::string segment_class(const catalog::Gpu& g) { return g.segment == "datacenter" ? "data-centre" : "GeForce/workstation"; }

// One SM design (compute capability: GA100 and GA102 are both Ampere, not one SM) in one segment class.
bool same_class(const catalog::Gpu& a, const catalog::Gpu& b) { return a.compute_capability == b.compute_capability && segment_class(a) == segment_class(b); }

}  // namespace

const std::vector<std::string>& achievable_keys() { return kKeys; }

std::string achievable_unit(const std::string& key) {
  if (key == "gemm-int8") return "TOPS";
  return key.rfind("gemm-", 0) == 0 ? "TFLOP/s" : "GB/s";
}

std::optional<double> spec_for(const catalog::Gpu& gpu, const std::string& key, std::string* what) {
  auto say = [&](const std::string& s) {
    if (what) *what = s;
  };
  auto dense = [&](const catalog::Peak& p, const std::string& name) -> std::optional<double> {
    if (!p.dense) return std::nullopt;
    say(name + " dense peak");
    return p.dense;
  };
  if (key == "gemm-fp32") {
    if (gpu.fp32_tflops <= 0) return std::nullopt;
    say("FP32 (CUDA-core) peak");
    return gpu.fp32_tflops;
  }
  if (key == "gemm-tf32") return dense(gpu.tf32, "TF32");
  if (key == "gemm-fp16") return gpu.fp16_fp32acc.dense ? dense(gpu.fp16_fp32acc, "FP16 (FP32 accumulate)") : dense(gpu.fp16, "FP16");
  if (key == "gemm-bf16") return dense(gpu.bf16, "BF16 (FP32 accumulate)");
  if (key == "gemm-fp8") return gpu.fp8_fp32acc.dense ? dense(gpu.fp8_fp32acc, "FP8 (FP32 accumulate)") : dense(gpu.fp8, "FP8");
  if (key == "gemm-int8") return dense(gpu.int8, "INT8");
  if (key.rfind("mem-", 0) == 0) {
    say("DRAM bandwidth");
    return gpu.memory_bandwidth_gbs;
  }
  if (key == "h2d" || key == "d2h") {
    if (gpu.pcie_gen <= 0) return std::nullopt;
    say(fmt::format("PCIe gen {} x16, one direction", gpu.pcie_gen));
    return pcie_x16_gbs(gpu.pcie_gen);
  }
  if (key == "p2p-copy") {
    // NVLink boards (not bridges, which may not be fitted) copy over NVLink; the rest over PCIe.
    if (gpu.has_nvlink() && gpu.nvlink.find("bridge") == std::string::npos) {
      say("NVLink, one direction (half the bidirectional aggregate)");
      return gpu.nvlink_gbs / 2;
    }
    if (gpu.pcie_gen <= 0) return std::nullopt;
    if (!gpu.p2p) {
      say(fmt::format("PCIe gen {} x16 staged through host memory (no peer-to-peer): each byte crosses it twice", gpu.pcie_gen));
      return pcie_x16_gbs(gpu.pcie_gen) / 2;
    }
    say(fmt::format("PCIe gen {} x16, one direction (a bridge, if fitted, is faster)", gpu.pcie_gen));
    return pcie_x16_gbs(gpu.pcie_gen);
  }
  return std::nullopt;
}

AchievableData parse_achievable(const std::string& text, const std::string& where, const catalog::Catalog& cat) {
  AchievableData d;
  const toml::table t = parse_toml(text, where);
  for (const auto& [k, v] : t)
    if (k.str() != "figure") throw InputError(fmt::format("{}: unknown table '{}' (expected [[figure]])", where, k.str()));
  const auto* figures = t["figure"].as_array();
  if (!figures) return d;
  for (const auto& node : *figures) {
    const auto* f = node.as_table();
    const int line = static_cast<int>(node.source().begin.line);
    if (!f) throw InputError(fmt::format("{}:{}: a figure must be a table", where, line));
    for (const auto& [k, v] : *f)
      if (k.str() != "gpu" && k.str() != "key" && k.str() != "value" && k.str() != "file" && k.str() != "source")
        throw InputError(fmt::format("{}:{}: unknown field '{}' (expected gpu, key, value, file, source)", where, line,
                                     strings::printable(k.str())));
    AchievableFigure a;
    a.line = line;
    a.gpu = f->get("gpu") && f->get("gpu")->value<std::string>() ? *f->get("gpu")->value<std::string>() : "";
    a.key = f->get("key") && f->get("key")->value<std::string>() ? *f->get("key")->value<std::string>() : "";
    a.file = f->get("file") && f->get("file")->value<std::string>() ? *f->get("file")->value<std::string>() : "";
    a.source = f->get("source") && f->get("source")->value<std::string>() ? *f->get("source")->value<std::string>() : "";
    const auto value = f->get("value") ? f->get("value")->value<double>() : std::nullopt;
    if (a.gpu.empty() || a.key.empty() || a.source.empty() || !value)
      throw InputError(fmt::format("{}:{}: a figure needs gpu, key, value and source", where, line));
    const catalog::Gpu* found = nullptr;
    try {
      found = &cat.find(a.gpu);
    } catch (const InputError& e) {
      throw InputError(fmt::format("{}:{}: {}", where, line, e.what()));
    }
    const catalog::Gpu& gpu = *found;
    a.gpu = gpu.id;
    if (std::find(kKeys.begin(), kKeys.end(), a.key) == kKeys.end())
      throw InputError(fmt::format("{}:{}: unknown key '{}' (expected {})", where, line, strings::printable(a.key),
                                   strings::join(kKeys, ", ")));
    a.value = *value;
    const auto spec = spec_for(gpu, a.key);
    // A measurement may pass the spec a little (run-to-run spread); a GeForce board's GEMM by more: GPU Boost runs it
    // bins past the boost clock its peaks are rated at while the board is under its power limit (an RTX 3090 or 4090
    // at half tensor rate reaches 105-108% of its rated FP32-accumulate peak, docs/research/power-limited-gemm-sources.md).
    const double allowed = gpu.segment == "geforce" && a.key.rfind("gemm-", 0) == 0 ? 1.2 : 1.05;
    if (!std::isfinite(a.value) || a.value <= 0 || !spec || a.value > *spec * allowed)
      throw InputError(fmt::format("{}:{}: {} {} = {} is not a positive figure at most {:g} x the spec ({})", where, line, a.gpu, a.key,
                                   a.value, allowed, spec ? fmt::format("{:g}", *spec) : "the device has none"));
    d.figures.push_back(std::move(a));
  }
  return d;
}

const AchievableData& builtin_achievable() {
  static const AchievableData d = parse_achievable(embedded::kAchievable, "built-in data/achievable.toml", catalog::Catalog::builtin());
  return d;
}

std::optional<Achievable> achievable(const catalog::Catalog& cat, const catalog::Gpu& gpu, const std::string& key,
                                     const AchievableData& data, const std::set<std::string>& exclude_files) {
  const auto spec = spec_for(gpu, key);
  if (!spec || *spec <= 0) return std::nullopt;
  Achievable a;
  a.spec = *spec;
  auto usable = [&](const AchievableFigure& f) { return exclude_files.count(f.file) == 0; };
  for (const auto& f : data.figures)
    if (usable(f) && f.gpu == gpu.id && f.key == key) {
      a.value = f.value;
      a.fraction = f.value / *spec;
      a.published = true;
      a.basis = "published: " + f.source;
      return a;
    }
  // The same card's figure for another key of the same kind (its BF16 GEMM for an FP16 one).
  for (const auto& f : data.figures)
    if (usable(f) && f.gpu == gpu.id && group_of(f.key) == group_of(key))
      if (const auto own = spec_for(gpu, f.key)) {
        a.fraction = f.value / *own;
        a.value = a.fraction * *spec;
        a.basis = fmt::format("this card's published {} fraction ({:.0f}%): {}", f.key, 100 * a.fraction, f.source);
        return a;
      }
  // Learned fractions of the same kind of figure on other cards: the same architecture and class first. A GEMM's
  // is a fraction of the peak at the clock its card sustains under dense math (perf/clocks.hpp), carried to this
  // card at its own: a board that sheds more clock under its power limit (a 300 W PCIe card, an L40S) reaches
  // less of its rated peak than the cards measured. Streams and copies are not clock-bound.
  const bool clocked = key.rfind("gemm-", 0) == 0;
  const double headroom = active_constants().clock_headroom;
  auto clock_of = [&](const catalog::Gpu& g) { return clocked ? sustained_clock_fraction(g, headroom) : 1.0; };
  std::vector<double> same, all;
  std::vector<std::string> same_ids, all_ids;
  for (const auto& f : data.figures) {
    if (!usable(f) || group_of(f.key) != group_of(key) || f.gpu == gpu.id) continue;
    const catalog::Gpu& other = cat.find(f.gpu);
    const auto other_spec = spec_for(other, f.key);
    if (!other_spec) continue;
    const double at_its_clock = f.value / *other_spec / clock_of(other);
    all.push_back(at_its_clock);
    all_ids.push_back(f.gpu);
    if (same_class(other, gpu)) {
      same.push_back(at_its_clock);
      same_ids.push_back(f.gpu);
    }
  }
  auto unique = [](std::vector<std::string> ids) {
    std::sort(ids.begin(), ids.end());
    ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
    return strings::join(ids, ", ");
  };
  const std::string at_clock =
      clocked ? fmt::format(" at this card's sustained clock ({:.0f}% of its rated one, as the others' at theirs)", 100 * clock_of(gpu)) : "";
  if (!same.empty()) {
    a.fraction = stats::median(same) * clock_of(gpu);
    a.basis = fmt::format("rule: {:.0f}% of spec, the median of {} {} card(s) of compute capability {} with a published {} figure ({}){}",
                          100 * a.fraction, gpu.arch, segment_class(gpu), gpu.compute_capability, group_of(key), unique(same_ids), at_clock);
  } else if (!all.empty()) {
    a.fraction = stats::median(all) * clock_of(gpu);
    a.basis = fmt::format("rule: {:.0f}% of spec, the median of every card with a published {} figure ({}){}; none of {} {} (compute capability {})",
                          100 * a.fraction, group_of(key), unique(all_ids), at_clock, gpu.arch, segment_class(gpu), gpu.compute_capability);
  } else {
    a.fraction = prior(key);
    a.basis = fmt::format("prior: {:.0f}% of spec (what gpuvs's microbenchmarks expect of a healthy card; no published {} figure)",
                          100 * a.fraction, group_of(key));
  }
  a.value = a.fraction * *spec;
  return a;
}

}  // namespace gpuvs::perf
