// SPDX-License-Identifier: Apache-2.0
#include "perf/band.hpp"

#include <fmt/format.h>

#include <cmath>
#include <toml++/toml.h>

#include "core/error.hpp"
#include "core/strings.hpp"
#include "core/toml_input.hpp"

namespace gpuvs::embedded {
extern const char* const kPredictionBand;
}

namespace gpuvs::perf {

double Band::low(double value) const { return value * std::exp(-log_err_p90); }
double Band::high(double value) const { return value * std::exp(-log_err_p10); }

Band parse_band(const std::string& text, const std::string& where, const std::string& prefix) {
  {
    const toml::table t = parse_toml(text, where);
    Band b;
    const auto p10 = t[prefix + "log_err_p10"].value<double>();
    const auto p90 = t[prefix + "log_err_p90"].value<double>();
    const auto rows = t[prefix + "rows"].value<std::int64_t>();
    if (!p10 || !p90 || !rows || *p10 > *p90)
      throw InputError(fmt::format("{}: needs {}log_err_p10 <= {}log_err_p90 and {}rows", where, prefix, prefix, prefix));
    b.log_err_p10 = *p10;
    b.log_err_p90 = *p90;
    b.rows = static_cast<int>(*rows);
    b.source = t["source"].value_or(std::string());
    return b;
  }
}

const Band& model_band() {
  static const Band b = parse_band(embedded::kPredictionBand, "built-in data/prediction-band.toml");
  return b;
}

const Band& serving_band() {
  static const Band b = parse_band(embedded::kPredictionBand, "built-in data/prediction-band.toml", "serving_");
  return b;
}

files::OutputSpec band_output(const std::string& flag, bool force) {
  return {flag, "band file", "# The spread of the performance model's own errors", force};  // band_toml's first line
}

std::string band_toml(const ValidationReport& rep, const std::string& source) {
  return fmt::format(
      "# The spread of the performance model's own errors, log(predicted / measured), on its validation data,\n"
      "# each source predicted by constants fitted without it (leave-one-source-out: a promise about data the\n"
      "# model never saw): training and batch-inference rows, and (serving_) LLM serving rows, each their own band.\n"
      "# p10 and p90 are split-conformal order statistics (the k-th smallest and largest, k = floor(0.1 (rows + 1))): at\n"
      "# least 80% of a new row drawn like these falls inside.\n"
      "# Written by `gpuvs validate --data {0} --write-band data/prediction-band.toml`; test_perf recomputes it.\n"
      "source = \"{0}\"\nrows = {1}\nlog_err_p10 = {2:.17g}\nlog_err_p90 = {3:.17g}\n"
      "serving_rows = {4}\nserving_log_err_p10 = {5:.17g}\nserving_log_err_p90 = {6:.17g}\n",
      source, rep.band_rows, rep.log_err_p10, rep.log_err_p90, rep.serving_band_rows, rep.serving_log_err_p10, rep.serving_log_err_p90);
}

}  // namespace gpuvs::perf
