// SPDX-License-Identifier: Apache-2.0
#include "perf/system_facts.hpp"

#include <fmt/format.h>

#include <cmath>
#include <functional>
#include <set>
#include <vector>

#include "core/error.hpp"
#include "core/strings.hpp"
#include "core/toml_input.hpp"
#include "core/units.hpp"

namespace gpuvs::embedded {
extern const char* const kSystemFacts;
}

namespace gpuvs::perf {

namespace {

/// One fact the model reads: where it lives in the file, its unit, the range it must lie in, where it goes.
struct FactSpec {
  std::string section, name, unit;
  bool zero_ok;  // 0 <= value (else 0 < value)
  double hi;      // value <= hi
  bool whole;     // a whole number
  std::function<void(SystemFacts&, double)> set;
  // Facts that hold on some chips only also name those chips' compute capabilities (null: the fact holds everywhere).
  std::function<std::vector<std::string>&(SystemFacts&)> ccs = nullptr;
};

const std::vector<FactSpec>& fact_specs() {
  using F = SystemFacts;
  static const std::vector<FactSpec> specs = [] {
    std::vector<FactSpec> v = {
        {"memory", "runtime", "GiB", true, 64, false, [](F& f, double x) { f.runtime_bytes = x * units::kGiB; }},
        {"memory", "allocator_slack", "fraction", true, 0.5, false, [](F& f, double x) { f.allocator_slack = x; }},
        {"memory", "driver_reserve", "fraction", true, 0.5, false, [](F& f, double x) { f.driver_reserve = x; }},
        {"links", "nvlink_busbw", "fraction", false, 1, false, [](F& f, double x) { f.nvlink_busbw = x; }},
        {"links", "pcie_busbw", "fraction", false, 1, false, [](F& f, double x) { f.pcie_busbw = x; }},
        {"links", "network_busbw", "fraction", false, 1, false, [](F& f, double x) { f.network_busbw = x; }},
        {"links", "copy_engine", "fraction", false, 1, false, [](F& f, double x) { f.copy_engine = x; }},
        {"nccl", "ll_base_latency", "s", true, 1e-3, false, [](F& f, double x) { f.nccl_ll_base_s = x; }},
        {"nccl", "ll128_base_latency", "s", true, 1e-3, false, [](F& f, double x) { f.nccl_ll128_base_s = x; }},
        {"nccl", "simple_base_latency", "s", true, 1e-3, false, [](F& f, double x) { f.nccl_simple_base_s = x; }},
        {"nccl", "ll_step_nvlink", "s", true, 1e-3, false, [](F& f, double x) { f.nccl_ll_step_nvlink_s = x; }},
        {"nccl", "ll128_step_nvlink", "s", true, 1e-3, false, [](F& f, double x) { f.nccl_ll128_step_nvlink_s = x; }},
        {"nccl", "simple_step_nvlink", "s", true, 1e-3, false, [](F& f, double x) { f.nccl_simple_step_nvlink_s = x; }},
        {"nccl", "ll_step_pcie", "s", true, 1e-3, false, [](F& f, double x) { f.nccl_ll_step_pcie_s = x; }},
        {"nccl", "simple_step_pcie", "s", true, 1e-3, false, [](F& f, double x) { f.nccl_simple_step_pcie_s = x; }},
        {"nccl", "ll_allreduce_share", "fraction", false, 1, false, [](F& f, double x) { f.nccl_ll_allreduce_share = x; }},
        {"nccl", "ll_gather_share", "fraction", false, 1, false, [](F& f, double x) { f.nccl_ll_gather_share = x; }},
        {"nccl", "ll128_share", "fraction", false, 1, false, [](F& f, double x) { f.nccl_ll128_share = x; }},
        {"nccl", "ll_max_busbw", "GB/s", false, 1e4, false, [](F& f, double x) { f.nccl_ll_max_busbw_gbs = x; }},
        {"nccl", "nvls_latency", "s", true, 1e-3, false, [](F& f, double x) { f.nccl_nvls_latency_s = x; }},
        {"nccl", "nvls_efficiency_hopper", "fraction", false, 1, false, [](F& f, double x) { f.nvls_hopper.efficiency = x; },
         [](F& f) -> std::vector<std::string>& { return f.nvls_hopper.compute_capabilities; }},
        {"nccl", "nvls_efficiency_blackwell", "fraction", false, 1, false, [](F& f, double x) { f.nvls_blackwell.efficiency = x; },
         [](F& f) -> std::vector<std::string>& { return f.nvls_blackwell.compute_capabilities; }},
        {"microbench", "gemm_tensor_datacenter", "fraction", false, 1, false, [](F& f, double x) { f.bench_gemm_tensor_datacenter = x; }},
        {"microbench", "gemm_tensor_geforce", "fraction", false, 1, false, [](F& f, double x) { f.bench_gemm_tensor_geforce = x; }},
        {"microbench", "gemm_cuda_cores", "fraction", false, 1, false, [](F& f, double x) { f.bench_gemm_cuda_cores = x; }},
        {"microbench", "memory", "fraction", false, 1, false, [](F& f, double x) { f.bench_memory = x; }},
        {"kernels", "attention_datacenter", "fraction", false, 1, false, [](F& f, double x) { f.attention_datacenter = x; }},
        {"kernels", "attention_geforce", "fraction", false, 1, false, [](F& f, double x) { f.attention_geforce = x; }},
        {"kernels", "cuda_core_gemm", "fraction", false, 1, false, [](F& f, double x) { f.cuda_core_gemm = x; }},
        {"kernels", "cuda_core_conv", "fraction", false, 1, false, [](F& f, double x) { f.cuda_core_conv = x; }},
        {"kernels", "cuda_core_attention", "fraction", false, 1, false, [](F& f, double x) { f.cuda_core_attention = x; }},
        {"kernels", "shared_lane_fp32", "fraction", false, 1, false, [](F& f, double x) { f.shared_lane_fp32 = x; },
         [](F& f) -> std::vector<std::string>& { return f.shared_lane_compute_capabilities; }},
        {"kernels", "tile_fixed_cycles", "cycles", false, 1e5, false, [](F& f, double x) { f.tile_fixed_cycles = x; }},
        {"server", "gpus", "GPUs", false, 1024, true, [](F& f, double x) { f.gpus_per_server = static_cast<int>(x); }},
        {"host", "stream_fraction", "fraction", false, 1, false, [](F& f, double x) { f.host_stream_fraction = x; }},
        {"kernels", "gap", "s", true, 1e-3, false, [](F& f, double x) { f.kernel_gap_s = x; }},
        {"kernels", "stream_ramp", "s", false, 1e-3, false, [](F& f, double x) { f.stream_ramp_s = x; }},
        {"training", "ddp_bucket", "bytes", false, 1e12, false, [](F& f, double x) { f.ddp_bucket_bytes = x; }},
        {"training", "megatron_bucket", "bytes", false, 1e12, false, [](F& f, double x) { f.megatron_bucket_bytes = x; }},
        {"training", "qlora_bytes_per_param", "bytes", false, 8, false, [](F& f, double x) { f.qlora_bytes_per_param = x; }},
        {"serving", "vector_kernel_rows", "rows", false, 1 << 20, true, [](F& f, double x) { f.vector_kernel_rows = x; }},
        {"serving", "offload_batch_rows", "rows", false, 1 << 20, true, [](F& f, double x) { f.offload_batch_rows = x; }},
    };
    for (models::Family fam : {models::Family::mlp, models::Family::cnn, models::Family::encoder, models::Family::decoder,
                               models::Family::unet, models::Family::keras, models::Family::onnx})
      v.push_back({"default_batch", std::string(models::family_name(fam)), "samples", false, 1 << 24, true,
                   [fam](F& f, double x) { f.default_batch[static_cast<int>(fam)] = static_cast<std::int64_t>(x); }});
    return v;
  }();
  return specs;
}

std::vector<MigProfile> parse_mig_profiles(const toml::node& v, const std::string& where) {
  const auto* arr = v.as_array();
  if (!arr) throw InputError(fmt::format("{}:{}: mig_profile must be [[mig_profile]] tables", where, static_cast<int>(v.source().begin.line)));
  std::vector<MigProfile> out;
  for (const auto& node : *arr) {
    const int line = static_cast<int>(node.source().begin.line);
    const auto* p = node.as_table();
    if (!p) throw InputError(fmt::format("{}:{}: a [[mig_profile]] entry must be a table", where, line));
    MigProfile m;
    bool sourced = false;
    for (const auto& [k, x] : *p) {
      const std::string key(k.str());
      if (key == "source") {
        const auto s = x.value<std::string>();
        sourced = s && !s->empty();
      } else if (key == "compute_slices" || key == "memory_eighths") {
        const auto n = x.value<std::int64_t>();
        const std::int64_t most = key == "compute_slices" ? 7 : 8;
        if (!n || *n < 1 || *n > most) throw InputError(fmt::format("{}:{}: {} must be a whole number from 1 to {}", where, line, key, most));
        (key == "compute_slices" ? m.compute_slices : m.memory_eighths) = static_cast<int>(*n);
      } else {
        throw InputError(fmt::format("{}:{}: unknown key '{}' (expected compute_slices, memory_eighths, source)", where, line,
                                     strings::printable(key)));
      }
    }
    if (m.compute_slices == 0 || m.memory_eighths == 0 || !sourced)
      throw InputError(fmt::format("{}:{}: a [[mig_profile]] needs compute_slices, memory_eighths and its source", where, line));
    if (!out.empty() && m.compute_slices <= out.back().compute_slices)
      throw InputError(fmt::format("{}:{}: MIG profiles must be listed by compute slices, ascending, once each", where, line));
    out.push_back(m);
  }
  return out;
}

}  // namespace

namespace {

/// The whole file (`base` null: every fact required) or an override of `base` (only the facts it holds change).
SystemFacts parse_facts(const std::string& text, const std::string& where, const SystemFacts* base, std::vector<std::string>* changed) {
  const toml::table t = parse_toml(text, where);
  const auto& specs = fact_specs();
  std::set<std::string> sections;
  for (const auto& s : specs) sections.insert(s.section);
  SystemFacts out = base ? *base : SystemFacts{};
  bool mig_given = false;
  for (const auto& [k, v] : t) {
    const std::string section(k.str());
    const int line = static_cast<int>(v.source().begin.line);
    if (section == "mig_profile") {
      out.mig_profiles = parse_mig_profiles(v, where);
      mig_given = true;
      continue;
    }
    if (!sections.count(section))
      throw InputError(fmt::format("{}:{}: unknown section [{}] (expected {}, [[mig_profile]])", where, line, strings::printable(section),
                                   strings::join(std::vector<std::string>(sections.begin(), sections.end()), ", ")));
    const auto* facts = v.as_table();
    if (!facts) throw InputError(fmt::format("{}:{}: [{}] must be a table of facts", where, line, section));
    for (const auto& [name, fact] : *facts) {
      bool known = false;
      for (const auto& s : specs) known = known || (s.section == section && s.name == name.str());
      if (!known)
        throw InputError(fmt::format("{}:{}: unknown fact '{}.{}'", where, static_cast<int>(fact.source().begin.line), section,
                                     strings::printable(name.str())));
    }
  }
  if (out.mig_profiles.empty()) throw InputError(fmt::format("{}: no [[mig_profile]] entries", where));
  if (mig_given && changed) changed->push_back(fmt::format("{} MIG profiles", out.mig_profiles.size()));
  for (const auto& s : specs) {
    const std::string key = s.section + "." + s.name;
    const toml::node* node = t[s.section][s.name].node();
    if (!node && base) continue;
    if (!node) throw InputError(fmt::format("{}: no [{}] (value, unit and source)", where, key));
    const int line = static_cast<int>(node->source().begin.line);
    const auto* fact = node->as_table();
    if (!fact) throw InputError(fmt::format("{}:{}: [{}] must be a table with value, unit and source", where, line, key));
    // A fact that holds on some chips only also names their compute capabilities.
    const bool lists_ccs = s.ccs != nullptr;
    for (const auto& [k, v] : *fact)
      if (k.str() != "value" && k.str() != "unit" && k.str() != "source" && !(lists_ccs && k.str() == "compute_capabilities"))
        throw InputError(fmt::format("{}:{}: [{}]: unknown key '{}' (expected value, unit, source{})", where, line, key, strings::printable(k.str()),
                                     lists_ccs ? ", compute_capabilities" : ""));
    if (lists_ccs && (!base || (*fact)["compute_capabilities"])) {  // an override may keep the built-in list
      const auto* ccs = (*fact)["compute_capabilities"].as_array();
      if (!ccs || ccs->empty()) throw InputError(fmt::format("{}:{}: [{}] needs compute_capabilities, a list of strings", where, line, key));
      std::vector<std::string>& list = s.ccs(out);
      list.clear();
      for (const auto& cc : *ccs) {
        const auto name = cc.value<std::string>();
        if (!name || name->empty()) throw InputError(fmt::format("{}:{}: [{}] compute_capabilities must be strings", where, line, key));
        list.push_back(*name);
      }
    }
    const auto value = (*fact)["value"].value<double>();
    const auto unit = (*fact)["unit"].value<std::string>();
    const auto source = (*fact)["source"].value<std::string>();
    if (!value || !std::isfinite(*value)) throw InputError(fmt::format("{}:{}: [{}] needs a finite number as value", where, line, key));
    if (!unit || *unit != s.unit)
      throw InputError(fmt::format("{}:{}: [{}] is in {}, not '{}'", where, line, key, s.unit, strings::printable(unit.value_or(""))));
    if (!source || source->empty()) throw InputError(fmt::format("{}:{}: [{}] needs its source", where, line, key));
    if (!((*value > 0 || (s.zero_ok && *value == 0)) && *value <= s.hi) || (s.whole && *value != std::floor(*value)))
      throw InputError(fmt::format("{}:{}: [{}] = {} is outside {}0, {}]{}", where, line, key, *value, s.zero_ok ? "[" : "(", s.hi,
                                   s.whole ? " or not whole" : ""));
    s.set(out, *value);
    if (changed) changed->push_back(fmt::format("{} = {:g} {}", key, *value, s.unit));
  }
  return out;
}

const SystemFacts* g_installed = nullptr;

}  // namespace

SystemFacts parse_system_facts(const std::string& text, const std::string& where) { return parse_facts(text, where, nullptr, nullptr); }

SystemFacts parse_system_facts_over(const std::string& text, const std::string& where, const SystemFacts& base, std::vector<std::string>* changed) {
  return parse_facts(text, where, &base, changed);
}

ScopedSystemFacts::ScopedSystemFacts(const SystemFacts& f) : previous_(g_installed), mine_(f) { g_installed = &mine_; }
ScopedSystemFacts::~ScopedSystemFacts() { g_installed = previous_; }

const SystemFacts& builtin_system_facts() {
  static const SystemFacts f = parse_system_facts(embedded::kSystemFacts, "built-in data/system.toml");
  return f;
}

const SystemFacts& system_facts() { return g_installed ? *g_installed : builtin_system_facts(); }

}  // namespace gpuvs::perf
