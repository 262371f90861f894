// SPDX-License-Identifier: Apache-2.0
#include "cli/calibration_file.hpp"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "bench/results_json.hpp"
#include "core/error.hpp"
#include "core/files.hpp"
#include "core/json_input.hpp"
#include "core/strings.hpp"

namespace gpuvs::cli {

perf::Calibration load_calibration(const std::string& path, const catalog::Catalog& cat) {
  const std::string text = files::read_all(path, "--calibration");
  const nlohmann::json j = parse_json(text, path);
  const auto results = bench::measurements_from_json(j, path);  // first: it checks that the record is an object
  // j.value("quick", false) threw nlohmann's type_error at a number (found by fuzz_bench_record's tree mutator).
  if (j.contains("quick") && !j["quick"].is_boolean()) throw InputError(fmt::format("{}: 'quick' must be true or false", path));
  auto cal = calibration_from(results, j.contains("quick") && j["quick"].get<bool>(), cat, path);
  if (!cal)
    throw InputError(fmt::format("{}: no GPU figures from a catalog device (run gpuvs bench --save on a GPU gpuvs knows)", path));
  return *cal;
}

std::optional<perf::Calibration> calibration_from(const std::vector<bench::Measurement>& results, bool quick,
                                                  const catalog::Catalog& cat, const std::string& source) {
  // The device string is "cuda:N NAME (catalog-id)"; all GPU figures of one record come from one device.
  std::string gpu_id;
  std::vector<perf::MeasuredFigure> figures;
  for (const auto& m : results) {
    if (m.key.rfind("cuda.", 0) != 0 || m.status != "ok") continue;
    const auto open = m.device.rfind('('), close = m.device.rfind(')');
    if (open == std::string::npos || close == std::string::npos || close < open) continue;
    const std::string id = m.device.substr(open + 1, close - open - 1);
    if (id.empty()) throw InputError(fmt::format("{}: result '{}' names no catalog id in its device '{}'", source, strings::printable(m.key), strings::printable(m.device)));
    if (gpu_id.empty()) gpu_id = id;
    if (id != gpu_id)
      throw InputError(fmt::format("{}: GPU figures from two devices ({} and {}); calibrate from one", source, gpu_id, id));
    figures.push_back({m.key, m.unit, m.median});
  }
  if (figures.empty()) return std::nullopt;
  const double gemm_n = quick ? 4096 : 8192;                         // the sizes the CUDA benchmarks use
  const double copy_bytes = 2.0 * (quick ? 256 : 1024) * 1048576.0;  // read + write of one array
  const catalog::Gpu* gpu = nullptr;
  try {
    gpu = &cat.find(gpu_id);
  } catch (const InputError& e) {  // the catalog's "unknown GPU 'x'", said of this file
    throw InputError(fmt::format("{}: {}", source, e.what()));
  }
  return perf::calibrate(*gpu, figures, gemm_n, copy_bytes, source);
}

nlohmann::json calibration_classes_json(const perf::Calibration& cal, bool applied) {
  nlohmann::json classes = nlohmann::json::array();
  for (const auto& c : cal.classes)
    classes.push_back({{"class", c.op_class}, {"benchmark", c.key}, {"unit", c.unit}, {"measured", c.measured}, {"predicted", c.predicted},
                       {"measured_over_predicted", c.ratio}, {"applied", c.applied && applied}, {"note", c.note}});
  return classes;
}

}  // namespace gpuvs::cli
