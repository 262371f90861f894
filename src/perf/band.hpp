// SPDX-License-Identifier: Apache-2.0
// The band every prediction carries: the 10th-90th percentile spread of the model's own errors,
// log(predicted / measured), on its validation data with each source predicted by constants fitted without it
// (leave-one-source-out), so that it holds on data the model never saw, not only on the rows it was fitted to. The
// percentiles are split-conformal order statistics (core/stats.hpp conformal_interval): at least 80% of a new row
// drawn like these falls inside. Stored in data/prediction-band.toml (compiled in) by
// `gpuvs validate --write-band`; a test recomputes it so it cannot go stale.
#pragma once
#include <string>

#include "core/files.hpp"
#include "perf/validation.hpp"

namespace gpuvs::perf {

struct Band {
  double log_err_p10 = 0, log_err_p90 = 0;
  int rows = 0;
  std::string source;
  /// The range the measured value is expected in for a prediction `value`.
  double low(double value) const;
  double high(double value) const;
};

/// The compiled-in band of training and batch-inference predictions.
const Band& model_band();
/// The compiled-in band of LLM serving predictions (perf/serving.hpp), from the serving rows alone.
const Band& serving_band();
/// Parses band TOML (`prefix` "" for the model's band, "serving_" for serving's); InputError naming `where`
/// when malformed.
Band parse_band(const std::string& text, const std::string& where, const std::string& prefix = "");
/// TOML text for a validation report.
std::string band_toml(const ValidationReport& rep, const std::string& source);
/// The output policy's view of a band file named by `flag`: one band_toml wrote is replaced; anything else needs
/// `force`.
files::OutputSpec band_output(const std::string& flag, bool force);

}  // namespace gpuvs::perf
