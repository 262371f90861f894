// SPDX-License-Identifier: Apache-2.0
// gpuvs validate: predictions against published measurements, row by row and as cross-GPU ratios.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <optional>
#include <nlohmann/json.hpp>

#include "catalog/catalog.hpp"
#include "cli/assumption_options.hpp"
#include "cli/measured_input.hpp"
#include "cli/commands.hpp"
#include "cli/output.hpp"
#include "core/error.hpp"
#include "core/files.hpp"
#include "core/stats.hpp"
#include "core/strings.hpp"
#include "core/units.hpp"
#include "perf/band.hpp"
#include "perf/calibrate_one.hpp"
#include "perf/fit.hpp"
#include "perf/validation.hpp"

namespace gpuvs::cli {

namespace {

struct ValidateArgs {
  std::vector<std::string> data;
  std::vector<std::string> measured;  // --measured FILE|SPEC: your own runs as rows
  std::string write_band, fit, constants;
  std::string facts;  // --facts FILE
  std::vector<std::string> catalogs;
  Output out = Output::table;
  bool held_out = false, force = false, calibrate_one = false;
};

/// Files, or folders of *.csv files (sorted).
std::vector<std::string> data_paths(const std::vector<std::string>& data) {
  std::vector<std::string> paths;
  for (const auto& d : data) {
    if (std::filesystem::is_directory(d)) {
      std::vector<std::string> found;
      for (const auto& e : std::filesystem::directory_iterator(d))
        if (e.path().extension() == ".csv") found.push_back(e.path().string());
      if (found.empty()) throw InputError(fmt::format("--data {}: no .csv files in that folder", d));
      std::sort(found.begin(), found.end());
      paths.insert(paths.end(), found.begin(), found.end());
    } else {
      paths.push_back(d);
    }
  }
  return paths;
}

nlohmann::json summary_json(const perf::SourceSummary& f) {
  return nlohmann::json{{"file", f.file}, {"rows", f.rows}, {"scored", f.scored}, {"coverage", f.coverage},
                        {"median_abs_error", f.scored ? nlohmann::json(f.median_ape) : nlohmann::json(nullptr)}, {"ratio_pairs", f.ratio_pairs},
                        {"ratio_median_abs_error", f.ratio_median_ape}, {"in_band", f.in_band}};
}

/// -o json: every row, every source, the totals; held-out folds where they were run (null otherwise). csv and md:
/// a row per measurement, then per source and per held-out fold (the `list` column), the totals on every row.
nlohmann::json transfer_json(const perf::TransferSummary& s) {
  return nlohmann::json{{"file", s.file},
                        {"groups", s.groups},
                        {"pairs", s.pairs},
                        {"uncalibrated_median_abs_error", s.uncalibrated_median},
                        {"flat_median_abs_error", s.flat_median},
                        {"transferred_median_abs_error", s.transferred_median},
                        {"better_than_flat", s.better},
                        {"worse_than_flat", s.worse},
                        {"in_band", s.in_band},
                        {"transferred_spread", s.pairs ? nlohmann::json{{"p10", s.spread_low}, {"p90", s.spread_high}} : nlohmann::json(nullptr)}};
}

/// --calibrate-one as JSON: per source and in all, and every pair (calibrated on `from`, predicted `to`).
nlohmann::json calibrate_one_json(const perf::CalibrateOneReport& c) {
  nlohmann::json sources = nlohmann::json::array(), pairs = nlohmann::json::array();
  for (const auto& s : c.sources) sources.push_back(transfer_json(s));
  for (const auto& p : c.pairs)
    pairs.push_back(nlohmann::json{{"from", p.from},
                                   {"to", p.to},
                                   {"file", p.file},
                                   {"op_class", p.op_class},
                                   {"ratio", p.ratio},
                                   {"measured", p.measured},
                                   {"uncalibrated", p.uncalibrated},
                                   {"flat", p.flat},
                                   {"transferred", p.transferred},
                                   {"band_low", p.band_low},
                                   {"band_high", p.band_high},
                                   {"in_band", p.in_band},
                                   {"note", p.note}});
  return nlohmann::json{{"sources", sources}, {"all", transfer_json(c.all)}, {"pairs", pairs}};
}

void print_report_structured(const perf::ValidationReport& rep, std::size_t scored, const std::vector<perf::SourceSummary>* held,
                             const perf::CalibrateOneReport* one, Output out) {
  nlohmann::json arr = nlohmann::json::array();
  for (const auto& v : rep.rows) {
    nlohmann::json j{{"id", v.row.id}, {"file", v.row.file}, {"status", v.status}, {"unit", v.row.unit.empty() ? v.predicted_unit : v.row.unit},
                     {"per", v.row.per}, {"batch_per_gpu", v.batch}, {"batch_chosen_by_gpuvs", v.batch_chosen}};
    j["predicted"] = v.status == "ok" ? nlohmann::json(v.predicted) : nlohmann::json(nullptr);
    j["measured"] = v.row.value ? nlohmann::json(*v.row.value) : nlohmann::json(nullptr);
    j["reason"] = v.reason;
    j["memory_peak_gib"] = v.memory_peak_gib ? nlohmann::json(*v.memory_peak_gib) : nlohmann::json(nullptr);
    j["memory_capacity_gib"] = v.memory_capacity_gib ? nlohmann::json(*v.memory_capacity_gib) : nlohmann::json(nullptr);
    arr.push_back(j);
  }
  nlohmann::json sources = nlohmann::json::array(), held_json = nlohmann::json::array();
  for (const auto& f : rep.sources) sources.push_back(summary_json(f));
  if (held)
    for (const auto& f : *held) held_json.push_back(summary_json(f));
  print_structured(nlohmann::json{{"schema_version", 2}, {"rows", arr}, {"sources", sources},
                                  {"coverage", rep.coverage}, {"median_abs_error", scored ? nlohmann::json(rep.median_ape) : nlohmann::json(nullptr)},
                                  {"ratio_median_abs_error", rep.ratio_median_ape}, {"in_band", rep.in_band},
                                  {"memory_fit", {{"rows", rep.memory_rows}, {"over_capacity", rep.memory_over}}},
                                  {"held_out_sources", held ? held_json : nlohmann::json(nullptr)},
                                  {"calibrate_one", one ? calibrate_one_json(*one) : nlohmann::json(nullptr)}},
                   out, {"rows", "sources", "held_out_sources"});
}

void print_rows(const perf::ValidationReport& rep) {
  fmt::print("{:<10} {:<16} {:>5} {:<11} {:<9} {:>7} {:>12} {:>12} {:>8}  {}\n", "id", "gpu", "gpus", "workload", "precision",
             "batch", "measured", "predicted", "error", "unit");
  for (const auto& v : rep.rows) {
    if (v.status != "ok") {
      fmt::print("{:<10} {:<16} {:>5} {:<11} {:<9} {:>7}  not predicted: {}\n", v.row.id, v.row.gpu, v.row.n_gpus, v.row.workload,
                 v.row.precision, v.row.batch ? std::to_string(v.row.batch) : "-", v.reason);
      continue;
    }
    fmt::print("{:<10} {:<16} {:>5} {:<11} {:<9} {:>7} {:>12} {:>12} {:>8}  {}{}\n", v.row.id, v.row.gpu, v.row.n_gpus, v.row.workload,
               v.row.precision, v.batch == 0 ? std::string("-") : std::to_string(v.batch) + (v.batch_chosen ? "*" : ""),
               v.row.value ? units::format_plain(*v.row.value, 4) : "-", units::format_plain(v.predicted, 4),
               v.ape ? fmt::format("{:+.1f}%", 100.0 * (v.predicted / *v.row.value - 1)) : "-", v.predicted_unit,
               v.row.per == "system" ? " per system" : "");
  }
  fmt::print("(* batch not published: gpuvs chose the workload's default)\n\n");
}

void print_sources(const std::vector<perf::SourceSummary>& list) {
  fmt::print("{:<26} {:>5} {:>7} {:>9} {:>13} {:>12} {:>8}\n", "source file", "rows", "scored", "coverage", "median |err|",
             "ratio |err|", "in band");
  for (const auto& f : list)
    fmt::print("{:<26} {:>5} {:>7} {:>8.0f}% {:>13} {:>12} {:>8}\n", f.file, f.rows, f.scored, 100 * f.coverage,
               f.scored ? fmt::format("{:.1f}%", 100 * f.median_ape) : "-",
               f.ratio_pairs ? fmt::format("{:.1f}%", 100 * f.ratio_median_ape) : "-",
               f.scored ? fmt::format("{:.0f}%", 100 * f.in_band) : "-");
}

/// Leave-one-source-out: each file's errors under constants fitted without it, and the constants each fold fitted.
void print_held_out(const std::vector<perf::SourceSummary>& held, const std::vector<perf::HeldOutSource>& folds) {
  fmt::print("\nleave-one-source-out (each file predicted by constants fitted on the other files only, with its own\n"
             "achievable figures withheld; a device class with no rows left borrows the other class's fractions):\n");
  print_sources(held);
  for (const auto& f : folds) {
    const auto& dc = f.fit.constants.of(perf::DeviceClass::datacenter);
    const auto& gf = f.fit.constants.of(perf::DeviceClass::geforce);
    fmt::print("  without {:<24} fitted on {:>3} rows: datacenter gemm {:.2f} conv {:.2f}{}; geforce gemm {:.2f} conv {:.2f}{}; "
               "memory {:.1f} B per SM-cycle, decode kernels {:.1f}, ggml matrix-vector {:.1f}, passes {:.1f}, GEMM share {:.2f} ({} serving rows); transfer share {:.2f} ({} pairs)\n",
               f.summary.file, f.fit.rows, dc.gemm, dc.conv, f.fit.classes_fitted[0] ? "" : " (borrowed)", gf.gemm, gf.conv,
               f.fit.classes_fitted[1] ? "" : " (borrowed)", f.fit.constants.bytes_per_sm_cycle, f.fit.constants.decode_bytes_per_sm_cycle,
               f.fit.constants.ggml_gemv_bytes_per_sm_cycle, f.fit.constants.ggml_bytes_per_sm_cycle, f.fit.constants.ggml_gemm_share, f.fit.serving_rows, f.fit.constants.transfer_share, f.fit.transfer_pairs);
  }
  // All folds together: the errors on data the constants never saw, and how many fall inside the printed band.
  const perf::ValidationReport rep = perf::held_out_report(folds);
  std::size_t scored = 0;
  for (const auto& v : rep.rows) scored += v.ape.has_value();
  if (scored > 0)
    fmt::print("  held out, all sources: {} rows scored; median absolute error {:.1f}%, mean {:.1f}%; {:.0f}% inside their band; "
               "band {:.2f}x to {:.2f}x (serving {:.2f}x to {:.2f}x)\n",
               scored, 100 * rep.median_ape, 100 * rep.mean_ape, 100 * rep.in_band, std::exp(rep.log_err_p10), std::exp(rep.log_err_p90),
               std::exp(rep.serving_log_err_p10), std::exp(rep.serving_log_err_p90));
}

/// --calibrate-one: each scored row of a group taken as the user's own measurement, the group's other cards predicted.
void print_calibrate_one(const perf::CalibrateOneReport& c) {
  fmt::print("\ncalibrated on one card, the others predicted (--calibrate-one): each scored row of a source, workload and\n"
             "configuration on two or more cards taken in turn as your measurement; the stack's class that figure is most\n"
             "sensitive to solved from it and carried to the group's other cards. Median |error| of those cards' predictions:\n"
             "uncalibrated (the model alone), flat (scaled by the measured card's measured/predicted: the cross-GPU ratio error)\n"
             "and transferred (the calibration carried through each card's physics).\n");
  fmt::print("{:<26} {:>6} {:>6} {:>13} {:>8} {:>12} {:>15} {:>8}\n", "source file", "groups", "pairs", "uncalibrated", "flat", "transferred",
             "better/worse", "in band");
  auto line = [](const perf::TransferSummary& s) {
    fmt::print("{:<26} {:>6} {:>6} {:>12.1f}% {:>7.1f}% {:>11.1f}% {:>15} {:>7.0f}%\n", s.file, s.groups, s.pairs, 100 * s.uncalibrated_median,
               100 * s.flat_median, 100 * s.transferred_median, fmt::format("{}/{}", s.better, s.worse), 100 * s.in_band);
  };
  for (const auto& s : c.sources) line(s);
  if (c.all.pairs == 0) {
    fmt::print("no group has scored rows on two or more cards\n");
    return;
  }
  line(c.all);
  std::map<std::string, int> classes;
  for (const auto& p : c.pairs) ++classes[p.op_class];
  std::vector<std::string> said;
  for (const auto& [k, n] : classes) said.push_back(fmt::format("{} {}", k, n));
  fmt::print("(better/worse: pairs whose transferred error is below/above the flat one; class solved, by pair: {})\n", strings::join(said, ", "));
  // The band: a calibrated prediction is printed with its row's band; how often it holds, and the spread it has.
  fmt::print("transferred predictions: {:.0f}% inside the band printed with them (the published value {:.2f}x to {:.2f}x of the prediction "
             "in training, {:.2f}x to {:.2f}x serving); where it fell: {:.2f}x to {:.2f}x (10th-90th percentile) over {} pairs\n",
             100 * c.all.in_band, perf::model_band().low(1.0), perf::model_band().high(1.0), perf::serving_band().low(1.0),
             perf::serving_band().high(1.0), c.all.spread_low, c.all.spread_high, c.all.pairs);
}

void print_totals(const perf::ValidationReport& rep, std::size_t scored) {
  // LLM serving by mode: each has its own target.
  std::vector<std::string> by_mode;
  for (const char* mode : {"prefill", "decode", "infer"}) {
    std::vector<double> apes;
    for (const auto& v : rep.rows)
      if (v.serving && v.ape && v.row.mode == mode) apes.push_back(*v.ape);
    if (!apes.empty()) by_mode.push_back(fmt::format("{} {} rows {:.1f}%", mode, apes.size(), 100 * stats::quantile(apes, 0.5)));
  }
  if (!by_mode.empty()) fmt::print("\nLLM serving, median |error| by mode: {}\n", strings::join(by_mode, "; "));
  if (scored == 0)
    fmt::print("\nthroughput: no row scored of {} (none has a measured value the model priced)\n", rep.rows.size());
  else
    fmt::print("\nthroughput: {} rows scored of {} ({:.0f}% coverage); median absolute error {:.1f}%, mean {:.1f}%; {:.0f}% inside their band\n",
               scored, rep.rows.size(), 100 * rep.coverage, 100 * rep.median_ape, 100 * rep.mean_ape, 100 * rep.in_band);
  // No pair or no row scored is said so, not printed as an error of 0.0%.
  if (rep.ratios.empty())
    fmt::print("cross-GPU ratios: no pair (two scored rows of one source and workload on different GPUs make one)\n");
  else
    fmt::print("cross-GPU ratios: {} pairs; median absolute error {:.1f}%, mean {:.1f}%\n", rep.ratios.size(), 100 * rep.ratio_median_ape,
               100 * rep.ratio_mean_ape);
  // Every row that published its batch ran at it: the memory model must not price it over the card.
  if (rep.memory_rows > 0) {
    std::vector<std::string> over;
    for (const auto& v : rep.rows)
      if (std::find(rep.memory_over.begin(), rep.memory_over.end(), v.row.id) != rep.memory_over.end())
        over.push_back(fmt::format("{} {:.1f} of {:.1f} GiB", v.row.id, *v.memory_peak_gib, *v.memory_capacity_gib));
    fmt::print("memory: {} of {} runs at their published batch fit as the memory model prices them{}{}\n", rep.memory_rows - rep.memory_over.size(),
               rep.memory_rows, over.empty() ? "" : "; priced over their card: ", strings::join(over, ", "));
  }
  if (rep.band_rows == 0)
    fmt::print("in-sample spread: none (no training or batch-inference row scored)");
  else
    fmt::print("in-sample spread (the 10th to 90th percentile of predicted/measured, as conformal order statistics): {:.2f}x to {:.2f}x over {} training and batch-inference rows",
               std::exp(rep.log_err_p10), std::exp(rep.log_err_p90), rep.band_rows);
  if (rep.serving_band_rows > 0)
    fmt::print("; {:.2f}x to {:.2f}x over {} LLM serving rows", std::exp(rep.serving_log_err_p10), std::exp(rep.serving_log_err_p90),
               rep.serving_band_rows);
  // The band printed with every prediction: the held-out spread (data/prediction-band.toml, --write-band).
  fmt::print("\nband printed with each prediction (held-out errors, an interval that holds 80% of rows never seen: {}): {:.2f}x to {:.2f}x; serving {:.2f}x to {:.2f}x\n",
             perf::model_band().source, std::exp(perf::model_band().log_err_p10), std::exp(perf::model_band().log_err_p90),
             std::exp(perf::serving_band().log_err_p10), std::exp(perf::serving_band().log_err_p90));
}

int run_validate(const ValidateArgs& a) {
  const auto facts = install_facts(a.facts);  // first: everything after prices with them
  catalog::Catalog cat = catalog::Catalog::builtin();
  for (const auto& f : a.catalogs) cat.add_file(f);
  const std::vector<std::string> paths = data_paths(a.data);
  // Every input is noted before the outputs are checked: no output may land on one.
  for (const auto& path : paths) files::note_input(path);
  if (!a.constants.empty()) files::note_input(a.constants);
  note_measured_inputs(a.measured);
  if (!a.write_band.empty()) files::check_output(a.write_band, perf::band_output("--write-band", a.force));
  if (!a.fit.empty()) files::check_output(a.fit, perf::constants_output("--fit", a.force));
  std::vector<perf::PublishedRow> rows;
  for (const auto& path : paths) {
    auto more = perf::read_published(files::read_all(path, "--data"), path);
    rows.insert(rows.end(), more.begin(), more.end());
  }
  // Your own runs, as rows beside the published ones (a tool's output or a typed figure).
  if (!a.measured.empty()) {
    auto mine = measured_rows(cat, a.measured);
    rows.insert(rows.end(), mine.begin(), mine.end());
  }
  if (rows.empty()) throw InputError("validate: no rows (give --data FILE|FOLDER or --measured FILE|SPEC)");
  // A constants file (from --fit) replaces the built-in constants for this run.
  std::optional<perf::ScopedConstants> scope;
  if (!a.constants.empty()) scope.emplace(perf::parse_constants(files::read_all(a.constants, "--constants"), a.constants));
  const perf::ValidationReport rep = perf::validate(cat, rows);
  std::size_t scored = 0;
  for (const auto& v : rep.rows) scored += v.ape.has_value();
  std::vector<perf::SourceSummary> held;
  std::vector<perf::HeldOutSource> folds;
  if (a.held_out || !a.write_band.empty()) {
    folds = perf::leave_one_source_out(cat, rows);
    for (const auto& f : folds) held.push_back(f.summary);
  }
  if (!a.write_band.empty()) {
    // The band from the held-out errors: each row as predicted by constants fitted without its source.
    const perf::ValidationReport held_rep = perf::held_out_report(folds);
    if (held_rep.band_rows == 0)
      throw InputError(fmt::format("--write-band {}: no training or inference row was scored, so there is no band to write", a.write_band));
    files::write_output(a.write_band, perf::band_output("--write-band", a.force), perf::band_toml(held_rep, strings::join(a.data, " ")));
  }
  if (!a.fit.empty()) {
    const perf::FitResult fit = perf::fit_constants(cat, rows);
    if (fit.rows == 0) throw InputError(fmt::format("--fit {}: none of the rows is a priced training or inference measurement; nothing to fit", a.fit));
    files::write_output(a.fit, perf::constants_output("--fit", a.force), perf::constants_toml(fit.constants));
    fmt::print(stderr, "fitted on {} rows: mean |log error| {:.4f}; written to {}\n", fit.rows, fit.objective, a.fit);
  }
  std::optional<perf::CalibrateOneReport> one;
  if (a.calibrate_one) {
    workload::Workloads workloads;
    one = perf::calibrate_one(cat, rows, workloads);
  }
  if (a.out != Output::table) {
    print_report_structured(rep, scored, a.held_out ? &held : nullptr, one ? &*one : nullptr, a.out);
    return 0;
  }
  print_rows(rep);
  print_sources(rep.sources);
  if (a.held_out) print_held_out(held, folds);
  if (one) print_calibrate_one(*one);
  print_totals(rep, scored);
  return 0;
}

}  // namespace

Runner add_validate_command(CLI::App& app) {
  auto a = std::make_shared<ValidateArgs>();
  auto* sub = app.add_subcommand("validate", "Compare predictions with published measurements (CSV)");
  add_facts_option(sub, a->facts);
  sub->add_option("--data", a->data, "CSV files in the format of data/validation/*.csv, or folders of them (repeatable)");
  sub->add_option("--measured", a->measured,
                  "Your own runs as rows: a llama-bench or nccl-tests output, a vLLM serving-benchmark or trtllm-bench output as "
                  "'file=OUT;gpu=ID[;workload=ID]', or a --measured spec (repeatable); predicted and scored like the published ones");
  sub->add_option("--catalog", a->catalogs, "Add devices from a TOML file (repeatable)");
  add_output_option(sub, a->out);  // JSON: rows, per-source summaries (schema 2)
  sub->add_flag("--held-out", a->held_out,
                "Leave-one-source-out: predict each file with the constants refitted on the others (and its figures withheld)");
  sub->add_flag("--calibrate-one", a->calibrate_one,
                "Take each row of a source, workload and configuration on several cards as your own measurement, calibrate on it "
                "and predict the other cards; report those errors beside the uncalibrated and flat-scaled ones");
  sub->add_option("--constants", a->constants, "Price with these fitted constants (a --fit file) instead of the built-in ones");
  sub->add_option("--fit", a->fit, "Fit the model's constants to these files and write them as TOML to FILE");
  sub->add_option("--write-band", a->write_band, "Write the error band (the leave-one-source-out errors' 10th to 90th percentile, as split-conformal order statistics: it holds 80% of unseen rows) as TOML to FILE");
  sub->add_flag("--force", a->force, "Replace an output file that gpuvs did not write (or that has other hard links)");
  return [a] { return run_validate(*a); };
}

}  // namespace gpuvs::cli
