// SPDX-License-Identifier: Apache-2.0
// Side-by-side comparison of GPUs on one workload: speed and ratio, cost per million samples (or tokens),
// memory fit and the largest batch that fits, precisions, interconnect and scaling, ECC, MIG, and for the
// seed document's question the claims the numbers confirm or refute.
#pragma once
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "catalog/catalog.hpp"
#include "perf/predict.hpp"
#include "perf/serving.hpp"

namespace gpuvs::perf {

struct CompareEntry {
  const catalog::Gpu* gpu = nullptr;
  Prediction single;
  double ratio = 1;  // throughput relative to the first GPU
  std::optional<double> usd_per_million;  // rented GPU-hour x hours per million units (GpuHourPrices)
  std::optional<double> owned_usd_per_million;  // owned GPU-hour x hours per million units (GpuHourPrices)
  double hours_per_million = 0;
  std::int64_t max_batch = 0;             // largest batch per GPU that fits (0: not even 1)
  bool max_batch_capped = false;          // the search stopped at its limit: at least max_batch
  std::vector<std::string> precisions;    // those the card runs
  std::vector<std::pair<int, double>> scaling;  // (GPUs, scaling efficiency)
  std::string link_2gpu;
  double throughput_without_stack = 0;  // with a measured stack given: this card's throughput without it (else 0)
  std::string precision_note;  // the named precision is not on this card: what it runs instead (precision_run)
};

/// What one GPU-hour of a card costs, rented (a cloud quote) and owned (its purchase spread over its
/// service life at the assumed utilization, plus its power); nullopt where no price is known. The rule and
/// its figures are the advisor's (advise::Assumptions::hour_prices), so compare, advise and evaluate price
/// a card the same way under the same assumptions.
struct GpuHourPrices {
  std::function<std::optional<double>(const catalog::Gpu&)> rent, own;
};

struct Claim {
  std::string claim, verdict, evidence;  // verdict: confirmed | refuted | partly
};

struct Comparison {
  std::string workload;
  std::optional<Precision> precision;  // as named (a card without it runs precision_run's, said in its entry); none: each
                                       // card's default_precision (its entry's plan says which)
  std::int64_t batch = 0;
  bool training = true;
  std::vector<CompareEntry> entries;
  std::vector<Claim> claims;  // filled for two GPUs
};

Comparison compare(const catalog::Catalog& cat, const std::vector<std::string>& gpus, const std::string& workload,
                   std::optional<Precision> precision, std::int64_t batch, bool training, const GpuHourPrices& prices,
                   const std::map<std::string, std::string>& options = {});
/// The same with the workload resolved by the caller from w.name() under `options`. A card without the named precision
/// runs the nearest it has (precision_run, said in its entry), as predict, advise and evaluate price it; one that runs
/// neither is an InputError naming what it lacks.
/// `stack`: a measured stack's ratios (perf/stack.hpp), applied to every card where its framework and precision match.
/// `calibration`: a card's benchmarks (gpuvs bench --save), applied to that card's entry as predict applies them.
Comparison compare(const catalog::Catalog& cat, const std::vector<std::string>& gpus, const workload::Workload& w, std::optional<Precision> precision,
                   std::int64_t batch, bool training, const GpuHourPrices& prices, const std::map<std::string, std::string>& options = {},
                   const StackRatios* stack = nullptr, const Calibration* calibration = nullptr);

/// LLM serving side by side: each GPU's prediction for the same request (perf/serving.hpp), its ratio to
/// the first, and what a million output tokens cost at that rate (cloud $/h, or owning the card).
struct ServingCompareEntry {
  const catalog::Gpu* gpu = nullptr;
  std::optional<ServingPrediction> prediction;  // empty when the card cannot serve it (`why`)
  std::string why;
  std::string format_note;  // the named precision's weights are not on this card: what it serves instead (serving_format_on)
  double ratio = 0;  // throughput relative to the first card that serves it
  std::optional<double> usd_per_million, owned_usd_per_million;
};
/// `base.gpu` is ignored; every GPU gets `base`'s request. A card that cannot run it (format, memory) gets
/// its reason instead; unknown GPUs, formats or engines are InputErrors.
std::vector<ServingCompareEntry> compare_serving(const catalog::Catalog& cat, const std::vector<std::string>& gpus,
                                                 const ServingRequest& base, const GpuHourPrices& prices);
/// The same with the workload resolved by the caller from base.workload under base.options.
/// `named_precision` (--precision as the user gave it, "" for none): each card serves in serving_format_on's weights for
/// it, the fallback said in its entry, as predict, advise and evaluate serve it; not given: base.format on every card.
std::vector<ServingCompareEntry> compare_serving(const catalog::Catalog& cat, const std::vector<std::string>& gpus,
                                                 const workload::Workload& w, const ServingRequest& base, const GpuHourPrices& prices,
                                                 const std::optional<std::string>& named_precision = std::nullopt);

/// The largest per-GPU batch (up to `limit`) whose predicted memory fits; 0 if batch 1 does not.
std::int64_t largest_batch_that_fits(const catalog::Catalog& cat, PredictRequest req, std::int64_t limit);
/// The same with the workload resolved by the caller (predict's overload).
std::int64_t largest_batch_that_fits(const catalog::Catalog& cat, const workload::Workload& w, PredictRequest req, std::int64_t limit);

}  // namespace gpuvs::perf
