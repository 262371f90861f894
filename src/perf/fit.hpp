// SPDX-License-Identifier: Apache-2.0
// Fitting the model's few constants (perf/constants.hpp) to published rows, and the honest check of that
// fit: leave-one-source-out, where each source file is predicted by constants fitted on the others only
// (and without the achievable figures copied from it).
#pragma once
#include <set>
#include <string>
#include <vector>

#include "catalog/catalog.hpp"
#include "perf/constants.hpp"
#include "perf/validation.hpp"

namespace gpuvs::perf {

struct FitResult {
  FittedConstants constants;
  double objective = 0;      // mean |log(predicted / measured)| over the rows fitted, plus the prior pull
  int rows = 0;              // rows that entered the fit (priced train and infer rows with a value)
  int serving_rows = 0;      // LLM serving rows the decode-attention and ggml constants were fitted on
  int transfer_pairs = 0;    // ordered pairs of rows (one configuration, two cards) the transfer share was fitted on
  int evaluations = 0;
  bool classes_fitted[2] = {false, false};  // a class without rows borrows the other's fractions (the prior if neither has rows)
};

/// Fits the per-class GEMM and convolution fractions, the bytes an SM keeps streaming per cycle and the clock
/// headroom (perf/constants.hpp) by coordinate descent in log space from the priors (the first on a coarse grid), minimising the mean |log error| of the priced training and inference rows plus a weak pull
/// (0.01 x the squared log distance) towards the priors, so a constant the rows cannot pin down stays there. Microbenchmark rows do
/// not depend on these constants and are left out. LLM serving rows (perf/serving.hpp) fit two constants of
/// their own, the decode-attention kernels' and ggml's kernels' bytes per SM-cycle, afterwards, one at a time and
/// alone (fitting the others to them pulled the GEMM fraction below what training reaches and made every
/// training source worse held out).
/// `held_out` files' figures are withheld from the model's inputs while fitting.
FitResult fit_constants(const catalog::Catalog& cat, const std::vector<PublishedRow>& rows,
                        const std::set<std::string>& held_out = {});
/// The same, the rows' workloads taken from `workloads` (validate's overload).
FitResult fit_constants(const catalog::Catalog& cat, const std::vector<PublishedRow>& rows, const std::set<std::string>& held_out,
                        workload::Workloads& workloads);

struct HeldOutSource {
  SourceSummary summary;            // the source predicted by constants fitted without it
  FitResult fit;                    // those constants
  std::vector<ValidatedRow> rows;   // its rows as those constants predicted them
};

/// Leave-one-source-out over the files the rows come from.
std::vector<HeldOutSource> leave_one_source_out(const catalog::Catalog& cat, const std::vector<PublishedRow>& rows);
/// Every fold's rows in one report: the errors on data the constants never saw, whose spread is the band
/// (`validate --write-band`) and whose share inside it is the promise the band makes.
ValidationReport held_out_report(const std::vector<HeldOutSource>& folds);

}  // namespace gpuvs::perf
