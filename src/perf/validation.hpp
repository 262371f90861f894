// SPDX-License-Identifier: Apache-2.0
// Validation against published measurements (rows in schema v2 of data/validation/*.csv, one file per
// source): predict each row in the row's own unit and `per` (one GPU or the whole system), report the
// error, the same for cross-GPU ratios, and per source file. A row the model cannot price — an unknown
// workload, a mode or option it does not model (tp/pp, another framework, a memory format) — is kept as
// `unsupported` with the reason: an option is never silently ignored.
#pragma once
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "catalog/catalog.hpp"
#include "perf/efficiency.hpp"
#include "perf/stack.hpp"
#include "workload/workload.hpp"

namespace gpuvs::perf {

struct PublishedRow {
  std::string id, gpu, workload, mode, precision, options, unit, source;
  std::string per = "gpu";  // gpu: the value is per GPU; system: the total over n_gpus
  std::string file;         // the file the row came from (its stem): one source per file
  int n_gpus = 1;
  std::int64_t batch = 0;   // 0: not published, the tool chooses (and says what it chose)
  std::optional<double> value;
  int line = 0;
};

/// Option keys that only document a row's source (the published figure, the tool, the metric): they
/// change nothing in a prediction.
bool documentary_option(const std::string& key);

struct ValidatedRow {
  PublishedRow row;
  std::string status;  // "ok", or "unsupported"
  std::string reason;
  double predicted = 0;       // in the row's unit and per
  std::string predicted_unit;
  std::int64_t batch = 0;     // per GPU, as priced (the row's, or the one the tool chose)
  bool batch_chosen = false;  // the row gave none
  double band_low = 0, band_high = 0;  // the prediction's band, in the row's unit and per
  std::optional<double> ape;  // |predicted - value| / value
  bool serving = false;       // priced by the serving model (perf/serving.hpp)
  std::string engine, format;  // the software profile and format that priced it (a serving engine and weight format, or a
                               // training framework profile and precision); empty for microbenchmark rows
  /// A training or batch-inference row that published its batch ran, so it fit: the memory model's peak and the card's
  /// usable memory for it (GiB, 2^30 B). Unset for serving, microbenchmark and chosen-batch rows.
  std::optional<double> memory_peak_gib, memory_capacity_gib;
};

/// One source file's figures.
struct SourceSummary {
  std::string file;
  int rows = 0, scored = 0;   // scored: predicted and measured
  double coverage = 0;        // scored / rows
  double median_ape = 0;
  int ratio_pairs = 0;
  double ratio_median_ape = 0;
  double in_band = 0;         // fraction of scored rows whose measured value lies in the predicted band
};

/// Per row, the configuration it belongs to, for cross-GPU ratios and calibrate-one: its file, source, workload, mode,
/// precision, options, GPU count and per; and its batch where a card has several batches of the configuration (a
/// sweep pairs only at one batch; one row per card, as Lambda's largest-batch tables, pairs each card at its own).
std::vector<std::string> configuration_keys(const std::vector<PublishedRow>& rows);
/// The same over priced rows (their published rows).
std::vector<std::string> configuration_keys(const std::vector<ValidatedRow>& rows);

/// A cross-GPU ratio: two rows of one configuration (configuration_keys) on different cards.
struct RatioError {
  std::string a, b;  // row ids
  double measured = 0, predicted = 0, ape = 0;
};

struct ValidationReport {
  std::vector<ValidatedRow> rows;
  std::vector<RatioError> ratios;
  std::vector<SourceSummary> sources;  // in the order the files came
  double coverage = 0;                 // scored rows / rows
  double in_band = 0;                  // scored rows inside their band / scored rows
  double median_ape = 0, mean_ape = 0;
  double ratio_median_ape = 0, ratio_mean_ape = 0;
  /// log(predicted / measured) quantiles: the band every prediction carries.
  double log_err_p10 = 0, log_err_p90 = 0;                  // training and batch-inference rows
  double serving_log_err_p10 = 0, serving_log_err_p90 = 0;  // LLM serving rows (their own band)
  int band_rows = 0, serving_band_rows = 0;
  /// The memory model judged by what ran: rows with a peak and capacity, and the ids of those priced over their card.
  int memory_rows = 0;
  std::vector<std::string> memory_over;
};

/// A report over rows already predicted: the errors, the band's percentiles, the ratios and the per-source
/// summaries, as validate computes them. What the leave-one-source-out folds' rows, put together, make: the
/// errors of predictions on data their constants never saw.
ValidationReport report_of(std::vector<ValidatedRow> rows);

/// One published row priced: by its microbenchmark, the serving model or the graph, whichever the row is, with
/// `stack`'s ratios where it measured the row's software and format (perf/stack.hpp). A row the model cannot price
/// comes back `unsupported` with the reason.
ValidatedRow validate_row(const catalog::Catalog& cat, const PublishedRow& r, const std::set<std::string>& held_out, workload::Workloads& workloads,
                          const StackRatios* stack = nullptr);

/// Parses the CSV; InputError "FILE:LINE: ..." for malformed rows (a `per` other than gpu or system, a
/// negative batch or GPU count). Extra columns are ignored; an empty batch_per_gpu is 0 (the tool chooses).
std::vector<PublishedRow> read_published(const std::string& text, const std::string& where);
/// Predicts every row. `held_out` names source files whose figures the model must not use as inputs (the
/// achievable peaks copied from them), for leave-one-source-out checks.
ValidationReport validate(const catalog::Catalog& cat, const std::vector<PublishedRow>& rows,
                          const std::set<std::string>& held_out = {});
/// The same, each row's workload taken from `workloads` (resolved there on its first request): a caller that
/// validates the same rows many times (the fitter) resolves and builds each workload once.
ValidationReport validate(const catalog::Catalog& cat, const std::vector<PublishedRow>& rows, const std::set<std::string>& held_out,
                          workload::Workloads& workloads);

}  // namespace gpuvs::perf
