// SPDX-License-Identifier: Apache-2.0
#include "perf/compare.hpp"


#include <fmt/format.h>

#include <cmath>

#include "core/error.hpp"
#include "core/units.hpp"
#include "perf/request_error.hpp"
#include "perf/system_facts.hpp"
#include "workload/workload.hpp"

namespace gpuvs::perf {

std::int64_t largest_batch_that_fits(const catalog::Catalog& cat, PredictRequest req, std::int64_t limit) {
  return largest_batch_that_fits(cat, workload::Workload(req.workload, req.options), req, limit);
}

std::int64_t largest_batch_that_fits(const catalog::Catalog& cat, const workload::Workload& w, PredictRequest req, std::int64_t limit) {
  auto fits = [&](std::int64_t b) {
    req.batch = b;
    return predict(cat, w, req).memory.fits;
  };
  // A model whose batch is fixed (an ONNX file without a dynamic batch axis) has that batch or none.
  if (const std::int64_t fixed = w.network().fixed_batch; fixed > 0) return fits(fixed) ? fixed : 0;
  if (!fits(1)) return 0;
  std::int64_t lo = 1, hi = 2;
  while (hi <= limit && fits(hi)) {
    lo = hi;
    hi *= 2;
  }
  if (hi > limit) return lo;
  while (hi - lo > 1) {  // lo fits, hi does not
    const std::int64_t mid = lo + (hi - lo) / 2;
    (fits(mid) ? lo : hi) = mid;
  }
  return lo;
}

Comparison compare(const catalog::Catalog& cat, const std::vector<std::string>& gpus, const std::string& workload,
                   std::optional<Precision> precision, std::int64_t batch, bool training, const GpuHourPrices& prices,
                   const std::map<std::string, std::string>& options) {
  if (gpus.size() < 2) throw InputError("compare needs at least two GPUs");
  for (const auto& id : gpus) cat.find(id);  // an unknown card is named before the workload is read
  return compare(cat, gpus, workload::Workload(workload, options), precision, batch, training, prices, options);
}

Comparison compare(const catalog::Catalog& cat, const std::vector<std::string>& gpus, const workload::Workload& w, std::optional<Precision> precision,
                   std::int64_t batch, bool training, const GpuHourPrices& prices, const std::map<std::string, std::string>& options,
                   const StackRatios* stack, const Calibration* calibration) {
  if (gpus.size() < 2) throw InputError("compare needs at least two GPUs");
  const std::string& workload = w.name();
  Comparison c;
  c.workload = workload;
  c.precision = precision;
  c.training = training;
  for (const auto& id : gpus) {
    CompareEntry e;
    e.gpu = &cat.find(id);
    PredictRequest req;
    req.workload = workload;
    req.gpu = e.gpu->id;
    req.batch = batch;
    if (precision) req.precision = precision_run(*precision, *e.gpu, &e.precision_note).value_or(*precision);  // neither: predict says why
    req.training = training;
    req.options = options;
    req.stack = stack;
    req.calibration = calibration;
    e.single = predict(cat, w, req);
    if (stack) {
      PredictRequest plain = req;
      plain.stack = nullptr;
      e.throughput_without_stack = e.single.stack_applied ? predict(cat, w, plain).throughput : e.single.throughput;
    }
    c.batch = e.single.batch;
    const double units_per_hour = e.single.throughput * 3600.0;
    e.hours_per_million = 1e6 / units_per_hour;
    if (const auto rent = prices.rent(*e.gpu)) e.usd_per_million = e.hours_per_million * *rent;
    if (const auto owned = prices.own(*e.gpu)) e.owned_usd_per_million = e.hours_per_million * *owned;
    const std::int64_t limit = e.single.unit == "tokens/s" ? 1024 : 65536;
    e.max_batch = largest_batch_that_fits(cat, w, req, limit);
    e.max_batch_capped = e.max_batch >= limit;
    for (Precision p : {Precision::fp32, Precision::tf32, Precision::amp_fp16, Precision::amp_bf16, Precision::amp_fp8}) {
      try {
        plan_precision(p, *e.gpu);
        e.precisions.emplace_back(precision_name(p));
      } catch (const InputError&) {
      }
    }
    if (training) {
      for (int n = 2; n <= system_facts().gpus_per_server; n *= 2) {  // within one server
        req.gpus = n;
        const Prediction m = predict(cat, w, req);
        e.scaling.emplace_back(n, m.single_gpu_step_s / m.step_s);
        if (n == 2) e.link_2gpu = m.link.description;
      }
    }
    c.entries.push_back(std::move(e));
  }
  for (auto& e : c.entries) e.ratio = e.single.throughput / c.entries.front().single.throughput;

  if (c.entries.size() == 2) {
    // The seed document's claims, judged by the numbers above for this workload.
    const CompareEntry& a = c.entries[0];
    const CompareEntry& b = c.entries[1];
    const bool a_geforce = a.gpu->segment == "geforce", b_geforce = b.gpu->segment == "geforce";
    const CompareEntry& dc = a_geforce && !b_geforce ? b : a;
    const CompareEntry& gf = a_geforce && !b_geforce ? a : b;
    const double speed = dc.single.throughput / gf.single.throughput;
    const double launch_share = dc.single.detail.launch_s / dc.single.detail.step_s;
    c.claims.push_back(
        {fmt::format("the {} trains {} much faster than the {}", dc.gpu->name, workload, gf.gpu->name),
         speed > 1.5 ? "confirmed" : speed > 1.1 ? "partly" : "refuted",
         fmt::format("predicted {:.2f}x at batch {} ({} vs {} {}); {:.0f}% of the {}'s step is kernel launches, which "
                     "no amount of FLOPS shortens",
                     speed, c.batch, units::format_si(dc.single.throughput), units::format_si(gf.single.throughput),
                     gf.single.unit, 100 * launch_share, dc.gpu->name)});
    const double need = gf.single.memory.peak_bytes / units::kGiB;
    c.claims.push_back(
        {fmt::format("{} needs the {}'s {:g} GiB", workload, dc.gpu->name, dc.gpu->memory_gb),
         need < gf.single.memory.capacity_bytes / units::kGiB ? "refuted" : "confirmed",
         fmt::format("it needs {:.2f} GiB; the {} holds {:.1f} GiB usable, up to batch {} per card", need, gf.gpu->name,
                     gf.single.memory.capacity_bytes / units::kGiB, gf.max_batch)});
    if (gf.gpu->fp16.present() && gf.gpu->fp16_fp32acc.present())
      c.claims.push_back(
          {fmt::format("the {}'s {:g} TFLOPS FP16 tensor peak is what training gets", gf.gpu->name, *gf.gpu->fp16.dense),
           *gf.gpu->fp16.dense > *gf.gpu->fp16_fp32acc.dense ? "refuted" : "confirmed",
           fmt::format("training accumulates in FP32: {:g} TFLOPS on the {} against {:g} on the {}",
                       *gf.gpu->fp16_fp32acc.dense, gf.gpu->name,
                       dc.gpu->fp16_fp32acc.dense ? *dc.gpu->fp16_fp32acc.dense : 0.0, dc.gpu->name)});
    if (training && !gf.scaling.empty() && !dc.scaling.empty())
      c.claims.push_back(
          {fmt::format("several {}s scale like several {}s", gf.gpu->name, dc.gpu->name),
           std::fabs(gf.scaling.back().second - dc.scaling.back().second) < 0.05 ? "confirmed" : "refuted",
           fmt::format("scaling efficiency at {} GPUs: {:.0f}% ({}) vs {:.0f}% ({}); the {} has {}", gf.scaling.back().first, 100 * gf.scaling.back().second,
                       gf.gpu->name, 100 * dc.scaling.back().second, dc.gpu->name, gf.gpu->name,
                       gf.gpu->p2p && gf.gpu->has_nvlink() ? "an NVLink bridge for two cards" : "no peer-to-peer")});
    c.claims.push_back(
        {fmt::format("the {} is the safer card for long or shared runs", dc.gpu->name),
         dc.gpu->ecc == "yes" && gf.gpu->ecc != "yes" ? "confirmed" : "partly",
         fmt::format("ECC {} vs {}; MIG {} vs {}", dc.gpu->ecc, gf.gpu->ecc,
                     dc.gpu->mig_max > 0 ? fmt::format("up to {} instances", dc.gpu->mig_max) : "none",
                     gf.gpu->mig_max > 0 ? fmt::format("up to {} instances", gf.gpu->mig_max) : "none")});
  }
  return c;
}

std::vector<ServingCompareEntry> compare_serving(const catalog::Catalog& cat, const std::vector<std::string>& gpus,
                                                 const ServingRequest& base, const GpuHourPrices& prices) {
  for (const auto& id : gpus) cat.find(id);  // an unknown card is named before the workload is read
  return compare_serving(cat, gpus, workload::Workload(base.workload, base.options), base, prices);
}

std::vector<ServingCompareEntry> compare_serving(const catalog::Catalog& cat, const std::vector<std::string>& gpus,
                                                 const workload::Workload& w, const ServingRequest& base, const GpuHourPrices& prices,
                                                 const std::optional<std::string>& named_precision) {
  std::vector<ServingCompareEntry> out;
  for (const auto& id : gpus) {
    ServingCompareEntry e;
    e.gpu = &cat.find(id);
    ServingRequest r = base;
    r.gpu = e.gpu->id;
    if (named_precision)  // a card that runs neither the policy nor its fallback keeps base.format: the model says why
      r.format = serving_format_on(*e.gpu, *named_precision, &e.format_note).value_or(base.format);
    try {
      e.prediction = predict_serving(cat, w, r);
    } catch (const RequestError&) {
      throw;  // a request no card could serve: an option's value, an unknown name, weights the model does not hold
    } catch (const InputError& err) {
      // What the card cannot do (a format it lacks, a model that leaves no room) is a finding, not a failure.
      e.why = err.what();
    }
    if (e.prediction && !e.prediction->quantized_from.empty()) e.format_note.clear();  // a checkpoint serves its own weights
    if (e.prediction) {
      const double gpu_hours_per_million = 1e6 / (e.prediction->throughput * 3600.0) * e.prediction->gpus;
      if (const auto rent = prices.rent(*e.gpu)) e.usd_per_million = gpu_hours_per_million * *rent;
      if (const auto owned = prices.own(*e.gpu)) e.owned_usd_per_million = gpu_hours_per_million * *owned;
    }
    out.push_back(std::move(e));
  }
  // Relative to the first card that serves it: a first card that cannot gave every other a ratio of 0.00x.
  double first = 0;
  for (const auto& e : out)
    if (e.prediction && first == 0) first = e.prediction->throughput;
  for (auto& e : out)
    if (e.prediction && first > 0) e.ratio = e.prediction->throughput / first;
  return out;
}

}  // namespace gpuvs::perf
