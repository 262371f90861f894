// SPDX-License-Identifier: Apache-2.0
#include "perf/constants.hpp"

#include <fmt/format.h>


#include <algorithm>
#include <cmath>

#include "core/error.hpp"
#include "core/toml_input.hpp"
#include "core/strings.hpp"

namespace gpuvs::embedded {
extern const char* const kModelConstants;
}

namespace gpuvs::perf {

namespace {

thread_local const FittedConstants* t_active = nullptr;

// The keys of table `name`, each a number in (0, max]; unknown keys are refused.
void read_table(const toml::table& t, const char* name, const std::vector<std::pair<const char*, double*>>& keys, double max,
                const std::string& where) {
  const auto* c = t[name].as_table();
  if (!c) throw InputError(fmt::format("{}: missing table [{}]", where, name));
  const int line = static_cast<int>(c->source().begin.line);
  std::vector<std::string> names;
  for (const auto& [key, out] : keys) names.emplace_back(key);
  for (const auto& [k, v] : *c)
    if (std::find(names.begin(), names.end(), std::string(k.str())) == names.end())
      throw InputError(fmt::format("{}:{}: [{}] unknown key '{}' (expected {})", where, line, name, strings::printable(k.str()),
                                   strings::join(names, ", ")));
  for (const auto& [key, out] : keys) {
    const auto v = (*c)[key].value<double>();
    if (!v || !std::isfinite(*v) || *v <= 0 || *v > max)
      throw InputError(max == 1 ? fmt::format("{}:{}: [{}] {} must be a fraction in (0, 1]", where, line, name, key)
                                : fmt::format("{}:{}: [{}] {} must be in (0, {}]", where, line, name, key, max));
    *out = *v;
  }
}

ClassFractions read_class(const toml::table& t, const char* name, const std::string& where) {
  ClassFractions f;
  read_table(t, name, {{"gemm", &f.gemm}, {"conv", &f.conv}}, 1, where);
  return f;
}

// Bytes per SM per cycle past which a reading is not a fraction of any card's stream (no SM moves a KiB a cycle).
constexpr double kMaxBytesPerSmCycle = 1024;

}  // namespace

DeviceClass device_class(const catalog::Gpu& gpu) {
  return gpu.segment == "datacenter" ? DeviceClass::datacenter : DeviceClass::geforce;
}

const char* class_name(DeviceClass c) { return c == DeviceClass::datacenter ? "datacenter" : "geforce"; }


FittedConstants parse_constants(const std::string& text, const std::string& where) {
  const toml::table t = parse_toml(text, where);
  for (const auto& [k, v] : t)
    if (k.str() != "fitted_on" && k.str() != "method" && k.str() != "datacenter" && k.str() != "geforce" && k.str() != "prior" &&
        k.str() != "memory" && k.str() != "clock" && k.str() != "calibration" && k.str() != "engine")
      throw InputError(fmt::format("{}: unknown key '{}'", where, strings::printable(k.str())));
  FittedConstants c;
  c.of(DeviceClass::datacenter) = read_class(t, "datacenter", where);
  c.of(DeviceClass::geforce) = read_class(t, "geforce", where);
  c.prior = read_class(t, "prior", where);
  read_table(t, "memory",
             {{"bytes_per_sm_cycle", &c.bytes_per_sm_cycle},
              {"prior_bytes_per_sm_cycle", &c.bytes_per_sm_cycle_prior},
              {"decode_bytes_per_sm_cycle", &c.decode_bytes_per_sm_cycle},
              {"ggml_gemv_bytes_per_sm_cycle", &c.ggml_gemv_bytes_per_sm_cycle},
              {"ggml_bytes_per_sm_cycle", &c.ggml_bytes_per_sm_cycle}},
             kMaxBytesPerSmCycle, where);
  const auto* clock = t["clock"].as_table();
  if (!clock) throw InputError(fmt::format("{}: missing table [clock]", where));
  const int line = static_cast<int>(clock->source().begin.line);
  for (const auto& [k, v] : *clock)
    if (k.str() != "headroom" && k.str() != "prior")
      throw InputError(fmt::format("{}:{}: [clock] unknown key '{}' (expected headroom, prior)", where, line, strings::printable(k.str())));
  for (auto [key, out] : {std::pair<const char*, double*>{"headroom", &c.clock_headroom}, {"prior", &c.clock_headroom_prior}}) {
    const auto v = (*clock)[key].value<double>();
    if (!v || !std::isfinite(*v) || *v <= 0 || *v > 1)
      throw InputError(fmt::format("{}:{}: [clock] {} must be a fraction in (0, 1]", where, line, key));
    *out = *v;
  }
  read_table(t, "calibration", {{"transfer_share", &c.transfer_share}}, 1, where);
  read_table(t, "engine", {{"ggml_gemm_share", &c.ggml_gemm_share}}, 1, where);
  if (const auto* arr = t["fitted_on"].as_array())
    for (const auto& n : *arr)
      if (const auto s = n.value<std::string>()) c.fitted_on.push_back(*s);
  c.method = t["method"].value_or(std::string());
  return c;
}

files::OutputSpec constants_output(const std::string& flag, bool force) {
  return {flag, "constants file", "# The performance model's fitted constants", force};  // constants_toml's first line
}

std::string constants_toml(const FittedConstants& c) {
  std::string s =
      "# The performance model's fitted constants: the only numbers in gpuvs fitted to measurements of training\n"
      "# and serving throughput. Four are fractions of a spec peak that framework GEMMs and convolutions reach, per device\n"
      "# class: data-centre boards and GeForce/workstation boards (the catalog's segment); a card's GEMMs reach its class's\n"
      "# fraction times how its best GEMM compares per clock with the class's median (perf/efficiency.hpp\n"
      "# gemm_card_share, from data/achievable.toml). The others are shared by every card: what an\n"
      "# SM keeps streaming in memory-bound framework kernels and in serving's decode attention ([memory]), where the\n"
      "# clock dense math sustains sits between the base and boost clocks (data/clocks.toml), and the share of a\n"
      "# measured figure's error a calibration carries to other cards ([calibration]). Everything else in the model\n"
      "# is physics or a sourced figure. Written by `gpuvs validate --data data/validation --fit data/model-constants.toml`\n"
      "# (perf/fit.hpp: coordinate descent on the mean |log error| of every priced training and inference row of\n"
      "# the files in fitted_on, with a weak pull towards the priors); a test refits and compares, so it cannot\n"
      "# go stale. [prior] stands in for a class with no rows to fit: what gpuvs's own microbenchmarks expect\n"
      "# of a healthy card for GEMMs, and the midpoint for convolutions - set from microbenchmark physics, not\n"
      "# from any training row.\n";
  std::vector<std::string> quoted;
  for (const auto& f : c.fitted_on) quoted.push_back("\"" + f + "\"");
  s += fmt::format("fitted_on = [{}]\nmethod = \"{}\"\n", strings::join(quoted, ", "), c.method);
  auto table = [&](const char* name, const ClassFractions& f) {
    s += fmt::format("\n[{}]\ngemm = {:.4f}\nconv = {:.4f}\n", name, f.gemm, f.conv);
  };
  table("datacenter", c.of(DeviceClass::datacenter));
  table("geforce", c.of(DeviceClass::geforce));
  table("prior", c.prior);
  s += "\n# Memory-bound framework kernels stream at min(a streaming microbenchmark's fraction of the DRAM rate\n"
       "# (data/system.toml [microbench.memory]), bytes_per_sm_cycle x SMs x the sustained clock): Little's law, bytes in\n"
       "# flight per SM over the DRAM latency (perf/efficiency.hpp). The prior: one 4-byte load in flight per\n"
       "# resident thread (2,048 per SM) over a DRAM latency of about 700 cycles. decode_bytes_per_sm_cycle is\n"
       "# the same for a serving engine's memory-bound decode kernels (the KV cache read every generated token, and\n"
       "# the matrix-vector products of a few tokens through each 16-bit weight), fitted on the LLM serving rows alone\n"
       "# and pulled towards bytes_per_sm_cycle, which it equals where no serving row on a card whose SMs bind sees it.\n"
       "# ggml_gemv_bytes_per_sm_cycle and ggml_bytes_per_sm_cycle are the same for ggml's own kernels (llama.cpp): its\n"
       "# matrix-vector kernels (a few tokens through a weight, the products over the cache at decode; other engines'\n"
       "# kernels that dequantize a weight-only format in registers are of this class too: serving-engines.toml\n"
       "# dequant_gemv_family) and its passes (dequantize, conversions, elementwise), fitted on the serving rows of\n"
       "# engines that run them, with the same pull.\n";
  s += fmt::format(
      "[memory]\nbytes_per_sm_cycle = {:.3f}\nprior_bytes_per_sm_cycle = {:.3f}\ndecode_bytes_per_sm_cycle = {:.3f}\n"
      "ggml_gemv_bytes_per_sm_cycle = {:.3f}\nggml_bytes_per_sm_cycle = {:.3f}\n",
      c.bytes_per_sm_cycle, c.bytes_per_sm_cycle_prior, c.decode_bytes_per_sm_cycle, c.ggml_gemv_bytes_per_sm_cycle,
      c.ggml_bytes_per_sm_cycle);
  s += "\n# The sustained dense-math clock is base + headroom x (boost - base) on every card (perf/clocks.hpp).\n";
  s += fmt::format("[clock]\nheadroom = {:.4f}\nprior = {:.4f}\n", c.clock_headroom, c.clock_headroom_prior);
  s += "\n# A calibration moves the card it measured by its whole ratio and any other card by ratio^transfer_share: the\n"
       "# least-squares slope of one card's log error on another's over the published runs of one configuration on\n"
       "# several cards (the share of a figure's error that is its stack's; the rest is the card's own).\n";
  s += fmt::format("[calibration]\ntransfer_share = {:.4f}\n", c.transfer_share);
  s += "\n# The share of a card's best GEMM (data/achievable.toml) that ggml's batched matrix products reach at prefill\n"
       "# (llama.cpp: dequantize to FP16 and cuBLAS in FP16 compute, or its MMQ kernels), the same on every card; fitted on\n"
       "# the serving rows of the engines that run them, from 1, after the ggml memory constants.\n";
  s += fmt::format("[engine]\nggml_gemm_share = {:.4f}\n", c.ggml_gemm_share);
  return s;
}

const FittedConstants& builtin_constants() {
  static const FittedConstants c = parse_constants(embedded::kModelConstants, "built-in data/model-constants.toml");
  return c;
}

const FittedConstants& active_constants() { return t_active ? *t_active : builtin_constants(); }

ScopedConstants::ScopedConstants(const FittedConstants& c) : previous_(t_active), mine_(c) { t_active = &mine_; }
ScopedConstants::~ScopedConstants() { t_active = previous_; }

}  // namespace gpuvs::perf
