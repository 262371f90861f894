// gpuvs compare G1 G2 ...: GPUs side by side on one workload. With no GPUs, the seed document's question:
// RTX 4090 or A100 80GB for the seed model, and which claims the numbers confirm or refute.
#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "catalog/catalog.hpp"
#include "cli/commands.hpp"
#include "core/error.hpp"
#include "core/strings.hpp"
#include "core/units.hpp"
#include "perf/compare.hpp"

namespace gpuvs::cli {

namespace {

struct CompareArgs {
  std::vector<std::string> gpus;
  std::string workload = "seed-mlp", precision = "tf32", mode = "train", options;
  std::vector<std::string> catalogs;
  std::int64_t batch = 0;
  bool json = false;
};

/// Rows of (label, cells): labels left-aligned in a column as wide as the longest (at least label_width),
/// cells right-aligned in columns of cell_width, wrapped at spaces onto continuation lines; a word longer
/// than its column widens that column.
void print_table(const std::vector<std::pair<std::string, std::vector<std::string>>>& rows, std::size_t label_width,
                 std::size_t cell_width) {
  std::vector<std::size_t> widths;
  for (const auto& [label, cells] : rows) {
    label_width = std::max(label_width, label.size());
    if (widths.size() < cells.size()) widths.resize(cells.size(), cell_width);
    for (std::size_t i = 0; i < cells.size(); ++i)
      for (const auto& word : strings::wrap_words(cells[i], 0)) widths[i] = std::max(widths[i], word.size());
  }
  for (const auto& [label, cells] : rows) {
    std::vector<std::vector<std::string>> wrapped;
    std::size_t height = 1;
    for (std::size_t i = 0; i < cells.size(); ++i) {
      wrapped.push_back(strings::wrap_words(cells[i], widths[i]));
      height = std::max(height, wrapped.back().size());
    }
    for (std::size_t k = 0; k < height; ++k) {
      std::string line = fmt::format("  {:<{}}", k == 0 ? label : std::string(), label_width);
      for (std::size_t i = 0; i < wrapped.size(); ++i)
        line += fmt::format(" {:>{}}", k < wrapped[i].size() ? wrapped[i][k] : std::string(), widths[i]);
      while (!line.empty() && line.back() == ' ') line.pop_back();
      fmt::print("{}\n", line);
    }
  }
}

int run_compare(CompareArgs a) {
  catalog::Catalog cat = catalog::Catalog::builtin();
  for (const auto& f : a.catalogs) cat.add_file(f);
  const bool seed_question = a.gpus.empty();
  if (seed_question) {
    a.gpus = {"rtx-4090", "a100-80gb-sxm"};
    if (a.batch == 0 && a.workload == "seed-mlp") a.batch = 32;  // Keras's default batch size
  }
  if (a.mode != "train" && a.mode != "infer")
    throw InputError(fmt::format("--mode '{}' is not a mode (expected train or infer)", strings::printable(a.mode)));
  const perf::Comparison c = perf::compare(cat, a.gpus, a.workload, perf::parse_precision(a.precision), a.batch,
                                           a.mode == "train", perf::parse_options(a.options));
  const std::string unit = c.entries.front().single.unit;
  const std::string per_million = unit == "tokens/s" ? "tokens" : unit.substr(0, unit.size() - 2);
  if (a.json) {
    nlohmann::json arr = nlohmann::json::array();
    for (const auto& e : c.entries) {
      nlohmann::json s = nlohmann::json::object();
      for (const auto& [n, eff] : e.scaling) s[std::to_string(n)] = eff;
      arr.push_back({{"gpu", e.gpu->id}, {"throughput", {{"value", e.single.throughput}, {"unit", e.single.unit}}},
                     {"ratio", e.ratio}, {"step_time_s", e.single.step_s},
                     {"hours_per_million", e.hours_per_million},
                     {"usd_per_million", e.usd_per_million ? nlohmann::json(*e.usd_per_million) : nlohmann::json(nullptr)},
                     {"owned_usd_per_million",
                      e.owned_usd_per_million ? nlohmann::json(*e.owned_usd_per_million) : nlohmann::json(nullptr)},
                     {"memory", {{"peak_gib", e.single.memory.peak_bytes / units::kGiB},
                                 {"capacity_gib", e.single.memory.capacity_bytes / units::kGiB},
                                 {"fits", e.single.memory.fits}, {"max_batch", e.max_batch},
                                 {"max_batch_is_lower_bound", e.max_batch_capped}}},
                     {"precisions", e.precisions}, {"scaling_efficiency", s}, {"link_2gpu", e.link_2gpu},
                     {"ecc", e.gpu->ecc}, {"mig_max", e.gpu->mig_max}});
    }
    nlohmann::json claims = nlohmann::json::array();
    for (const auto& cl : c.claims) claims.push_back({{"claim", cl.claim}, {"verdict", cl.verdict}, {"evidence", cl.evidence}});
    fmt::print("{}\n", nlohmann::json{{"schema_version", 1}, {"workload", c.workload}, {"batch", c.batch},
                                      {"precision", perf::precision_name(c.precision)}, {"mode", a.mode},
                                      {"ownership_assumptions", {{"years", 3.0}, {"usd_per_kwh", 0.15}, {"pue", 1.3}}},
                                      {"gpus", arr}, {"claims", claims}}
                           .dump(2));
    return 0;
  }
  if (seed_question)
    fmt::print("The seed document's question: {} or {} for {}?\n\n", c.entries[0].gpu->name, c.entries[1].gpu->name,
               c.workload);
  fmt::print("{} {}, batch {} per GPU, {}\n\n", c.workload, a.mode, c.batch, perf::precision_name(c.precision));
  // The table: rows collected first, then laid out. A GPU's column is 24 characters, right-aligned; a cell
  // wider than that wraps onto continuation lines at spaces, and a single word longer than its column widens
  // that column. The label column fits the longest label. Nothing is cut.
  std::vector<std::pair<std::string, std::vector<std::string>>> rows;
  auto row = [&](const std::string& label, auto&& cell) {
    std::vector<std::string> cells;
    for (const auto& e : c.entries) cells.push_back(cell(e));
    rows.emplace_back(label, std::move(cells));
  };
  row("", [](const perf::CompareEntry& e) { return e.gpu->id; });
  row(unit + " per GPU", [](const perf::CompareEntry& e) { return units::format_si(e.single.throughput); });
  row("relative", [](const perf::CompareEntry& e) { return fmt::format("{:.2f}x", e.ratio); });
  row("step time", [](const perf::CompareEntry& e) { return units::format_seconds(e.single.step_s); });
  row("bound (compute/mem/launch)", [](const perf::CompareEntry& e) {
    const auto& d = e.single.detail;
    return fmt::format("{:.0f}/{:.0f}/{:.0f}%", 100 * d.compute_s / d.step_s, 100 * d.memory_s / d.step_s,
                       100 * d.launch_s / d.step_s);
  });
  row("hours per million " + per_million, [](const perf::CompareEntry& e) { return fmt::format("{:.4g}", e.hours_per_million); });
  row("cloud $ per million", [](const perf::CompareEntry& e) {
    return e.usd_per_million ? fmt::format("{:.4g} (at {:.2f}/h)", *e.usd_per_million, *e.gpu->cloud_usd_per_hr)
                             : std::string("no price in catalog");
  });
  row("owned $ per million", [](const perf::CompareEntry& e) {
    return e.owned_usd_per_million ? fmt::format("{:.4g}", *e.owned_usd_per_million) : std::string("no price in catalog");
  });
  row("memory needed", [](const perf::CompareEntry& e) {
    return fmt::format("{:.2f} of {:.1f} GiB", e.single.memory.peak_bytes / units::kGiB,
                       e.single.memory.capacity_bytes / units::kGiB);
  });
  row("largest batch that fits",
      [](const perf::CompareEntry& e) { return std::to_string(e.max_batch) + (e.max_batch_capped ? "+" : ""); });
  row("precisions", [](const perf::CompareEntry& e) { return strings::join(e.precisions, ", "); });
  for (std::size_t i = 0; !c.entries.front().scaling.empty() && i < c.entries.front().scaling.size(); ++i)
    row(fmt::format("scaling to {} GPUs", c.entries.front().scaling[i].first),
        [&](const perf::CompareEntry& e) { return fmt::format("{:.0f}%", 100 * e.scaling[i].second); });
  row("link between 2", [](const perf::CompareEntry& e) { return e.link_2gpu; });
  row("ECC", [](const perf::CompareEntry& e) { return e.gpu->ecc; });
  row("MIG", [](const perf::CompareEntry& e) { return e.gpu->mig_max > 0 ? fmt::format("{} instances", e.gpu->mig_max) : "none"; });
  print_table(rows, 26, 24);
  const perf::OwnershipAssumptions own;
  fmt::print("\n  owned: purchase price (MSRP, else the benchmark price basis) over {:g} years of full use, plus TDP at "
             "${:.2f}/kWh with PUE {:g}; cloud: the catalog's dated $/GPU-hour quotes\n",
             own.years, own.usd_per_kwh, own.pue);
  if (!c.claims.empty()) {
    fmt::print("\nClaims, judged by these numbers:\n");
    for (const auto& cl : c.claims) fmt::print("  [{}] {}: {}\n", cl.verdict, cl.claim, cl.evidence);
  }
  return 0;
}

}  // namespace

Runner add_compare_command(CLI::App& app) {
  auto a = std::make_shared<CompareArgs>();
  auto* sub = app.add_subcommand("compare", "Compare GPUs side by side on a workload (no GPUs: RTX 4090 vs A100 on seed-mlp)");
  sub->add_option("gpus", a->gpus, "Catalog GPU ids or aliases");
  sub->add_option("--workload", a->workload, "Workload id")->capture_default_str();
  sub->add_option("--precision", a->precision, "fp32, tf32, amp-fp16, amp-bf16, amp-fp8, fp16, bf16")->capture_default_str();
  sub->add_option("--batch", a->batch, "Batch per GPU (default: the workload family's; 32 for the seed question)");
  sub->add_option("--mode", a->mode, "train or infer")->capture_default_str();
  sub->add_option("--options", a->options, "k=v;k=v: seq_len, flash_attention");
  sub->add_option("--catalog", a->catalogs, "Add devices from a TOML file (repeatable)");
  sub->add_flag("--json", a->json, "JSON output");
  return [a] { return run_compare(*a); };
}

}  // namespace gpuvs::cli
