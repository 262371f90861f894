// SPDX-License-Identifier: Apache-2.0
#include "advise/advice_json.hpp"

#include <fmt/format.h>

#include "core/strings.hpp"
#include "core/units.hpp"

namespace gpuvs::advise {

namespace {

nlohmann::json opt(const std::optional<double>& v) { return v ? nlohmann::json(*v) : nlohmann::json(nullptr); }

nlohmann::json option_json(const Option& o) {
  return {{"rank", o.rank},
          {"gpu", o.gpu_id},
          {"gpu_name", o.gpu_name},
          {"count", o.count},
          {"strategy", o.strategy},
          {"plan", o.plan},
          {"network", o.network.empty() ? nlohmann::json(nullptr) : nlohmann::json(o.network)},
          {"precision", o.precision},
          {"batch", o.batch},
          {"recompute", o.recompute},
          {"fits", o.fits},
          {"peak_gib", o.peak_gib},
          {"capacity_gib", o.capacity_gib},
          {"throughput", o.throughput},
          {"unit", o.unit},
          {"compute_hours", o.compute_hours},
          {"lost_hours", o.lost_hours},
          {"total_hours", o.total_hours},
          {"mtbf_hours", o.mtbf_hours},
          {"checkpoint_interval_hours", o.checkpoint_interval_hours},
          {"checkpoint_gb", o.checkpoint_gb},
          {"expected_failures", o.expected_failures},
          {"ecc", o.ecc},
          {"latency_p99_ms", o.latency_p99_ms},
          {"time_to_first_token_ms", o.ttft_ms},
          {"per_token_ms", o.per_token_ms},
          {"tp", o.tp},
          {"usd_per_million_output_tokens", o.usd_per_million_tokens ? nlohmann::json(*o.usd_per_million_tokens) : nlohmann::json()},
          {"capacity_rps", o.capacity_rps},
          {"tenants_per_card", o.tenants_per_card},
          {"isolation", o.isolation},
          {"rent_usd", opt(o.rent_usd)},
          {"buy_upfront_usd", opt(o.buy_upfront_usd)},
          {"buy_usd", opt(o.buy_usd)},
          {"energy_usd", opt(o.energy_usd)},
          {"breakeven_utilization", opt(o.breakeven_utilization)},
          {"cost_usd", opt(o.cost_usd)},
          {"cost_basis", o.cost_basis},
          {"feasible", o.feasible},
          {"why_not", o.why_not},
          {"reason", o.reason},
          {"would_fit_with", o.would_fit_with}};
}

}  // namespace

nlohmann::json advice_json(const Advice& a) {
  const Scenario& s = a.scenario;
  nlohmann::json ranked = nlohmann::json::array(), out = nlohmann::json::array(), assumptions = nlohmann::json::array();
  for (const auto& o : a.ranked) ranked.push_back(option_json(o));
  for (const auto& o : a.ruled_out) out.push_back(option_json(o));
  nlohmann::json all = nlohmann::json::array();
  for (const auto& o : a.options) all.push_back(option_json(o));
  for (const auto& x : a.assumptions)
    assumptions.push_back({{"key", x.key}, {"value", x.value}, {"unit", x.unit}, {"basis", x.basis}, {"overridden", x.overridden}});
  return {{"schema_version", 1},
          {"scenario",
           {{"name", s.name}, {"workload", s.workload}, {"task", s.task}, {"finetune", s.finetune}, {"precision", s.precision},
            {"precision_named", s.precision_named},
            {"work", s.work}, {"work_unit", a.work_unit}, {"hours", opt(s.hours)}, {"tenants", s.tenants},
            {"sla_p99_ms", opt(s.sla_p99_ms)}, {"sla_ttft_ms", opt(s.sla_ttft_ms)}, {"sla_tpot_ms", opt(s.sla_tpot_ms)},
            {"requests_per_s", s.requests_per_s}, {"budget_usd", opt(s.budget_usd)}, {"purchase", s.purchase},
            {"engine", s.engine.empty() ? nlohmann::json(nullptr) : nlohmann::json(s.engine)},
            {"framework", s.framework.empty() ? nlohmann::json(nullptr) : nlohmann::json(s.framework)},
            {"release", s.release.empty() ? nlohmann::json(nullptr) : nlohmann::json(s.release)},
            {"network", s.network.empty() ? nlohmann::json(nullptr) : nlohmann::json(s.network)}, {"gpus", s.gpus},
            {"seq_len", s.seq_len > 0 ? nlohmann::json(s.seq_len) : nlohmann::json(nullptr)},
            {"gen_len", s.gen_len > 0 ? nlohmann::json(s.gen_len) : nlohmann::json(nullptr)}, {"options", s.workload_options}}},
          {"cost_what", a.cost_what},
          {"ranked", ranked},
          {"ruled_out", out},
          {"options", all},
          {"assumptions", assumptions},
          {"assumed", a.assumed},
          {"notes", a.notes}};
}

std::string advice_text(const Advice& a, std::size_t limit) {
  std::string t;
  const Scenario& s = a.scenario;
  t += fmt::format("{}{} {} ({}{}){}\n", s.name.empty() ? "" : s.name + ": ", s.task, s.workload,
                   s.task == "finetune" ? s.finetune + ", " : "", s.precision_named ? s.precision : std::string(perf::kDefaultPrecisionRule),
                   s.work > 0 ? fmt::format(", {:.3g} {}", s.work, a.work_unit) : "");
  if (!a.assumed.empty()) t += "assumed: " + strings::join(a.assumed, "; ") + "\n";
  const bool serving = s.task == "infer";
  t += fmt::format("{:>4}  {:<16} {:>3}  {:<16} {:>6} {:>9} {:>12} {:>12}  {}\n", "rank", "gpu", "n", "strategy", "batch",
                   serving ? "p99 ms" : "hours", serving ? "capacity/s" : "mem GiB/GPU", fmt::format("cost"), "reason");
  for (std::size_t i = 0; i < a.ranked.size() && i < limit; ++i) {
    const Option& o = a.ranked[i];
    t += fmt::format("{:>4}  {:<16} {:>3}  {:<16} {:>6} {:>9} {:>12} {:>12}  {}\n", o.rank, o.gpu_id, o.count, o.strategy, o.batch,
                     serving ? fmt::format("{:.1f}", o.latency_p99_ms) : o.total_hours > 0 ? fmt::format("{:.1f}", o.total_hours) : "N/A",
                     serving ? fmt::format("{:.0f}", o.capacity_rps) : fmt::format("{:.1f}", o.peak_gib),
                     o.cost_usd ? units::format_usd(*o.cost_usd) : "N/A", o.reason);
  }
  if (a.ranked.size() > limit) t += fmt::format("      ... {} more (--top N)\n", a.ranked.size() - limit);
  t += fmt::format("cost is {}\n", a.cost_what);
  if (!a.ruled_out.empty()) {
    t += "ruled out:\n";
    for (const auto& o : a.ruled_out) t += fmt::format("  {:<16} {}\n", o.gpu_id, o.reason);
  }
  for (const auto& n : a.notes) t += "note: " + n + "\n";
  t += "assumptions (override with --assume key=value):\n";
  for (const auto& x : a.assumptions)
    t += fmt::format("  {:<26} {:>10} {:<12} {}{}\n", x.key, units::format_plain(x.value, 4), x.unit, x.basis, x.overridden ? " [set]" : "");
  return t;
}

}  // namespace gpuvs::advise
