// SPDX-License-Identifier: Apache-2.0
// gpuvs compare G1 G2 ...: GPUs side by side on one workload. With no GPUs, the seed document's question:
// RTX 4090 or A100 80GB for the seed model, and which claims the numbers confirm or refute.
#include <fmt/format.h>

#include <algorithm>
#include <tuple>
#include <nlohmann/json.hpp>

#include "advise/assumptions.hpp"
#include "catalog/catalog.hpp"
#include "catalog/featured.hpp"
#include "cli/assumption_options.hpp"
#include "cli/calibration_file.hpp"
#include "cli/commands.hpp"
#include "cli/gpu_names.hpp"
#include "cli/measured_input.hpp"
#include "cli/output.hpp"
#include "cli/validators.hpp"
#include "core/error.hpp"
#include "core/strings.hpp"
#include "core/units.hpp"
#include "models/networks.hpp"
#include "perf/compare.hpp"
#include "perf/constants.hpp"
#include "perf/serving.hpp"
#include "perf/stack_calibration.hpp"
#include "workload/workload.hpp"

namespace gpuvs::cli {

namespace {
// Why another card takes only part of a measured ratio (perf/constants.hpp transfer_share).
constexpr const char* kShareBasis =
    "the share of a figure's error that published runs of one configuration share across cards; the rest is the card's own";
}  // namespace

namespace {

struct CompareArgs {
  std::vector<std::string> gpus;
  std::string workload = "seed-mlp", precision, mode = "train", options;  // precision "": the default rule
  std::string facts;  // --facts FILE
  std::vector<std::string> catalogs;
  std::int64_t batch = 0;
  int gpus_each = 1;  // serving: GPUs per system (tp x replicas)
  Output out = Output::table;
  AssumptionArgs costs;
  std::vector<std::string> measured;  // --measured FILE|SPEC
  std::string stack_file;             // --stack FILE (gpuvs calibrate --save)
  std::string calibration;            // --calibration FILE (gpuvs bench --save), as predict takes it
  bool workload_given = false, mode_given = false;  // set from the parsed command line
};

/// The basis of the cost rows, in words, from the assumptions they were priced at (advise's).
std::string cost_basis(const advise::Assumptions& a) {
  return fmt::format("owned: purchase price (MSRP, else the benchmark price basis) over {:g} years at {:g}% utilization, plus TDP at "
                     "${:.2f}/kWh with PUE {:g}; cloud: the catalog's dated $/GPU-hour quotes (--assume price.ID=, rent.ID= to set "
                     "yours)",
                     a.get("amortization_years"), 100 * a.get("utilization"), a.get("electricity_usd_per_kwh"), a.get("pue"));
}

nlohmann::json cost_assumptions_json(const advise::Assumptions& a) {
  return {{"amortization_years", a.get("amortization_years")},
          {"utilization", a.get("utilization")},
          {"electricity_usd_per_kwh", a.get("electricity_usd_per_kwh")},
          {"pue", a.get("pue")}};
}

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

/// LLM serving side by side (decoders with --mode prefill, decode or infer).
int run_compare_serving(const CompareArgs& a, const catalog::Catalog& cat, const workload::Workload& w, const advise::Assumptions& costs,
                        const std::optional<perf::StackCalibration>& stack, const perf::Calibration* cal, const std::vector<std::string>& said) {
  perf::ServingRequest r;
  r.calibration = cal;
  r.workload = a.workload;
  r.mode = a.mode;
  r.batch = a.batch;
  r.gpus = a.gpus_each;
  r.format = perf::serving_format_for(a.precision);
  r.options = perf::parse_option_pairs(a.options);
  // N GPUs each serve one copy of the model split over them (tensor parallel N) unless tp= says otherwise: N
  // replicas of the whole model each, which --gpus-each read as before, priced one GPU's weights per GPU.
  if (a.gpus_each > 1 && !r.options.count("tp")) r.options["tp"] = std::to_string(a.gpus_each);
  std::vector<perf::ServingCompareEntry> without;
  if (stack) {
    without = perf::compare_serving(cat, a.gpus, w, r, costs.hour_prices(), a.precision);
    r.stack = &stack->ratios;
  }
  // Each card in the precision's weights, or the nearest it has (said), as predict, advise and evaluate serve it.
  const auto entries = perf::compare_serving(cat, a.gpus, w, r, costs.hour_prices(), a.precision);
  const auto usd = [](const std::optional<double>& v) { return v ? units::format_usd(*v) : std::string("-"); };
  if (a.out != Output::table) {
    nlohmann::json arr = nlohmann::json::array();
    for (const auto& e : entries) {
      nlohmann::json j{{"gpu", e.gpu->id}};
      if (!e.format_note.empty()) j["format_note"] = e.format_note;
      if (!e.prediction) {
        j["cannot_serve"] = e.why;
      } else {
        const auto& p = *e.prediction;
        j.update({{"throughput", {{"value", p.throughput}, {"unit", p.unit}, {"per", "system"}}},
                  {"ratio", e.ratio},
                  {"batch", p.batch},
                  {"time_to_first_token_s", p.ttft_s},
                  {"per_output_token_s", p.tpot_s},
                  {"weights_gib_per_gpu", p.weight_bytes / units::kGiB},
                  {"max_concurrency", p.max_concurrency},
                  {"fits", p.fits},
                  {"engine", p.engine},
                  {"format", p.format},
                  {"usd_per_million", e.usd_per_million ? nlohmann::json(*e.usd_per_million) : nlohmann::json()},
                  {"owned_usd_per_million", e.owned_usd_per_million ? nlohmann::json(*e.owned_usd_per_million) : nlohmann::json()}});
        if (stack) {
          const auto& before = without[static_cast<std::size_t>(&e - entries.data())];
          j["throughput_without_measurements"] = before.prediction ? nlohmann::json(before.prediction->throughput) : nlohmann::json();
        }
      }
      arr.push_back(j);
    }
    nlohmann::json doc{{"schema_version", 1}, {"workload", a.workload}, {"mode", a.mode}, {"cost_assumptions", cost_assumptions_json(costs)}, {"gpus", arr}};
    if (stack) doc["measured"] = stack_json(*stack);
    if (!said.empty()) doc["assumed"] = said;
    print_structured(doc, a.out, {"gpus"});
    return 0;
  }
  const perf::ServingPrediction* any = nullptr;
  for (const auto& e : entries)
    if (e.prediction && !any) any = &*e.prediction;
  const int tp = static_cast<int>(perf::option_int(r.options, "tp", 1, 1, 64));
  bool formats_differ = false;
  for (const auto& e : entries) formats_differ = formats_differ || (e.prediction && any && e.prediction->format != any->format);
  // The weights as every card served them, else by card: the default rule's, or the named ones where a card has them.
  bool fell_back = false;
  for (const auto& e : entries) fell_back = fell_back || (e.prediction && !e.format_note.empty());
  const std::string named = perf::serving_format_for(a.precision);
  const std::string weights =
      formats_differ && a.precision.empty() ? "weights by card, the default rule's 16-bit ones (bf16, fp16 on a card without BF16)"
      : formats_differ                      ? fmt::format("{} weights, the nearest a card has where it lacks them", named)
      : fell_back && any                    ? fmt::format("{} weights, the nearest to {} these cards run", any->format, named)
                                            : fmt::format("{} weights", any ? any->format : r.format);
  fmt::print("{} {} ({}, {} engine{}), {} GPU(s) each{}\n", strings::escape_control(a.workload), a.mode, weights,
             any ? any->engine : "-", any && any->mode != "prefill" ? fmt::format(", {} + {} tokens", any->prompt_len, any->gen_len) : "",
             a.gpus_each, a.gpus_each > 1 ? fmt::format(": {} replica(s) of tensor parallel {}", a.gpus_each / tp, tp) : "");
  std::vector<std::pair<std::string, std::vector<std::string>>> rows;
  std::vector<std::string> head;
  for (const auto& e : entries) head.push_back(e.gpu->id);
  rows.push_back({"", head});
  auto row = [&](const std::string& label, auto cell) {
    std::vector<std::string> cells;
    for (const auto& e : entries) cells.push_back(e.prediction ? cell(*e.prediction, e) : std::string("-"));
    rows.push_back({label, cells});
  };
  row(any ? any->unit : "throughput", [](const perf::ServingPrediction& p, const perf::ServingCompareEntry&) { return units::format_si(p.throughput); });
  if (stack) {
    std::vector<std::string> cells;
    for (const auto& e : without) cells.push_back(e.prediction ? units::format_si(e.prediction->throughput) : std::string("-"));
    rows.push_back({"without measured", cells});
  }
  row("ratio", [](const perf::ServingPrediction&, const perf::ServingCompareEntry& e) { return fmt::format("{:.2f}x", e.ratio); });
  row(a.mode == "infer" ? "in flight" : "batch", [](const perf::ServingPrediction& p, const perf::ServingCompareEntry&) { return std::to_string(p.batch); });
  if (a.mode != "prefill") {
    row("first token", [](const perf::ServingPrediction& p, const perf::ServingCompareEntry&) { return units::format_seconds(p.ttft_s); });
    row("per token", [](const perf::ServingPrediction& p, const perf::ServingCompareEntry&) { return units::format_seconds(p.tpot_s); });
  }
  if (formats_differ) row("weights", [](const perf::ServingPrediction& p, const perf::ServingCompareEntry&) { return p.format; });
  row("weights/GPU", [](const perf::ServingPrediction& p, const perf::ServingCompareEntry&) { return fmt::format("{:.1f} GiB", p.weight_bytes / units::kGiB); });
  row("max in flight", [](const perf::ServingPrediction& p, const perf::ServingCompareEntry&) { return std::to_string(p.max_concurrency); });
  row("fits", [](const perf::ServingPrediction& p, const perf::ServingCompareEntry&) {
    return p.fits ? (p.gpu_layers < p.layers ? fmt::format("offloads {} of {} blocks", p.layers - p.gpu_layers, p.layers) : std::string("yes"))
                  : std::string("NO");
  });
  row("$/M tokens cloud", [&](const perf::ServingPrediction&, const perf::ServingCompareEntry& e) { return usd(e.usd_per_million); });
  row("$/M tokens owned", [&](const perf::ServingPrediction&, const perf::ServingCompareEntry& e) { return usd(e.owned_usd_per_million); });
  print_table(rows, 16, 12);
  for (const auto& e : entries) {
    if (!e.prediction) fmt::print("  {} cannot serve it: {}\n", e.gpu->id, e.why);
    else if (!e.format_note.empty()) fmt::print("  {}: {} weights ({})\n", e.gpu->id, e.prediction->format, e.format_note);
  }
  fmt::print("Cost per million output tokens at full load; {}.\n", cost_basis(costs));
  if (stack) {
    for (const auto& st : stack->steps) fmt::print("Measured {}.\n", stack_step_line(st));
    for (const auto& o : stack->open) fmt::print("Left open by the measurements: {}.\n", o);
    bool applied = false;
    for (const auto& e : entries)
      applied = applied || (e.prediction && e.prediction->engine == stack->ratios.engine && e.prediction->format == stack->ratios.format);
    if (applied)
      fmt::print("Each card keeps its own bandwidth, peaks, clock, launches and host work; only the {} kernels measured move: whole on {}, "
                 "by ratio^{:.2f} elsewhere ({}).\n",
                 stack->ratios.engine, strings::join(stack->ratios.measured_gpus, ", "), perf::active_constants().transfer_share, kShareBasis);
    else
      fmt::print("Not applied: the measurements ran {} {}, these predictions another engine or format.\n", stack->ratios.engine,
                 stack->ratios.format);
  }
  if (!said.empty()) fmt::print("assumed: {}\n", strings::join(said, "; "));
  return 0;
}

/// The precision as named, or the one every card ran under the default rule, or the rule when they differ.
bool precisions_differ(const perf::Comparison& c) {
  for (const auto& e : c.entries)
    if (e.single.plan.precision != c.entries.front().single.plan.precision) return true;
  return false;
}

std::string precision_said(const perf::Comparison& c) {
  bool fell_back = false;
  for (const auto& e : c.entries) fell_back = fell_back || !e.precision_note.empty();
  if (c.precision && fell_back && !precisions_differ(c))  // every card lacks it
    return fmt::format("{} (the nearest to {} these cards run)", perf::precision_name(c.entries.front().single.plan.precision),
                       perf::precision_name(*c.precision));
  if (c.precision && fell_back) return fmt::format("{} (the nearest a card has where it lacks it)", perf::precision_name(*c.precision));
  if (c.precision) return std::string(perf::precision_name(*c.precision));
  return precisions_differ(c) ? perf::kDefaultPrecisionRule : std::string(perf::precision_name(c.entries.front().single.plan.precision));
}

/// What the request left to gpuvs, said as every command says it (perf::assumed), the precision by the rule
/// when the cards ran different ones.
std::vector<std::string> assumed(const CompareArgs& a, const perf::Comparison& c, const workload::Workload& w) {
  perf::PredictRequest req;
  req.batch = a.batch;
  req.precision = c.precision;
  req.options = perf::parse_options(a.options, w);
  std::vector<std::string> out = perf::assumed(req, c.entries.front().single);
  if (!c.precision && precisions_differ(c))
    for (auto& line : out)
      if (line.rfind("precision ", 0) == 0) line = fmt::format("precision by card (the default rule: {})", perf::kDefaultPrecisionRule);
  for (const auto& e : c.entries)
    if (!e.precision_note.empty())
      out.push_back(fmt::format("precision {} ({})", perf::precision_name(e.single.plan.precision), e.precision_note));
  return out;
}

int run_compare(CompareArgs a) {
  const auto facts = install_facts(a.facts);  // first: everything after prices with them
  const auto engine_preferred = install_preferred_engine();  // a user's default engine, before anything is priced
  catalog::Catalog cat = catalog::Catalog::builtin();
  for (const auto& f : a.catalogs) cat.add_file(f);
  const bool seed_question = a.gpus.empty();
  if (seed_question) {
    a.gpus = catalog::featured().seed_question;
  }
  if (a.mode != "train" && !perf::is_serving_mode(a.mode))
    throw InputError(fmt::format("--mode '{}' is not a mode (expected train, infer, prefill or decode)", strings::printable(a.mode)));
  if (a.gpus_each < 1 || a.gpus_each > 64) throw InputError(fmt::format("--gpus-each must be in [1, 64], got {}", a.gpus_each));
  a.gpus = gpu_ids(cat, a.gpus);  // an unknown card is named before the workload is read; nvidia-smi names read too
  advise::Assumptions costs = standing_assumptions(cat);
  apply_assumption_options(a.costs, costs, cat);
  // A card's benchmarks: its column corrected as predict --calibration corrects its prediction, said either way.
  std::optional<perf::Calibration> cal;
  std::vector<std::string> said;
  if (!a.calibration.empty()) cal = load_calibration(a.calibration, cat);
  const perf::Calibration* cal_ptr = cal ? &*cal : nullptr;
  // Your measurements: the stack they ran, calibrated (with that calibration, so its card is corrected once); what the
  // command leaves unsaid is what they ran, and said so (predict's rule).
  FlagRequest fr{.workload = a.workload, .mode = a.mode, .precision = a.precision, .options = a.options, .batch = a.batch,
                 .workload_given = a.workload_given, .mode_given = a.mode_given};
  const std::optional<perf::StackCalibration> stack = measured_request(cat, a.measured, a.stack_file, cal_ptr, fr, said);
  std::tie(a.workload, a.mode, a.precision, a.options, a.batch) = std::tie(fr.workload, fr.mode, fr.precision, fr.options, fr.batch);
  if (cal)
    said.push_back(std::find(a.gpus.begin(), a.gpus.end(), cal->gpu_id) != a.gpus.end()
                       ? fmt::format("{}'s figures corrected by what was measured on it ({})", cal->gpu_id, strings::escape_control(cal->source))
                   : stack && stack->solved_with
                       ? fmt::format("the calibration from {} measured {}, which is not compared: it priced only the stack's figures on it",
                                     strings::escape_control(cal->source), cal->gpu_id)
                       : fmt::format("the calibration from {} measured {}, which is not compared: not applied", strings::escape_control(cal->source),
                                     cal->gpu_id));
  if (stack && stack->solved_with) said.push_back(stack_solved_with_line(*stack));
  const workload::Workload w(a.workload, perf::parse_option_pairs(a.options));
  check_measured_request(fr, w);
  if (workload::pricer_for(a.mode, w.family()) == workload::Pricer::serving) return run_compare_serving(a, cat, w, costs, stack, cal_ptr, said);
  if (a.gpus_each != 1) throw InputError("--gpus-each applies to LLM serving (tensor-parallel replicas)");
  const perf::Comparison c = perf::compare(cat, a.gpus, w, named_precision(a.precision), a.batch, a.mode == "train",
                                           costs.hour_prices(), perf::parse_options(a.options, w), stack ? &stack->ratios : nullptr, cal_ptr);
  const std::string unit = c.entries.front().single.unit;
  const std::string per_million = unit == "tokens/s" ? "tokens" : unit.substr(0, unit.size() - 2);
  if (a.out != Output::table) {
    nlohmann::json arr = nlohmann::json::array();
    for (const auto& e : c.entries) {
      nlohmann::json s = nlohmann::json::object();
      for (const auto& [n, eff] : e.scaling) s[std::to_string(n)] = eff;
      arr.push_back({{"gpu", e.gpu->id}, {"throughput", {{"value", e.single.throughput}, {"unit", e.single.unit}, {"per", "gpu"}}},
                     {"ratio", e.ratio}, {"step_time_s", e.single.step_s},
                     {"hours_per_million", e.hours_per_million},
                     {"usd_per_million", e.usd_per_million ? nlohmann::json(*e.usd_per_million) : nlohmann::json(nullptr)},
                     {"owned_usd_per_million",
                      e.owned_usd_per_million ? nlohmann::json(*e.owned_usd_per_million) : nlohmann::json(nullptr)},
                     {"memory", {{"peak_gib", e.single.memory.peak_bytes / units::kGiB},
                                 {"capacity_gib", e.single.memory.capacity_bytes / units::kGiB},
                                 {"fits", e.single.memory.fits}, {"max_batch", e.max_batch},
                                 {"max_batch_is_lower_bound", e.max_batch_capped}}},
                     {"precision", perf::precision_name(e.single.plan.precision)}, {"batch", e.single.batch},
                     {"precisions", e.precisions}, {"scaling_efficiency", s}, {"link_2gpu", e.link_2gpu},
                     {"ecc", e.gpu->ecc}, {"mig_max", e.gpu->mig_max}, {"maturity", e.single.maturity_notes}});
      if (stack) {
        arr.back()["throughput_without_measurements"] = e.throughput_without_stack;
        arr.back()["measured_applied"] = e.single.stack_applied;
      }
    }
    nlohmann::json claims = nlohmann::json::array();
    for (const auto& cl : c.claims) claims.push_back({{"claim", cl.claim}, {"verdict", cl.verdict}, {"evidence", cl.evidence}});
    std::vector<std::string> all_said = said;
    for (const auto& line : assumed(a, c, w)) all_said.push_back(line);
    nlohmann::json doc{{"schema_version", 1}, {"workload", c.workload}, {"batch", c.batch},
                       {"precision", precision_said(c)}, {"mode", a.mode}, {"assumed", all_said},
                       {"cost_assumptions", cost_assumptions_json(costs)}, {"gpus", arr}, {"claims", claims}};
    if (stack) doc["measured"] = stack_json(*stack);
    print_structured(doc, a.out, {"gpus"});
    return 0;
  }
  if (seed_question)
    fmt::print("The seed document's question: {} or {} for {}?\n\n", c.entries[0].gpu->name, c.entries[1].gpu->name,
               c.workload);
  fmt::print("{} {}, batch {} per GPU, {}\n", strings::escape_control(c.workload), a.mode, c.batch, precision_said(c));
  std::vector<std::string> all_said = said;
  for (const auto& line : assumed(a, c, w)) all_said.push_back(line);
  if (!all_said.empty()) fmt::print("assumed: {}\n", strings::join(all_said, "; "));
  fmt::print("\n");
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
  if (stack) row("without measured", [](const perf::CompareEntry& e) { return units::format_si(e.throughput_without_stack); });
  row("relative", [](const perf::CompareEntry& e) { return fmt::format("{:.2f}x", e.ratio); });
  row("step time", [](const perf::CompareEntry& e) { return units::format_seconds(e.single.step_s); });
  row("bound (compute/mem/latency/launch)", [](const perf::CompareEntry& e) {
    const auto& d = e.single.detail;
    return fmt::format("{:.0f}/{:.0f}/{:.0f}/{:.0f}%", 100 * d.compute_s / d.step_s, 100 * d.memory_s / d.step_s,
                       100 * d.latency_s / d.step_s, 100 * d.launch_s / d.step_s);
  });
  row("hours per million " + per_million, [](const perf::CompareEntry& e) { return fmt::format("{:.4g}", e.hours_per_million); });
  // Dollars as advise and evaluate show them: per billion where every figure is under a cent per million.
  double largest = 0;
  for (const auto& e : c.entries) largest = std::max({largest, e.usd_per_million.value_or(0), e.owned_usd_per_million.value_or(0)});
  const advise::CostScale scale = advise::cost_scale(largest);
  row("cloud $ per " + scale.per, [&](const perf::CompareEntry& e) {
    return e.usd_per_million ? fmt::format("{} (at {}/h)", units::format_usd(*e.usd_per_million * scale.factor),
                                           units::format_usd(*e.usd_per_million / e.hours_per_million))
                             : std::string("no price in catalog");
  });
  row("owned $ per " + scale.per, [&](const perf::CompareEntry& e) {
    return e.owned_usd_per_million ? units::format_usd(*e.owned_usd_per_million * scale.factor) : std::string("no price in catalog");
  });
  row("memory needed", [](const perf::CompareEntry& e) {
    return fmt::format("{:.2f} of {:.1f} GiB", e.single.memory.peak_bytes / units::kGiB,
                       e.single.memory.capacity_bytes / units::kGiB);
  });
  row("largest batch that fits",
      [](const perf::CompareEntry& e) { return std::to_string(e.max_batch) + (e.max_batch_capped ? "+" : ""); });
  row("precision run", [](const perf::CompareEntry& e) { return std::string(perf::precision_name(e.single.plan.precision)); });
  row("precisions", [](const perf::CompareEntry& e) { return strings::join(e.precisions, ", "); });
  for (std::size_t i = 0; !c.entries.front().scaling.empty() && i < c.entries.front().scaling.size(); ++i)
    row(fmt::format("scaling to {} GPUs", c.entries.front().scaling[i].first),
        [&](const perf::CompareEntry& e) { return fmt::format("{:.0f}%", 100 * e.scaling[i].second); });
  row("link between 2", [](const perf::CompareEntry& e) { return e.link_2gpu; });
  row("ECC", [](const perf::CompareEntry& e) { return e.gpu->ecc; });
  row("MIG", [](const perf::CompareEntry& e) { return e.gpu->mig_max > 0 ? fmt::format("{} instances", e.gpu->mig_max) : "none"; });
  print_table(rows, 26, 24);
  fmt::print("\n  {}\n", cost_basis(costs));
  // A stack older than a card's native kernels is priced lower there (perf/maturity.hpp): say where and why.
  for (const auto& e : c.entries)
    for (const auto& note : e.single.maturity_notes) fmt::print("  On {}: {}.\n", e.gpu->id, note);
  if (stack) {
    for (const auto& st : stack->steps) fmt::print("  Measured {}.\n", stack_step_line(st));
    for (const auto& o : stack->open) fmt::print("  Left open by the measurement: {}.\n", o);
    bool applied = false;
    for (const auto& e : c.entries) applied = applied || e.single.stack_applied;
    if (applied)
      fmt::print("  Each card keeps its own peaks, bandwidth, clock, waves and launches; only the {} {} kernels measured move: whole on {}, "
                 "by ratio^{:.2f} elsewhere ({}).\n",
                 stack->ratios.engine, stack->ratios.format, strings::join(stack->ratios.measured_gpus, ", "), perf::active_constants().transfer_share,
                 kShareBasis);
    else
      fmt::print("  Not applied: the measurement ran {} {}, these predictions another framework or precision.\n", stack->ratios.engine,
                 stack->ratios.format);
  }
  if (!c.claims.empty()) {
    fmt::print("\nClaims, judged by these numbers:\n");
    for (const auto& cl : c.claims) fmt::print("  [{}] {}: {}\n", cl.verdict, cl.claim, cl.evidence);
  }
  return 0;
}

}  // namespace

Runner add_compare_command(CLI::App& app) {
  auto a = std::make_shared<CompareArgs>();
  auto* sub = app.add_subcommand("compare", "Compare GPUs side by side on a workload (no GPUs: the seed question, RTX 4090 vs A100 on seed-mlp)");
  add_facts_option(sub, a->facts);
  sub->add_option("gpus", a->gpus, "Catalog GPU ids or aliases");
  auto* workload_opt = sub->add_option("--workload", a->workload, "Workload id")->capture_default_str();
  sub->add_option("--precision", a->precision, precision_help("fp32, tf32, amp-fp16, amp-bf16, amp-fp8, fp16, bf16"));
  sub->add_option("--batch", a->batch, "Batch per GPU (default: the workload family's; 32 for the seed question)")->check(whole_in(1, models::kMaxBatch));
  auto* mode_opt = sub->add_option("--mode", a->mode, "train or infer; decoders also prefill and decode (LLM serving)")->capture_default_str();
  add_measured_options(sub, a->measured, a->stack_file);
  sub->add_option("--calibration", a->calibration, "A gpuvs bench --save record: correct the model for the GPU it measured (as predict does)");
  sub->add_option("--options", a->options, "k=v;k=v: seq_len, flash_attention; serving: prompt_len, gen_len, tp, framework, kv_dtype");
  sub->add_option("--gpus-each", a->gpus_each, "LLM serving: GPUs per system (with tp=N in --options)")->capture_default_str()->check(whole_in(1, 64));
  sub->add_option("--catalog", a->catalogs, "Add devices from a TOML file (repeatable)");
  add_assumption_options(sub, a->costs);
  add_output_option(sub, a->out);
  return [a, workload_opt, mode_opt] {
    a->workload_given = workload_opt->count() > 0;
    a->mode_given = mode_opt->count() > 0;
    return run_compare(*a);
  };
}

}  // namespace gpuvs::cli
