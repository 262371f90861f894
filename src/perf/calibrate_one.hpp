// SPDX-License-Identifier: Apache-2.0
// Calibration judged the way it will be used (issue 35, `gpuvs validate --calibrate-one`): for every group of
// published rows of one source, workload and configuration on two or more GPUs, each row in turn is taken as the
// user's own measurement on the card they have; the stack is calibrated from it (perf/stack_calibration.hpp:
// the class its figure is most sensitive to) and the group's other cards are predicted with that calibration.
// Each transferred prediction is scored beside two others for the same row: the model's own (uncalibrated) and
// a flat transfer (the measured/predicted factor of the calibrating row times the model's prediction: the
// cross-GPU ratio error), so a calibration that only rescales shows up as no better than flat.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "catalog/catalog.hpp"
#include "perf/validation.hpp"
#include "workload/workload.hpp"

namespace gpuvs::perf {

struct TransferPair {
  std::string from, to;          // row ids: calibrated on `from`, predicted `to`
  std::string file, op_class;    // the class the calibrating figure fixed ("matrix", "memory", "fixed-cost"; "flat" for a
                                 // microbenchmark figure, which is one kernel and carries as measured/predicted)
  double ratio = 1;              // that class's ratio
  double measured = 0;           // `to`'s published value
  double uncalibrated = 0, flat = 0, transferred = 0;  // `to` predicted three ways (its unit)
  double uncalibrated_ape = 0, flat_ape = 0, transferred_ape = 0;
  double band_low = 0, band_high = 0;  // the band gpuvs prints with the transferred prediction (the row's own band's
                                       // factors: serving's for a serving row, the model's otherwise)
  bool in_band = false;                // the published value lies inside it
  std::string note;              // set when the calibrating figure was out of the model's reach (its step's note)
};

struct TransferSummary {
  std::string file;  // "all" for the total
  int groups = 0, pairs = 0;
  double uncalibrated_median = 0, flat_median = 0, transferred_median = 0;  // median absolute errors over the pairs
  int better = 0, worse = 0;  // pairs whose transferred error is below / above the flat one (by more than 0.1 point)
  double in_band = 0;         // share of the transferred predictions whose published value lies inside their band
  double spread_low = 0, spread_high = 0;  // 10th and 90th percentiles of measured / transferred (as the band reads)
};

struct CalibrateOneReport {
  std::vector<TransferPair> pairs;
  std::vector<TransferSummary> sources;  // files with pairs, in the order they came
  TransferSummary all;
};

/// Every ordered pair of scored rows (status ok, a published value) of one file, workload, mode, precision, options,
/// GPU count and `per` on different GPUs, calibrated on the first and predicted on the second. `held_out` is passed
/// to the pricing of every row, as for validate.
CalibrateOneReport calibrate_one(const catalog::Catalog& cat, const std::vector<PublishedRow>& rows, workload::Workloads& workloads,
                                 const std::set<std::string>& held_out = {});

struct ErrorSlope {
  double slope = 0;  // least-squares slope of the second row's log error on the first's, through the origin
  int pairs = 0;
};

/// Over the same ordered pairs as calibrate_one (scored rows of one configuration on different GPUs), the share of one
/// card's model error (log predicted/measured) another card shares: the fitted transfer share a calibration carries
/// (perf/constants.hpp transfer_share). Nothing when no pair has an error to regress on.
std::optional<ErrorSlope> error_slope(const std::vector<ValidatedRow>& rows);

}  // namespace gpuvs::perf
