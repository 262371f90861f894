// SPDX-License-Identifier: Apache-2.0
// gpuvs calibrate: what a team's own measurements say about its software stack, solved once and stored as a file
// (issue 35): `gpuvs calibrate llama-bench.json --save my-stack.toml`, then `--stack my-stack.toml` on predict and
// compare, on any machine, without the measurements.
#include <fmt/format.h>

#include <filesystem>

#include <nlohmann/json.hpp>
#include <optional>

#include "catalog/catalog.hpp"
#include "cli/assumption_options.hpp"
#include "cli/calibration_file.hpp"
#include "cli/commands.hpp"
#include "cli/measured_input.hpp"
#include "cli/output.hpp"
#include "core/error.hpp"
#include "core/files.hpp"
#include "core/strings.hpp"
#include "perf/stack_file.hpp"

namespace gpuvs::cli {

namespace {

struct CalibrateArgs {
  std::vector<std::string> measured;  // files or specs, as --measured takes them
  std::vector<std::string> catalogs;
  std::string save, facts, calibration;  // calibration: a gpuvs bench --save record of a measured card
  bool force = false;
  Output out = Output::table;
};

int run_calibrate(const CalibrateArgs& a) {
  const auto facts = install_facts(a.facts);  // first: everything after prices with them
  catalog::Catalog cat = catalog::Catalog::builtin();
  for (const auto& f : a.catalogs) cat.add_file(f);
  // Every input is noted before the output is checked: the stack file may not land on a measurement.
  note_measured_inputs(a.measured);
  // A measured card's benchmarks: its figures are solved as predict --calibration prices it, and the stack says so.
  std::optional<perf::Calibration> cal;
  if (!a.calibration.empty()) cal = load_calibration(a.calibration, cat);
  if (!a.save.empty()) files::check_output(a.save, perf::stack_output("--save", a.force));
  std::vector<std::string> read_as;
  const perf::StackCalibration s = calibrate_measured(cat, a.measured, &read_as, cal ? &*cal : nullptr);
  if (!a.save.empty()) {
    // A model file or checkpoint folder is stored as an absolute path: the stack applies from any directory, where a
    // relative path would name another model (a hub id of that name in the cache) or none.
    perf::StackCalibration stored = s;
    for (auto& run : stored.runs)
      if (names_local_model(run.workload)) {
        // Through any link (a lexical "link/.." would name another folder), without a trailing separator.
        std::filesystem::path resolved = std::filesystem::weakly_canonical(std::filesystem::absolute(run.workload));
        if (!resolved.has_filename()) resolved = resolved.parent_path();
        run.workload = resolved.string();
      }
    files::write_output(a.save, perf::stack_output("--save", a.force), perf::stack_toml(stored));
  }
  if (a.out != Output::table) {
    nlohmann::json j = stack_json(s);
    j["schema_version"] = 1;
    j["read_as"] = read_as;
    j["saved_to"] = a.save.empty() ? nlohmann::json(nullptr) : nlohmann::json(a.save);
    j["calibration"] = cal ? nlohmann::json{{"source", cal->source}, {"measured_on", cal->gpu_id}, {"applied", s.solved_with.has_value()}}
                           : nlohmann::json(nullptr);
    print_structured(j, a.out, {"steps"});
    return 0;
  }
  fmt::print("{} {}: matrix kernels x{:.3f}, memory-bound kernels x{:.3f}, fixed costs x{:.3f}\n", s.ratios.engine, s.ratios.format, s.ratios.gemm,
             s.ratios.memory, s.ratios.fixed);
  for (const auto& st : s.steps) fmt::print("  measured   {}\n", stack_step_line(st));
  for (const auto& o : s.open) fmt::print("  left open  {}\n", o);
  if (s.solved_with)
    fmt::print("  solved     {}: apply it with the same --calibration {}\n", stack_solved_with_line(s), strings::escape_control(s.solved_with->source));
  else if (cal)
    fmt::print("  not applied  the calibration from {}: it measured {}, which no figure ran on\n", strings::escape_control(cal->source), cal->gpu_id);
  for (const auto& r : read_as) fmt::print("  assumed    {}\n", r);
  if (!a.save.empty()) fmt::print("saved to {} (apply it with --stack {} on predict, compare, advise and evaluate)\n", strings::escape_control(a.save),
                                  strings::escape_control(a.save));
  return 0;
}

}  // namespace

Runner add_calibrate_command(CLI::App& app) {
  auto a = std::make_shared<CalibrateArgs>();
  auto* sub = app.add_subcommand("calibrate", "Solve what your own measurements say about your software stack, and store it (--save FILE)");
  add_facts_option(sub, a->facts);
  sub->add_option("measurements", a->measured,
                  "llama-bench outputs (md, csv, json, jsonl, sql) or specs as --measured takes them "
                  "('gpu=ID;workload=ID;mode=prefill|decode|train;precision=P;value=N UNIT', or 'file=OUT;gpu=ID' for a vLLM "
                  "serving-benchmark or trtllm-bench output)")
      ->required();
  sub->add_option("--save", a->save, "Write the calibration as TOML to FILE (apply it with --stack FILE on predict, compare, advise and evaluate)");
  sub->add_option("--calibration", a->calibration,
                  "A gpuvs bench --save record of a card the measurements ran on: solve the stack with that card corrected by it "
                  "(then apply the stack with the same --calibration)");
  sub->add_flag("--force", a->force, "Replace an output file that gpuvs did not write (or that has other hard links)");
  sub->add_option("--catalog", a->catalogs, "Add devices from a TOML file (repeatable)");
  add_output_option(sub, a->out);
  return [a] { return run_calibrate(*a); };
}

}  // namespace gpuvs::cli
