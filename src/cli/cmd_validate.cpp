// gpuvs validate: predictions against published measurements, row by row and as cross-GPU ratios.
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "catalog/catalog.hpp"
#include "cli/commands.hpp"
#include "core/files.hpp"
#include "perf/band.hpp"
#include "perf/validation.hpp"

namespace gpuvs::cli {

namespace {

struct ValidateArgs {
  std::string data, write_band;
  std::vector<std::string> catalogs;
  bool json = false;
};

int run_validate(const ValidateArgs& a) {
  catalog::Catalog cat = catalog::Catalog::builtin();
  for (const auto& f : a.catalogs) cat.add_file(f);
  const auto rows = perf::read_published(files::read_all(a.data, "--data"), a.data);
  const perf::ValidationReport rep = perf::validate(cat, rows);
  if (!a.write_band.empty()) files::write_atomic(a.write_band, perf::band_toml(rep, a.data));
  if (a.json) {
    nlohmann::json arr = nlohmann::json::array();
    for (const auto& v : rep.rows) {
      nlohmann::json j{{"id", v.row.id}, {"status", v.status}, {"unit", v.predicted_unit}};
      j["predicted"] = v.status == "ok" ? nlohmann::json(v.predicted) : nlohmann::json(nullptr);
      j["measured"] = v.row.value ? nlohmann::json(*v.row.value) : nlohmann::json(nullptr);
      j["reason"] = v.reason;
      arr.push_back(j);
    }
    fmt::print("{}\n", arr.dump(2));
    return 0;
  }
  fmt::print("{:<10} {:<16} {:<11} {:<9} {:>6} {:>12} {:>12} {:>8}  {}\n", "id", "gpu", "workload", "precision",
             "batch", "measured", "predicted", "error", "unit");
  for (const auto& v : rep.rows) {
    if (v.status != "ok") {
      fmt::print("{:<10} {:<16} {:<11} {:<9} {:>6}  not predicted: {}\n", v.row.id, v.row.gpu, v.row.workload,
                 v.row.precision, v.row.batch, v.reason);
      continue;
    }
    fmt::print("{:<10} {:<16} {:<11} {:<9} {:>6} {:>12} {:>12.1f} {:>8}  {}\n", v.row.id, v.row.gpu, v.row.workload,
               v.row.precision, v.row.batch, v.row.value ? fmt::format("{:g}", *v.row.value) : "-", v.predicted,
               v.ape ? fmt::format("{:+.1f}%", 100.0 * (v.predicted / *v.row.value - 1)) : "-", v.predicted_unit);
  }
  std::size_t scored = 0;
  for (const auto& v : rep.rows) scored += v.ape.has_value();
  fmt::print("\nthroughput: {} rows scored of {}; median absolute error {:.1f}%, mean {:.1f}%\n", scored,
             rep.rows.size(), 100 * rep.median_ape, 100 * rep.mean_ape);
  fmt::print("cross-GPU ratios: {} pairs; median absolute error {:.1f}%, mean {:.1f}%\n", rep.ratios.size(),
             100 * rep.ratio_median_ape, 100 * rep.ratio_mean_ape);
  fmt::print("band (10th-90th percentile of predicted/measured): {:.2f}x to {:.2f}x\n", std::exp(rep.log_err_p10),
             std::exp(rep.log_err_p90));
  return 0;
}

}  // namespace

Runner add_validate_command(CLI::App& app) {
  auto a = std::make_shared<ValidateArgs>();
  auto* sub = app.add_subcommand("validate", "Compare predictions with published measurements (CSV)");
  sub->add_option("--data", a->data, "CSV in the format of data/validation/*.csv")->required();
  sub->add_option("--catalog", a->catalogs, "Add devices from a TOML file (repeatable)");
  sub->add_flag("--json", a->json, "JSON: one {id, predicted, unit, status, reason} per row");
  sub->add_option("--write-band", a->write_band, "Write the error band (10th-90th percentile) as TOML to FILE");
  return [a] { return run_validate(*a); };
}

}  // namespace gpuvs::cli
