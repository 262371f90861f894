// Validation against published measurements (rows in the format of shared/data/published/*.csv): predict
// each row, report the error, and the same for cross-GPU ratios. Rows that cannot be predicted are kept
// with the reason.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "catalog/catalog.hpp"
#include "perf/efficiency.hpp"

namespace gpuvs::perf {

struct PublishedRow {
  std::string id, gpu, workload, mode, precision, options, unit, source;
  int n_gpus = 1;
  std::int64_t batch = 0;
  std::optional<double> value;
  int line = 0;
};

struct ValidatedRow {
  PublishedRow row;
  std::string status;  // "ok", or "unsupported"
  std::string reason;
  double predicted = 0;
  std::string predicted_unit;
  std::optional<double> ape;  // |predicted - value| / value
};

struct RatioError {
  std::string a, b;  // row ids
  double measured = 0, predicted = 0, ape = 0;
};

struct ValidationReport {
  std::vector<ValidatedRow> rows;
  std::vector<RatioError> ratios;
  double median_ape = 0, mean_ape = 0;
  double ratio_median_ape = 0, ratio_mean_ape = 0;
  /// log(predicted / measured) quantiles: the band every prediction carries.
  double log_err_p10 = 0, log_err_p90 = 0;
};

/// Parses the CSV; InputError "FILE:LINE: ..." for malformed rows. Extra columns are ignored.
std::vector<PublishedRow> read_published(const std::string& text, const std::string& where);
ValidationReport validate(const catalog::Catalog& cat, const std::vector<PublishedRow>& rows);

}  // namespace gpuvs::perf
