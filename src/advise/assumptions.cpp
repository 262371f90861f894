// SPDX-License-Identifier: Apache-2.0
#include "advise/assumptions.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <set>
#include <sstream>

#include "core/error.hpp"
#include "core/strings.hpp"
#include "perf/system_facts.hpp"

namespace gpuvs::advise {

Assumptions Assumptions::defaults() {
  Assumptions a;
  a.items_ = {
      {"electricity_usd_per_kwh", 0.15, "USD/kWh", "typical commercial rate; set yours"},
      {"pue", 1.3, "ratio", "data-centre power usage effectiveness (cooling, conversion)"},
      {"amortization_years", 3, "years", "service life over which a bought card is paid off"},
      {"utilization", 0.5, "fraction", "share of hours an owned card does useful work; buying's cost per job scales with 1/utilization"},
      {"failures_per_gpu_hour", 1.0 / 50700, "1/GPU-hour",
       "Llama 3 405B pre-training: 419 unexpected interruptions in ~21.2 M H100-hours (reliability.md)"},
      {"non_ecc_failure_factor", 2.0, "ratio",
       "assumption, no published rate: without ECC, memory errors crash jobs or corrupt them silently"},
      {"checkpoint_write_gbs", 2.0, "GB/s", "storage write bandwidth for checkpoints"},
      {"restart_minutes", 10, "minutes", "detect a failure, reschedule, reload the last checkpoint"},
      {"peak_to_mean", 3.0, "ratio", "serving: peak request rate over the daily mean"},
      {"serving_headroom", 0.7, "fraction", "serving: highest sustained load per replica, leaving room for bursts"},
      {"p99_over_service", 2.0, "ratio",
       "serving: p99 latency over one batch's service time (a request waits for the batch in flight, then its own)"},
      {"max_gpus_per_server", static_cast<double>(perf::system_facts().gpus_per_server), "GPUs",
       "data parallel training within one server (data/system.toml's server.gpus)"},
      {"max_gpus", 1024, "GPUs", "largest cluster the advisor plans for (decoders past one server: tensor x pipeline x data parallel)"},
      {"global_batch_tokens", 4e6, "tokens", "global batch of a multi-node pretraining plan (Llama 2 and 3: 4M tokens per step)"},
      {"isolation_required", 1, "0/1", "tenants need memory and fault isolation (MIG or their own card)"},
      {"hours_per_month", 730, "hours", "serving cost period"},
      {"this_machine_watts", 200, "W", "wall power of the measured machine under load (a workstation, or a server's share); set yours"},
  };
  return a;
}

void Assumptions::set(const std::string& key, double value, const catalog::Catalog& cat) {
  if (!std::isfinite(value)) throw InputError(fmt::format("--assume {}: not a number", strings::printable(key)));
  // Past 1e15 no assumption is a value of this world (prices, hours, watts, shares): a typo, refused before it prices.
  if (std::fabs(value) > 1e15) throw InputError(fmt::format("--assume {}={}: past 1e15, not a value any assumption takes", strings::printable(key), value));
  for (const char* prefix : {"price.", "rent."}) {
    if (key.rfind(prefix, 0) == 0) {
      const std::string id = cat.find(key.substr(std::string(prefix).size())).id;
      if (value < 0) throw InputError(fmt::format("--assume {}={}: a price cannot be negative", strings::printable(key), value));
      (prefix[0] == 'p' ? price_ : rent_)[id] = value;
      return;
    }
  }
  for (auto& a : items_) {
    if (a.key != key) continue;
    const bool fraction = a.unit == "fraction";
    // Rates the advisor divides by (a failure rate of 0 is an infinite MTBF, no figure a document can carry), and
    // ratios of a peak or a tail over a mean, which are at least 1.
    const bool divisor = key == "failures_per_gpu_hour" || key == "non_ecc_failure_factor" || key == "checkpoint_write_gbs" ||
                         key == "hours_per_month";
    const bool at_least_one = key == "pue" || key == "peak_to_mean" || key == "p99_over_service";
    if (value < 0 || (fraction && (value <= 0 || value > 1)) || (divisor && value <= 0) || (at_least_one && value < 1) ||
        (key == "isolation_required" && value != 0 && value != 1) || (key == "amortization_years" && value <= 0) ||
        (key == "max_gpus_per_server" && (value < 1 || value != std::floor(value))) ||
        (key == "max_gpus" && (value < 1 || value > 65536 || value != std::floor(value))) || (key == "global_batch_tokens" && value < 1))
      throw InputError(fmt::format("--assume {}={}: impossible value ({}: {})", key, value, a.unit, a.basis));
    a.value = value;
    a.overridden = true;
    return;
  }
  std::vector<std::string> keys;
  for (const auto& a : items_) keys.push_back(a.key);
  auto near = strings::closest(key, keys, 1);
  if (!near.empty() && strings::edit_distance(key, near[0]) > std::max<std::size_t>(2, key.size() / 3)) near.clear();
  throw InputError(fmt::format("--assume: unknown assumption '{}'{} (or price.<gpu-id>, rent.<gpu-id>)", strings::printable(key),
                               near.empty() ? "" : fmt::format("; did you mean '{}'?", near[0])));
}

void Assumptions::set_all(const std::string& text, const catalog::Catalog& cat) {
  std::stringstream ss(text);
  std::set<std::string> given;
  for (std::string pair; std::getline(ss, pair, ';');) {
    const auto b = pair.find_first_not_of(' '), e = pair.find_last_not_of(' ');
    if (b == std::string::npos) continue;
    pair = pair.substr(b, e - b + 1);
    const auto eq = pair.find('=');
    if (eq == std::string::npos) throw InputError(fmt::format("--assume: '{}' is not key=value", strings::printable(pair)));
    const std::string v = pair.substr(eq + 1);
    char* end = nullptr;
    const double value = std::strtod(v.c_str(), &end);
    if (v.empty() || *end != '\0') throw InputError(fmt::format("--assume {}: '{}' is not a number", pair.substr(0, eq), strings::printable(v)));
    if (!given.insert(pair.substr(0, eq)).second)
      throw InputError(fmt::format("--assume: '{}' is given twice; give it once", strings::printable(pair.substr(0, eq))));
    set(pair.substr(0, eq), value, cat);
  }
}

double Assumptions::get(const std::string& key) const {
  for (const auto& a : items_)
    if (a.key == key) return a.value;
  throw std::logic_error("unknown assumption " + key);
}

std::optional<double> Assumptions::price(const catalog::Gpu& gpu) const {
  if (auto it = price_.find(gpu.id); it != price_.end()) return it->second;
  if (gpu.msrp_usd) return gpu.msrp_usd;
  return gpu.price_basis_usd;
}

std::optional<double> Assumptions::rent(const catalog::Gpu& gpu) const {
  if (auto it = rent_.find(gpu.id); it != rent_.end()) return it->second;
  return gpu.cloud_usd_per_hr;
}

double Assumptions::power_per_hour(const catalog::Gpu& gpu) const {
  return gpu.tdp_w / 1000.0 * get("pue") * get("electricity_usd_per_kwh");
}

std::optional<double> Assumptions::own_per_hour(const catalog::Gpu& gpu, double utilization) const {
  const auto p = price(gpu);
  if (!p) return std::nullopt;
  return *p / (get("amortization_years") * 8760.0 * utilization) + power_per_hour(gpu);
}

perf::GpuHourPrices Assumptions::hour_prices() const {
  auto self = std::make_shared<const Assumptions>(*this);
  return {[self](const catalog::Gpu& gpu) { return self->rent(gpu); },
          [self](const catalog::Gpu& gpu) { return self->own_per_hour(gpu, self->get("utilization")); }};
}

std::vector<Assumption> Assumptions::list() const {
  std::vector<Assumption> out = items_;
  for (const auto& [id, v] : price_) out.push_back({"price." + id, v, "USD", "set by the user", true});
  for (const auto& [id, v] : rent_) out.push_back({"rent." + id, v, "USD/GPU-hour", "set by the user", true});
  return out;
}

CostScale cost_scale(double largest_usd_per_million) {
  if (largest_usd_per_million > 0 && largest_usd_per_million < 0.01) return {1000, "billion"};
  return {};
}

}  // namespace gpuvs::advise
