// SPDX-License-Identifier: Apache-2.0
#include "advise/advisor.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <exception>
#include <thread>
#include <cmath>
#include <map>
#include <set>
#include <optional>

#include "core/error.hpp"
#include "core/strings.hpp"
#include "core/units.hpp"
#include "models/networks.hpp"
#include "perf/memory.hpp"
#include "perf/parallel.hpp"
#include "perf/maturity.hpp"
#include "perf/predict.hpp"
#include "perf/serving.hpp"
#include "perf/serving_engine.hpp"
#include "perf/weight_format.hpp"
#include "perf/system_facts.hpp"
#include "workload/workload.hpp"

namespace gpuvs::advise {

namespace {

/// A card's fallback from the precision asked, said as predict says it: the default rule's where none was named.
std::string fallback_said(const Scenario& s, const std::string& note) {
  return note.empty() || s.precision_named ? note : fmt::format("the default rule: {}", perf::kDefaultPrecisionRule);
}

}  // namespace

bool is_precision_policy(const std::string& name) {
  try {
    (void)perf::parse_precision(name);
    return true;
  } catch (const InputError&) {
    return false;
  }
}

perf::ServingRequest serving_request(const Scenario& s, const workload::Workload& w, const std::string& gpu_id, const std::string& format, int tp) {
  perf::ServingRequest r;
  r.workload = w.name();  // the scenario's workload as resolved (validated_workload)
  r.gpu = gpu_id;
  r.gpus = tp;
  r.mode = "infer";
  r.stack = s.stack ? &*s.stack : nullptr;
  r.calibration = s.calibration ? &*s.calibration : nullptr;
  r.format = format;
  r.options = w.shape();  // gpt's shape keys: the decoder the scenario names
  r.options["tp"] = std::to_string(tp);
  if (!s.engine.empty()) r.options["framework"] = s.engine;
  if (!s.release.empty()) r.options["release"] = s.release;
  if (s.seq_len > 0) r.options["prompt_len"] = std::to_string(s.seq_len);
  if (s.gen_len > 0) r.options["gen_len"] = std::to_string(s.gen_len);
  return r;
}

namespace {

constexpr double kGiB = 1073741824.0;

std::optional<perf::Prediction> try_predict(const catalog::Catalog& cat, const workload::Workload& w, const perf::PredictRequest& req,
                                            std::string& err) {
  try {
    return perf::predict(cat, w, req);
  } catch (const InputError& e) {
    err = e.what();
    return std::nullopt;
  }
}


struct Costs {
  std::optional<double> rent_per_h, price, power_per_h, own_per_h;
};

Costs costs_for(const catalog::Gpu& gpu, const Assumptions& a, double utilization) {
  Costs c;
  c.rent_per_h = a.rent(gpu);
  c.price = a.price(gpu);
  c.power_per_h = a.power_per_hour(gpu);
  c.own_per_h = a.own_per_hour(gpu, utilization);
  return c;
}

/// Picks rent or buy for an option under the purchase mode and budget; records why not when neither can.
void choose_basis(Option& o, const Scenario& s, double budget_rent_amount, double budget_buy_amount) {
  struct Candidate {
    const char* basis;
    double cost;
  };
  std::vector<Candidate> c;
  bool over_budget = false;
  if (s.purchase != "buy" && o.rent_usd) {
    if (!s.budget_usd || budget_rent_amount <= *s.budget_usd) c.push_back({"rent", *o.rent_usd});
    else over_budget = true;
  }
  if (s.purchase != "rent" && o.buy_usd) {
    if (!s.budget_usd || budget_buy_amount <= *s.budget_usd) c.push_back({"buy", *o.buy_usd});
    else over_budget = true;
  }
  if (c.empty()) {
    o.cost_basis = "none";
    if (over_budget)
      o.why_not.push_back(fmt::format("over the ${:.0f} budget ({})", *s.budget_usd,
                                      o.buy_upfront_usd && s.purchase != "rent" ? fmt::format("buying costs ${:.0f} up front", *o.buy_upfront_usd)
                                                                                : fmt::format("renting costs ${:.0f}", o.rent_usd.value_or(0))));
    else if (s.budget_usd)
      o.why_not.push_back(fmt::format("no {} price in the catalog to check against the budget (--assume {}.{}=USD)",
                                      s.purchase == "buy" ? "purchase" : s.purchase == "rent" ? "rental" : "purchase or rental",
                                      s.purchase == "rent" ? "rent" : "price", o.gpu_id));
    return;
  }
  const auto best = std::min_element(c.begin(), c.end(), [](const Candidate& x, const Candidate& y) { return x.cost < y.cost; });
  o.cost_basis = best->basis;
  o.cost_usd = best->cost;
}

// ---- training and fine-tuning ----

/// The training batch a card holds (find_fit): the largest that fits, the recompute it needs, its prediction.
struct TrainingBatch {
  std::int64_t batch = 0;
  std::string recompute = "none";
  std::optional<perf::Prediction> p;
  std::string err;
};

/// The largest batch (from the workload's default down to 1) that fits, without recompute if possible.
TrainingBatch find_fit(const catalog::Catalog& cat, const workload::Workload& w, perf::PredictRequest req, bool transformer) {
  TrainingBatch best;
  for (const char* rc : {"none", "full"}) {
    if (std::string(rc) == "full" && !transformer) break;
    req.options["recompute"] = rc;
    req.batch = 0;
    std::string err;
    auto p = try_predict(cat, w, req, err);
    if (!p) {
      best.err = err;
      return best;  // an impossible request (precision, options): no batch helps
    }
    for (std::int64_t b = p->batch; b >= 1; b /= 2) {
      if (b != p->batch) {
        req.batch = b;
        p = try_predict(cat, w, req, err);
        if (!p) break;
      }
      if (p->memory.fits) {
        best.batch = b;
        best.recompute = rc;
        best.p = p;
        return best;
      }
      best.p = p;  // the smallest tried, for the report of what did not fit
      best.batch = b;
    }
  }
  return best;
}

std::vector<std::string> strategies(const Scenario& s, int count) {
  if (s.task == "finetune" && s.finetune != "full") return {s.finetune};
  if (count == 1) return {"single"};
  if (s.task == "finetune") return {"ddp", "fsdp"};
  return {"ddp", "zero2", "fsdp"};
}

/// An option on `count` x `gpu` under `strategy` in `precision` (a policy's name or a served weight format), before
/// it is priced.
Option new_option(const catalog::Gpu& gpu, int count, const std::string& strategy, const std::string& precision,
                  const std::string& precision_note) {
  Option o;
  o.gpu_id = gpu.id;
  o.gpu_name = gpu.name;
  o.count = count;
  o.strategy = strategy;
  o.precision = precision + (precision_note.empty() ? "" : " (" + precision_note + ")");
  o.ecc = gpu.ecc == "yes";
  return o;
}

Option new_option(const catalog::Gpu& gpu, int count, const std::string& strategy, perf::Precision precision,
                  const std::string& precision_note) {
  return new_option(gpu, count, strategy, std::string(perf::precision_name(precision)), precision_note);
}

/// The scenario's workload trained on `count` x `gpu`.
perf::PredictRequest training_request(const Scenario& s, const catalog::Gpu& gpu, int count, perf::Precision precision) {
  perf::PredictRequest req;
  req.workload = s.workload;
  req.gpu = gpu.id;
  req.gpus = count;
  req.precision = precision;
  req.training = true;
  req.options = s.workload_options;
  if (!s.framework.empty()) req.options["framework"] = s.framework;
  if (!s.release.empty()) req.options["release"] = s.release;
  req.stack = s.stack ? &*s.stack : nullptr;
  req.calibration = s.calibration ? &*s.calibration : nullptr;
  return req;
}

/// Time to finish (with failures, restarts and Young/Daly checkpoints), then rent or buy, for a training
/// option that fits: the same arithmetic for one server and for multi-node plans.
void price_training_run(Option& o, const perf::Prediction& pred, double model_params, const Scenario& s, const Assumptions& a,
                        const catalog::Gpu& gpu, int count) {
  const perf::Prediction* p = &pred;
  // Time, failures and the checkpoint interval.
  const double rate = a.get("failures_per_gpu_hour") * (o.ecc ? 1.0 : a.get("non_ecc_failure_factor"));
  o.mtbf_hours = 1.0 / (rate * count);
  const double bytes_per_param = p->plan.fp32_master || p->plan.precision == perf::Precision::fp32 ||
                                         p->plan.precision == perf::Precision::tf32
                                     ? 12.0   // fp32 weights (or master copy) + two Adam moments
                                     : 6.0;   // pure 16-bit: weights + two 16-bit moments
  o.checkpoint_gb = model_params * bytes_per_param / 1e9;
  const double ckpt_h = o.checkpoint_gb / a.get("checkpoint_write_gbs") / 3600.0;
  o.checkpoint_interval_hours = optimal_checkpoint_interval(ckpt_h, o.mtbf_hours);
  if (s.work > 0) {
    o.compute_hours = s.work / o.throughput / 3600.0;
    o.expected_failures = o.compute_hours / o.mtbf_hours;
    const double restart_h = a.get("restart_minutes") / 60.0;
    o.lost_hours = o.expected_failures * (o.checkpoint_interval_hours / 2 + restart_h) +
                   (o.checkpoint_interval_hours > 0 ? o.compute_hours / o.checkpoint_interval_hours * ckpt_h : 0);
    o.total_hours = o.compute_hours + o.lost_hours;
  }
  // Costs: to finish the job, or per million units when no amount of work is given.
  const Costs c = costs_for(gpu, a, a.get("utilization"));
  const double hours = s.work > 0 ? o.total_hours : 1e6 / o.throughput / 3600.0;
  if (c.rent_per_h) o.rent_usd = hours * count * *c.rent_per_h;
  if (c.price) {
    o.buy_upfront_usd = count * *c.price;
    o.buy_usd = hours * count * *c.own_per_h;
    if (c.rent_per_h && *c.rent_per_h > *c.power_per_h)
      o.breakeven_utilization = *c.price / (a.get("amortization_years") * 8760.0 * (*c.rent_per_h - *c.power_per_h));
  }
  o.energy_usd = hours * count * *c.power_per_h;
  if (s.hours && o.total_hours > *s.hours)
    o.why_not.push_back(fmt::format("misses the {:.0f} h deadline: {:.0f} h including {:.1f} h expected lost to failures",
                                    *s.hours, o.total_hours, o.lost_hours));
  choose_basis(o, s, o.rent_usd.value_or(0), o.buy_upfront_usd.value_or(0));
}

Option training_option(const catalog::Catalog& cat, const workload::Workload& w, const catalog::Gpu& gpu, const Scenario& s, const Assumptions& a,
                       int count, const std::string& strategy, perf::Precision precision, const std::string& precision_note,
                       bool transformer, std::map<std::string, TrainingBatch>& fit_cache) {
  Option o = new_option(gpu, count, strategy, precision, precision_note);
  perf::PredictRequest req = training_request(s, gpu, count, precision);
  if (s.seq_len > 0) req.options["seq_len"] = std::to_string(s.seq_len);
  if (strategy == "zero2") req.options["sharding"] = "zero2";
  if (strategy == "fsdp") req.options["sharding"] = "full";
  if (strategy == "lora" || strategy == "qlora") req.options["finetune"] = strategy;
  // Memory per GPU depends on the count only when states are sharded; cache the batch search otherwise.
  const bool sharded = strategy == "zero2" || strategy == "fsdp";
  const std::string key = fmt::format("{}|{}|{}", gpu.id, strategy, sharded ? count : 0);
  auto it = fit_cache.find(key);
  if (it == fit_cache.end()) {
    perf::PredictRequest one = req;
    if (!sharded) one.gpus = 1;
    it = fit_cache.emplace(key, find_fit(cat, w, one, transformer)).first;
  }
  const TrainingBatch& fit = it->second;
  if (!fit.p) {
    o.why_not.push_back(fit.err);
    return o;
  }
  std::optional<perf::Prediction> p = fit.p;
  if (count > 1 && !sharded && fit.p->memory.fits) {
    req.batch = fit.batch;
    req.options["recompute"] = fit.recompute;
    std::string err;
    p = try_predict(cat, w, req, err);
    if (!p) {
      o.why_not.push_back(err);
      return o;
    }
  }
  o.batch = fit.batch;
  o.recompute = fit.recompute;
  o.fits = p->memory.fits;
  o.peak_gib = p->memory.peak_bytes / kGiB;
  o.capacity_gib = p->memory.capacity_bytes / kGiB;
  o.unit = p->unit;
  o.throughput = p->throughput * count;
  o.software = p->maturity_notes;
  if (!o.fits) {
    o.why_not.push_back(fmt::format("does not fit even as {} on {} card{}: {:.1f} GiB per GPU at batch 1{} vs {:.1f} GiB usable", strategy,
                                    count, count == 1 ? "" : "s", o.peak_gib, transformer ? " with full recompute" : "", o.capacity_gib));
    return o;
  }
  price_training_run(o, *p, static_cast<double>(p->params), s, a, gpu, count);
  return o;
}

/// A decoder trained past one server: for each tensor-parallel size (1, 2, 4, 8 inside a node) the fewest
/// pipeline stages that make a rank fit (full recompute when nothing else does), data parallel over the
/// rest, the global batch from the `global_batch_tokens` assumption; the fastest of those plans.
Option multinode_option(const catalog::Catalog& cat, const workload::Workload& w, const catalog::Gpu& gpu, const Scenario& s,
                        const Assumptions& a, int count, perf::Precision precision, const std::string& precision_note) {
  const models::NetworkInfo& net = w.network();
  Option o = new_option(gpu, count, "3d", precision, precision_note);
  const auto& dec = net.decoder;
  const std::int64_t seq = s.seq_len > 0 ? s.seq_len : net.default_seq_len;
  std::optional<perf::Prediction> best;
  std::string best_plan, best_strategy, last_err;
  for (int tp : {1, 2, 4, 8}) {
    if (dec.heads % tp != 0 || count % tp != 0) continue;
    bool placed = false;
    for (const char* recompute : {"none", "full"}) {
      for (int pp = 1; pp <= 64 && !placed; pp *= 2) {
        if (dec.layers % pp != 0 || count % (tp * pp) != 0) continue;
        const int dp = count / (tp * pp);
        // The global batch in sequences: the assumption's tokens, rounded up to whole micro-batches per rank.
        const auto sequences = static_cast<std::int64_t>(std::ceil(a.get("global_batch_tokens") / static_cast<double>(seq) / dp)) * dp;
        perf::PredictRequest req = training_request(s, gpu, count, precision);
        // The plan's keys over the scenario's (training_request's workload options and release).
        for (const auto& [key, value] : std::map<std::string, std::string>{{"tp", std::to_string(tp)}, {"pp", std::to_string(pp)},
                                                                           {"global_batch", std::to_string(sequences)}, {"sharding", "zero1"},
                                                                           {"recompute", recompute}, {"seq_len", std::to_string(seq)}})
          req.options[key] = value;
        if (!s.network.empty()) req.options["network"] = s.network;  // past one server only: inside one, its own links
        std::string err;
        const auto p = try_predict(cat, w, req, err);
        if (!p) {
          last_err = err;
          continue;
        }
        if (!p->memory.fits) continue;
        placed = true;
        if (!best || p->throughput > best->throughput) {
          best = p;
          // Each dimension named with the link it runs over: a pipeline may cross servers while its data
          // parallel groups stay on NVLink inside one.
          std::string links;
          if (tp > 1) links += ", TP over " + p->tp_link;
          if (pp > 1) links += ", PP over " + p->pp_link;
          if (dp > 1) links += ", DP over " + p->dp_link;
          best_plan = fmt::format("tp {} x pp {} x dp {}, micro-batch {}, {} micro-batches{}{}", tp, pp, dp, p->batch, p->micro_batches,
                                  std::string(recompute) == "full" ? ", full recompute" : "", links);
          best_strategy = tp > 1 && pp > 1 ? "3d" : tp > 1 ? "tp x dp" : pp > 1 ? "pp x dp" : "dp (zero1)";
        }
      }
      if (placed) break;
    }
  }
  if (!best) {
    o.why_not.push_back(last_err.empty() ? fmt::format("no tp x pp plan on {} cards fits a rank's memory", count) : last_err);
    return o;
  }
  o.fits = true;
  o.batch = best->batch;
  o.recompute = best->recompute;
  o.peak_gib = best->memory.peak_bytes / kGiB;
  o.capacity_gib = best->memory.capacity_bytes / kGiB;
  o.unit = best->unit;
  o.throughput = best->throughput * count;
  o.software = best->maturity_notes;
  o.plan = best_plan;
  o.strategy = best_strategy;
  o.network = best->network;
  o.network_note = best->network_note;
  price_training_run(o, *best, static_cast<double>(models::decoder_params(net.decoder)), s, a, gpu, count);
  return o;
}

// ---- serving ----

/// The serving batch a card (or MIG slice) runs (best_serving_batch): its capacity and latency, or why none.
struct ServingBatch {
  std::int64_t batch = 0;
  double service_s = 0, capacity_rps = 0, p99_ms = 0, peak_bytes = 0, ttft_s = 0, per_token_s = 0;
  std::string unit;
  std::string why_not;
};

/// The batch with the most capacity whose p99 meets the SLA (service time scaled by `slowdown`, for a
/// MIG slice) and whose memory fits in `capacity_bytes`.
ServingBatch best_serving_batch(const catalog::Catalog& cat, const workload::Workload& w, const catalog::Gpu& gpu, const Scenario& s, const Assumptions& a,
                            perf::Precision precision, double slowdown, double capacity_bytes) {
  ServingBatch best;
  perf::PredictRequest req;
  req.workload = s.workload;
  req.gpu = gpu.id;
  req.precision = precision;
  req.training = false;
  req.options = s.workload_options;
  if (!s.framework.empty()) req.options["framework"] = s.framework;
  if (!s.release.empty()) req.options["release"] = s.release;
  req.stack = s.stack ? &*s.stack : nullptr;
  req.calibration = s.calibration ? &*s.calibration : nullptr;
  if (s.seq_len > 0) req.options["seq_len"] = std::to_string(s.seq_len);
  if (s.gen_len > 0) req.options["gen_len"] = std::to_string(s.gen_len);
  std::string last_why;
  for (std::int64_t b = 1; b <= 1024; b *= 2) {
    req.batch = b;
    std::string err;
    const auto p = try_predict(cat, w, req, err);
    if (!p) {
      if (best.batch == 0) best.why_not = err;
      break;
    }
    const double service = (p->decode ? p->prefill_s + static_cast<double>(p->gen_len) * p->decode_step_s : p->step_s) * slowdown;
    const double p99 = a.get("p99_over_service") * service * 1e3;
    if (p->memory.peak_bytes > capacity_bytes) {
      last_why = fmt::format("does not fit: {:.1f} GiB at batch {} vs {:.1f} GiB", p->memory.peak_bytes / kGiB, b, capacity_bytes / kGiB);
      break;
    }
    if (s.sla_p99_ms && p99 > *s.sla_p99_ms) {
      last_why = fmt::format("p99 {:.1f} ms at batch {} exceeds the {:.0f} ms SLA", p99, b, *s.sla_p99_ms);
      break;
    }
    const double capacity = static_cast<double>(b) / service * a.get("serving_headroom");
    if (capacity > best.capacity_rps)
      best = {b, service, capacity, p99, p->memory.peak_bytes, p->decode ? p->prefill_s * slowdown : 0,
              p->decode ? p->decode_step_s * slowdown : 0, p->unit, ""};
  }
  if (best.batch == 0 && best.why_not.empty()) best.why_not = last_why;
  return best;
}

/// A serving fleet's month: rent, or buy (up front, amortised with power) and the break-even utilisation;
/// the fleet is busy around the clock.
void price_serving_month(Option& o, const catalog::Gpu& gpu, const Scenario& s, const Assumptions& a) {
  const double month = a.get("hours_per_month");
  const Costs c = costs_for(gpu, a, 1.0);
  if (c.rent_per_h) o.rent_usd = o.count * *c.rent_per_h * month;
  if (c.price) {
    o.buy_upfront_usd = o.count * *c.price;
    o.buy_usd = o.count * *c.own_per_h * month;
    if (c.rent_per_h && *c.rent_per_h > *c.power_per_h)
      o.breakeven_utilization = *c.price / (a.get("amortization_years") * 8760.0 * (*c.rent_per_h - *c.power_per_h));
  }
  o.energy_usd = o.count * *c.power_per_h * month;
  choose_basis(o, s, o.rent_usd.value_or(0), o.buy_upfront_usd.value_or(0));
}

Option serving_option(const catalog::Catalog& cat, const workload::Workload& w, const catalog::Gpu& gpu, const Scenario& s, const Assumptions& a,
                      perf::Precision precision, const std::string& precision_note, const std::string& mode) {
  Option o = new_option(gpu, 1, mode, precision, precision_note);
  const bool mig = mode == "serve-mig";
  const double required = std::max(s.requests_per_s * a.get("peak_to_mean"), 0.0);
  const int tenants = std::max(1, s.tenants);
  const double per_tenant = required / tenants;
  const auto units_for = [&](double rps, double capacity) { return std::max(1.0, std::ceil(rps / capacity)); };
  ServingBatch f;
  double instances_per_card = 1;
  if (mig) {
    // MIG profiles of a 7-slice part (data/system.toml): k of 7 compute slices with eighths of the memory.
    // The smallest profile that holds the model and meets the SLA packs the most isolated tenants per card.
    std::string why;
    for (const perf::MigProfile& profile : perf::system_facts().mig_profiles) {
      const int k = profile.compute_slices;
      if (k > gpu.mig_max) break;
      const double bytes = perf::usable_device_bytes(gpu.memory_bytes() * profile.memory_eighths / 8.0);
      ServingBatch t = best_serving_batch(cat, w, gpu, s, a, precision, static_cast<double>(gpu.mig_max) / k, bytes);
      if (t.batch == 0) {
        why = t.why_not + fmt::format(" (MIG {}g instance)", k);
        continue;
      }
      const double per_card = std::floor(static_cast<double>(gpu.mig_max) / k);
      const double inst_per_tenant = units_for(per_tenant, t.capacity_rps);
      if (std::floor(per_card / inst_per_tenant) < 1) {
        why = fmt::format("a tenant needs {:.0f} MIG {}g instances, more than a card has", inst_per_tenant, k);
        continue;
      }
      f = t;
      instances_per_card = per_card;
      o.tenants_per_card = static_cast<int>(std::min<double>(tenants, std::floor(per_card / inst_per_tenant)));
      o.count = static_cast<int>(std::ceil(static_cast<double>(tenants) / o.tenants_per_card));
      o.isolation = fmt::format("MIG {}g instances, {} isolated tenants per card", k, o.tenants_per_card);
      o.capacity_gib = bytes / kGiB;
      break;
    }
    if (f.batch == 0) {
      o.why_not.push_back(why);
      return o;
    }
  } else {
    const double capacity_bytes = perf::usable_device_bytes(gpu.memory_bytes());
    f = best_serving_batch(cat, w, gpu, s, a, precision, 1.0, capacity_bytes);
    o.capacity_gib = capacity_bytes / kGiB;
    if (f.batch == 0) {
      o.why_not.push_back(f.why_not);
      return o;
    }
    if (mode == "serve-dedicated") {
      o.count = tenants * static_cast<int>(units_for(per_tenant, f.capacity_rps));
      o.tenants_per_card = 1;
      o.isolation = tenants > 1 ? "a card per tenant" : "single tenant";
    } else {  // serve-shared: time-slicing, no isolation
      o.count = static_cast<int>(units_for(required, f.capacity_rps));
      o.tenants_per_card = static_cast<int>(std::ceil(static_cast<double>(tenants) / o.count));
      o.isolation = "none: time-slicing shares memory and faults between tenants";
      if (a.get("isolation_required") != 0) o.why_not.push_back("no isolation between tenants (no MIG: time-slicing only)");
    }
  }
  o.fits = true;
  o.batch = f.batch;
  o.peak_gib = f.peak_bytes / kGiB;
  o.latency_p99_ms = f.p99_ms;
  o.ttft_ms = f.ttft_s * 1e3;
  o.per_token_ms = f.per_token_s * 1e3;
  o.capacity_rps = f.capacity_rps * instances_per_card * o.count;
  o.throughput = o.capacity_rps;
  o.unit = "requests/s";
  price_serving_month(o, gpu, s, a);
  return o;
}

/// LLM serving (decoders) under in-flight batching (perf/serving.hpp): a replica of `tp` GPUs holds as
/// many requests in flight as its KV cache and engine allow, fewer when that breaks a latency target (time
/// to first token at p99, time per output token, or the whole request at p99: perf/serving.hpp's latency
/// under load); replicas are added for the peak request rate at the serving headroom.
Option llm_serving_option(const catalog::Catalog& cat, const workload::Workload& w, const catalog::Gpu& gpu, const Scenario& s, const Assumptions& a,
                          const std::string& shown_as, const std::string& format, const std::string& precision_note, int tp) {
  Option o = new_option(gpu, tp, "serve-llm", shown_as, precision_note);
  o.tp = tp;
  perf::ServingRequest r = serving_request(s, w, gpu.id, format, tp);
  std::optional<perf::ServingPrediction> best;
  std::string why;
  try {
    perf::ServingPrediction p = perf::predict_serving(cat, w, r);
    const auto breaks = [&](const perf::ServingPrediction& q) -> std::string {
      const double p99 = q.request_p99_s * 1e3;
      if (s.sla_ttft_ms && q.ttft_p99_s * 1e3 > *s.sla_ttft_ms)
        return fmt::format("time to first token {:.0f} ms (p99) exceeds the {:.0f} ms target", q.ttft_p99_s * 1e3, *s.sla_ttft_ms);
      if (s.sla_tpot_ms && q.tpot_s * 1e3 > *s.sla_tpot_ms)
        return fmt::format("{:.1f} ms per output token exceeds the {:.1f} ms target", q.tpot_s * 1e3, *s.sla_tpot_ms);
      if (s.sla_p99_ms && p99 > *s.sla_p99_ms) return fmt::format("p99 {:.0f} ms exceeds the {:.0f} ms SLA", p99, *s.sla_p99_ms);
      if (!q.fits) return q.notes.empty() ? "does not fit" : q.notes.front();
      return "";
    };
    // Fewer requests in flight shorten every iteration: halve until the targets hold.
    for (std::int64_t c = p.batch; c >= 1; c /= 2) {
      if (c != p.batch) {
        r.batch = c;
        p = perf::predict_serving(cat, w, r);
      }
      const std::string broken = breaks(p);
      if (broken.empty()) {
        best = p;
        break;
      }
      why = fmt::format("{} with {} request{} in flight on tp {}", broken, c, c == 1 ? "" : "s", tp);
    }
  } catch (const InputError& e) {
    why = e.what();
  }
  if (!best) {
    o.why_not.push_back(why);
    return o;
  }
  const perf::ServingPrediction& p = *best;
  const double G = static_cast<double>(p.gen_len);
  const double per_replica_rps = p.throughput / G * a.get("serving_headroom");
  const double required = s.requests_per_s * a.get("peak_to_mean");
  const int replicas = required > 0 ? static_cast<int>(std::ceil(required / per_replica_rps)) : 1;
  o.count = replicas * tp;
  o.fits = true;
  o.batch = p.batch;
  o.peak_gib = (p.weight_bytes + p.kv_bytes + p.runtime_bytes) / kGiB;
  o.capacity_gib = p.capacity_bytes / kGiB;
  o.ttft_ms = p.ttft_s * 1e3;
  o.per_token_ms = p.tpot_s * 1e3;
  o.latency_p99_ms = p.request_p99_s * 1e3;
  o.capacity_rps = per_replica_rps * replicas;
  o.throughput = o.capacity_rps;
  o.unit = "requests/s";
  o.tenants_per_card = 1;
  o.isolation = fmt::format("{} replica{} of tp {} ({} engine, {} weights, {} request{} in flight each)", replicas, replicas == 1 ? "" : "s",
                            tp, p.engine, p.format, p.batch, p.batch == 1 ? "" : "s");
  price_serving_month(o, gpu, s, a);
  const double month = a.get("hours_per_month");
  // What a million output tokens cost on this fleet: at the requested rate, or at its capacity when none.
  const double tokens_per_month = (s.requests_per_s > 0 ? s.requests_per_s : o.capacity_rps) * G * 3600.0 * month;
  if (o.cost_usd && tokens_per_month > 0) o.usd_per_million_tokens = *o.cost_usd / tokens_per_month * 1e6;
  return o;
}

bool better(const Option& x, const Option& y) {
  if (x.feasible != y.feasible) return x.feasible;
  if (x.cost_usd.has_value() != y.cost_usd.has_value()) return x.cost_usd.has_value();
  if (x.cost_usd && *x.cost_usd != *y.cost_usd) return *x.cost_usd < *y.cost_usd;
  if (x.total_hours != y.total_hours) return x.total_hours < y.total_hours;
  return x.count < y.count;
}

std::string money(double v) { return units::format_usd(v); }

/// The measured machine as an option: measured speed, no purchase, electricity only; the same failure,
/// checkpoint and deadline arithmetic as a single GPU.
Option measured_option(const MeasuredMachine& m, const models::NetworkInfo& net, const Scenario& s, const Assumptions& a,
                       const std::string& unit) {
  Option o;
  o.gpu_id = kThisMachine;
  o.gpu_name = m.name;
  o.count = 1;
  o.strategy = "as-is";
  o.precision = m.precision + " (measured)";
  o.batch = m.batch;
  o.fits = true;
  o.peak_gib = m.peak_gib;
  o.capacity_gib = m.capacity_gib;
  o.unit = unit;
  o.throughput = m.throughput;
  o.ecc = true;  // not known; no ECC penalty is assumed for a machine that already runs the job
  models::NetworkOptions no;
  no.training = false;
  const double params = static_cast<double>(models::param_count(models::build_network(net, no)));
  o.mtbf_hours = 1.0 / a.get("failures_per_gpu_hour");
  o.checkpoint_gb = params * 12.0 / 1e9;  // fp32 weights and two Adam moments, as the engine writes them
  const double ckpt_h = o.checkpoint_gb / a.get("checkpoint_write_gbs") / 3600.0;
  o.checkpoint_interval_hours = optimal_checkpoint_interval(ckpt_h, o.mtbf_hours);
  if (s.work > 0) {
    o.compute_hours = s.work / o.throughput / 3600.0;
    o.expected_failures = o.compute_hours / o.mtbf_hours;
    o.lost_hours = o.expected_failures * (o.checkpoint_interval_hours / 2 + a.get("restart_minutes") / 60.0) +
                   (o.checkpoint_interval_hours > 0 ? o.compute_hours / o.checkpoint_interval_hours * ckpt_h : 0);
    o.total_hours = o.compute_hours + o.lost_hours;
  }
  const double hours = s.work > 0 ? o.total_hours : 1e6 / o.throughput / 3600.0;
  o.energy_usd = hours * a.get("this_machine_watts") / 1000.0 * a.get("electricity_usd_per_kwh");
  o.buy_upfront_usd = 0;
  o.buy_usd = o.energy_usd;
  o.cost_usd = o.energy_usd;
  o.cost_basis = "owned, electricity only";
  if (s.hours && o.total_hours > *s.hours)
    o.why_not.push_back(fmt::format("misses the {:.0f} h deadline: {:.0f} h at the measured {} {}", *s.hours, o.total_hours,
                                    units::format_si(o.throughput), unit));
  if (s.budget_usd && *o.cost_usd > *s.budget_usd)
    o.why_not.push_back(fmt::format("over the ${:.0f} budget: electricity alone costs {}", *s.budget_usd, money(*o.cost_usd)));
  return o;
}

}  // namespace

double optimal_checkpoint_interval(double checkpoint_hours, double mtbf_hours) {
  return std::sqrt(2.0 * checkpoint_hours * mtbf_hours);
}

workload::Workload validated_workload(const Scenario& s, const catalog::Catalog& cat, const workload::Workload* resolved) {
  if (s.task != "train" && s.task != "finetune" && s.task != "infer")
    throw InputError(fmt::format("task '{}' is not a task (expected train, finetune or infer)", strings::printable(s.task)));
  if (s.finetune != "full" && s.finetune != "lora" && s.finetune != "qlora")
    throw InputError(fmt::format("finetune '{}' is not a method (expected full, lora or qlora)", strings::printable(s.finetune)));
  if (s.purchase != "buy" && s.purchase != "rent" && s.purchase != "either")
    throw InputError(fmt::format("purchase '{}' is not a choice (expected buy, rent or either)", strings::printable(s.purchase)));
  if (s.work < 0) throw InputError(fmt::format("the amount of work cannot be negative ({})", s.work));
  if (s.hours && *s.hours <= 0) throw InputError(fmt::format("--hours must be positive, got {}", *s.hours));
  if (s.tenants < 1) throw InputError(fmt::format("--tenants must be at least 1, got {}", s.tenants));
  if (s.sla_p99_ms && *s.sla_p99_ms <= 0) throw InputError(fmt::format("--sla-p99-ms must be positive, got {}", *s.sla_p99_ms));
  if (s.requests_per_s < 0) throw InputError(fmt::format("--requests-per-s cannot be negative, got {}", s.requests_per_s));
  if (s.budget_usd && *s.budget_usd <= 0) throw InputError(fmt::format("--budget must be positive, got {}", *s.budget_usd));
  if (s.task == "infer" && (s.hours || s.work > 0))
    throw InputError("--hours and --tokens/--samples describe training; serving takes --requests-per-s and --sla-p99-ms");
  if (s.task != "infer" && (s.sla_p99_ms || s.requests_per_s > 0 || s.tenants > 1 || s.sla_ttft_ms || s.sla_tpot_ms || !s.engine.empty()))
    throw InputError("--sla-p99-ms, --sla-ttft-ms, --sla-tpot-ms, --engine, --requests-per-s and --tenants describe serving; use --task infer");
  if (s.sla_ttft_ms && *s.sla_ttft_ms <= 0) throw InputError(fmt::format("--sla-ttft-ms must be positive, got {}", *s.sla_ttft_ms));
  if (s.sla_tpot_ms && *s.sla_tpot_ms <= 0) throw InputError(fmt::format("--sla-tpot-ms must be positive, got {}", *s.sla_tpot_ms));
  // unknown workload: the closest ids
  workload::Workload w = resolved && resolved->is(s.workload, s.workload_options) ? *resolved : workload::Workload(s.workload, s.workload_options);
  if ((s.sla_ttft_ms || s.sla_tpot_ms || !s.engine.empty()) && w.family() != models::Family::decoder)
    throw InputError("--sla-ttft-ms, --sla-tpot-ms and --engine describe LLM serving; the workload is not a decoder");
  if (!s.engine.empty()) perf::serving_engine(s.engine);  // unknown engine: InputError listing them
  if (!s.release.empty()) perf::parse_month(s.release, "--release");
  const models::NetworkInfo& net = w.network();
  if (!s.network.empty()) {
    (void)perf::fabric_by_id(s.network);  // unknown: InputError listing the networks
    if (net.family != models::Family::decoder || !(s.task == "train" || (s.task == "finetune" && s.finetune == "full")))
      throw InputError(fmt::format("network {}: the fabric between servers, which only a decoder's training plans past one server cross "
                                   "(task train, or finetune full); {} {} is planned inside one server",
                                   strings::printable(s.network), s.task == "finetune" ? s.finetune + " finetune" : s.task,
                                   strings::printable(s.workload)));
  }
  for (const auto& [key, value] : s.workload_options) {
    const bool gpt_key = s.workload == models::kGptWorkload &&
                         (key == "seq_len" || std::find(models::gpt_shape_keys().begin(), models::gpt_shape_keys().end(), key) != models::gpt_shape_keys().end());
    if (!gpt_key && std::find(net.shape_options.begin(), net.shape_options.end(), key) == net.shape_options.end())
      throw InputError(fmt::format("--options: '{}' is not a shape option of workload '{}' (it takes {})", strings::printable(key),
                                   strings::printable(s.workload),
                                   s.workload == models::kGptWorkload ? strings::join(models::gpt_shape_keys(), ", ")
                                   : net.shape_options.empty()      ? "none"
                                                                     : strings::join(net.shape_options, ", ")));
  }
  // A decoder served alone is priced as predict serves it: a precision policy's weights or a weight format.
  const bool llm_served = s.task == "infer" && workload::pricer_for("infer", w.family()) == workload::Pricer::serving;
  if (llm_served && !is_precision_policy(s.precision)) {
    const auto ids = perf::weight_format_ids();
    if (std::find(ids.begin(), ids.end(), s.precision) == ids.end())
      throw InputError(fmt::format("precision '{}' is neither a precision policy (fp32, tf32, fp16, bf16, amp-fp16, amp-bf16, amp-fp8) nor "
                                   "a weight format a served decoder is priced in ({})",
                                   strings::printable(s.precision), strings::join(ids, ", ")));
    if (s.tenants > 1)
      throw InputError(fmt::format("precision '{}' with --tenants {}: tenants sharing a card are priced as graphs in a precision policy "
                                   "(fp16, bf16, amp-fp8, ...), not in a quantized weight format",
                                   strings::printable(s.precision), s.tenants));
  } else {
    perf::parse_precision(s.precision);
  }
  for (const auto& g : s.gpus) cat.find(g);
  return w;
}

void validate(const Scenario& s, const catalog::Catalog& cat) { validated_workload(s, cat); }

Advice advise(const catalog::Catalog& cat, const Scenario& s, const Assumptions& a, const MeasuredMachine* here) {
  return advise(cat, validated_workload(s, cat), s, a, here);
}

namespace {

/// Every option on one GPU: training counts and strategies (and multi-node plans for decoders), or
/// serving modes; one infeasible option saying why when the card runs no precision the scenario allows.
std::vector<Option> options_for(const catalog::Catalog& cat, const workload::Workload& w, const catalog::Gpu& gpu, const Scenario& s,
                                const Assumptions& a) {
  const models::NetworkInfo& net = w.network();
  const bool serving = s.task == "infer";
  const int per_server = static_cast<int>(a.get("max_gpus_per_server"));
  const int max_gpus = std::min(per_server, static_cast<int>(a.get("max_gpus")));  // within one server
  std::vector<Option> out;
  std::map<std::string, TrainingBatch> fit_cache;
  std::string note;
  const auto runs_neither = [&] {
    Option o;
    o.gpu_id = gpu.id;
    o.gpu_name = gpu.name;
    // predict's reason (the math the card lacks), and that the nearest precision with more bits is missing too.
    const perf::Precision wanted = perf::parse_precision(s.precision);
    std::string why = fmt::format("does not run {}", s.precision);
    try {
      (void)perf::plan_precision(wanted, gpu);
    } catch (const InputError& e) {
      why = e.what();
    }
    const bool has_nearest = wanted == perf::Precision::amp_bf16 || wanted == perf::Precision::amp_fp8 || wanted == perf::Precision::bf16;
    o.why_not.push_back(has_nearest ? why + ", nor the 16-bit precision nearest it" : why);
    out.push_back(o);
    return out;
  };
  // workload::pricer_for's rule, as predict and compare apply it; several tenants of one decoder share a card
  // through MIG slices or time-slicing, which the serving model does not price: the graph path below does.
  if (serving && workload::pricer_for("infer", w.family()) == workload::Pricer::serving && s.tenants == 1) {
    // LLMs: in-flight batching on 1, 2, 4 ... GPUs per replica, up to a server (the heads split evenly), in the
    // precision's weights or a weight format named as such (int4-awq, q4_k_m, ...), as predict serves them.
    const auto format = perf::serving_format_on(gpu, s.precision, &note);
    if (!format) return runs_neither();
    note = fallback_said(s, note);
    std::string policy_note;
    const auto policy = is_precision_policy(s.precision) ? perf::precision_run(perf::parse_precision(s.precision), gpu, &policy_note) : std::nullopt;
    const std::string shown_as = policy ? std::string(perf::precision_name(*policy)) : *format;
    for (int tp = 1; tp <= max_gpus; tp *= 2)
      if (net.decoder.heads % tp == 0) out.push_back(llm_serving_option(cat, w, gpu, s, a, shown_as, *format, note, tp));
    return out;
  }
  const auto precision = perf::precision_run(perf::parse_precision(s.precision), gpu, &note);
  if (!precision) return runs_neither();
  note = fallback_said(s, note);
  if (serving) {
    std::vector<std::string> modes = {"serve-dedicated"};
    if (s.tenants > 1) modes.push_back(gpu.mig_max >= 2 ? "serve-mig" : "serve-shared");
    for (const auto& m : modes) out.push_back(serving_option(cat, w, gpu, s, a, *precision, note, m));
    return out;
  }
  const bool transformer = net.layers > 0;
  for (int count = 1; count <= max_gpus; count *= 2)
    for (const auto& strategy : strategies(s, count))
      out.push_back(training_option(cat, w, gpu, s, a, count, strategy, *precision, note, transformer, fit_cache));
  // Past one server: decoders, full training, clusters up to max_gpus.
  if (net.family == models::Family::decoder && (s.task == "train" || s.finetune == "full"))
    for (int count = 2 * per_server; count <= static_cast<int>(a.get("max_gpus")); count *= 2)
      out.push_back(multinode_option(cat, w, gpu, s, a, count, *precision, note));
  return out;
}

/// "fits at 21.3 GiB, 12.4 h, $41 (rent)" for an option that fits, with what it still misses.
/// `cost_factor` scales its cost as the advice's are (cost_scale).
std::string fit_summary(const Option& o, double cost_factor) {
  std::string s = fmt::format("fits at {:.1f} GiB per GPU, batch {}", o.peak_gib, o.batch);
  if (o.total_hours > 0) s += fmt::format(", {:.3g} h", o.total_hours);
  if (o.cost_usd) s += fmt::format(", {} ({})", units::format_usd(*o.cost_usd * cost_factor), o.cost_basis);
  if (!o.why_not.empty()) s += "; but " + o.why_not.front();
  return s;
}

/// For a GPU ruled out because nothing fits its memory: the nearest changes that make it fit, each priced on
/// the nearest attempt's cards and strategy — the longest shorter sequence (halving, down to 512 tokens), and
/// QLoRA where the scenario fine-tunes another way. Empty where nothing is near or the miss is not memory.
std::vector<std::string> fit_hints(const catalog::Catalog& cat, const workload::Workload& w, const catalog::Gpu& gpu, const Scenario& s,
                                   const Assumptions& a, const Option& nearest, double cost_factor) {
  const models::NetworkInfo& net = w.network();
  std::vector<std::string> hints;
  if (s.task == "infer" || nearest.fits || net.layers == 0 || !nearest.plan.empty() || nearest.count == 0) return hints;
  std::string note;
  const auto precision = perf::precision_run(perf::parse_precision(s.precision), gpu, &note);
  if (!precision) return hints;
  note = fallback_said(s, note);
  // Sharded states need the cards they are sharded over; a replicated strategy fits on one card or none.
  const bool sharded = nearest.strategy == "fsdp" || nearest.strategy == "zero2";
  const int cards = sharded ? nearest.count : 1;
  const std::string strategy = !sharded && nearest.strategy == "ddp" ? "single" : nearest.strategy;
  const std::int64_t seq = s.seq_len > 0 ? s.seq_len : net.default_seq_len;
  for (std::int64_t len = seq / 2; len >= 512; len /= 2) {
    Scenario shorter = s;
    shorter.seq_len = len;
    std::map<std::string, TrainingBatch> cache;
    const Option o = training_option(cat, w, gpu, shorter, a, cards, strategy, *precision, note, true, cache);
    if (o.fits) {
      hints.push_back(fmt::format("--seq-len {} (from {}), {} on {} card{}: {}", len, seq, strategy, cards, cards == 1 ? "" : "s", fit_summary(o, cost_factor)));
      break;
    }
  }
  if (s.task == "finetune" && s.finetune != "qlora") {
    std::map<std::string, TrainingBatch> cache;
    const Option o = training_option(cat, w, gpu, s, a, 1, "qlora", *precision, note, true, cache);
    if (o.fits) hints.push_back(fmt::format("--finetune qlora on 1 card: {}", fit_summary(o, cost_factor)));
  }
  return hints;
}

/// Every GPU's options. They are independent (the model is pure and the catalog read-only): priced on
/// worker threads, GPUs taken in turn, results kept in catalog order so the ranking is the same every run.
std::vector<Option> all_options(const catalog::Catalog& cat, const workload::Workload& w, const std::vector<const catalog::Gpu*>& gpus,
                                const Scenario& s, const Assumptions& a) {
  std::vector<std::vector<Option>> per_gpu(gpus.size());
  std::vector<std::exception_ptr> errors(gpus.size());
  std::atomic<std::size_t> next{0};
  const unsigned workers = std::max(1u, std::min<unsigned>(std::thread::hardware_concurrency(), static_cast<unsigned>(gpus.size())));
  std::vector<std::thread> pool;
  for (unsigned worker = 0; worker < workers; ++worker)
    pool.emplace_back([&] {
      for (std::size_t i = next++; i < gpus.size(); i = next++) {
        try {
          per_gpu[i] = options_for(cat, w, *gpus[i], s, a);
        } catch (...) {
          errors[i] = std::current_exception();
        }
      }
    });
  for (auto& t : pool) t.join();
  for (const auto& e : errors)
    if (e) std::rethrow_exception(e);
  std::vector<Option> all;
  for (auto& v : per_gpu)
    for (auto& o : v) all.push_back(std::move(o));
  return all;
}

/// One row per GPU: its best option (the cheapest feasible count and strategy, ties to the faster), ranked;
/// the GPUs with none feasible ruled out with their nearest miss. Every feasible option stays in
/// adv.options for the JSON record and the report.
void pick_best_per_gpu(const std::vector<Option>& all, const Scenario& s, Advice& adv) {
  std::map<std::string, Option> best;
  for (const auto& o : all) {
    if (o.feasible) adv.options.push_back(o);
    auto it = best.find(o.gpu_id);
    if (it == best.end()) {
      best[o.gpu_id] = o;
      continue;
    }
    const Option& cur = it->second;
    // Among infeasible attempts keep the nearest: one that fits (the fewest cards), else the most cards and,
    // among those, the strategy that needs the least memory.
    // Two that fit but miss a requirement: the faster one when a deadline is missed, else the fewer cards.
    const bool faster = s.hours && o.total_hours > 0 && o.total_hours < cur.total_hours;
    const bool nearer_miss = !o.feasible && !cur.feasible &&
                             ((o.fits && !cur.fits) || (o.fits && cur.fits && (s.hours ? faster : o.count < cur.count)) ||
                              (!o.fits && !cur.fits &&
                               (o.count > cur.count || (o.count == cur.count && o.peak_gib < cur.peak_gib))));
    if ((o.feasible && better(o, cur)) || nearer_miss) best[o.gpu_id] = o;
  }
  for (auto& [id, o] : best) (o.feasible ? adv.ranked : adv.ruled_out).push_back(o);
  std::sort(adv.options.begin(), adv.options.end(), better);
  std::sort(adv.ranked.begin(), adv.ranked.end(), better);
  std::sort(adv.ruled_out.begin(), adv.ruled_out.end(), [](const Option& x, const Option& y) { return x.gpu_id < y.gpu_id; });
}

/// Reasons: what puts each ranked option where it is, and what rules each other GPU out.
void explain(const Scenario& s, const Assumptions& a, Advice& adv) {
  const bool serving = s.task == "infer";
  for (std::size_t i = 0; i < adv.ranked.size(); ++i) {
    Option& o = adv.ranked[i];
    o.rank = static_cast<int>(i + 1);
    std::string what = o.gpu_id == kThisMachine
                           ? fmt::format("the machine you have ({}), measured {} {}, no purchase, batch {}", o.gpu_name,
                                         units::format_si(o.throughput), o.unit, o.batch)
                       : o.strategy == "serve-llm"
                           ? fmt::format("{} x {}, {}, first token {:.0f} ms, {:.1f} ms per token, p99 {:.0f} ms", o.count, o.gpu_id,
                                         o.isolation, o.ttft_ms, o.per_token_ms, o.latency_p99_ms)
                       : serving ? fmt::format("{} x {}, {}, batch {}, p99 {:.1f} ms", o.count, o.gpu_id, o.isolation, o.batch, o.latency_p99_ms)
                       : !o.plan.empty() ? fmt::format("{} x {} in a {}", o.count, o.gpu_id, o.plan)
                               : fmt::format("{} on {} x {}, batch {}{}", o.strategy, o.count, o.gpu_id, o.batch,
                                             o.recompute != "none" ? ", recompute " + o.recompute : "");
    // A card that lacks the precision asked runs the nearest it has: said where the option is (its precision's note).
    if (const auto at = std::min(o.precision.find(" (the nearest to "), o.precision.find(" (the default rule: "));
        o.gpu_id != kThisMachine && at != std::string::npos)
      what += o.strategy == "serve-llm" ? ", " + o.precision.substr(at + 2, o.precision.size() - at - 3)  // its weights said above
                                        : ", in " + o.precision;
    if (!serving && s.work > 0) what += fmt::format(", {:.1f} h", o.total_hours);
    if (o.cost_usd) what += fmt::format(", {} {} ({})", money(*o.cost_usd), adv.cost_what, o.cost_basis);
    if (o.usd_per_million_tokens) what += fmt::format(", {} per million output tokens", money(*o.usd_per_million_tokens));
    if (i == 0) {
      o.reason = (o.cost_usd ? "cheapest option that meets every requirement: " : "meets every requirement (no price known): ") + what;
    } else {
      const Option& top = adv.ranked.front();
      std::string cmp;
      if (o.cost_usd && top.cost_usd) cmp = fmt::format("{:+.0f}% cost vs #1", 100 * (*o.cost_usd / *top.cost_usd - 1));
      else if (!o.cost_usd) cmp = fmt::format("no price known (--assume price.{0}=USD or rent.{0}=USD_PER_H)", o.gpu_id);
      if (!serving && s.work > 0 && top.total_hours > 0)
        cmp += fmt::format(", {:.2g}x the time of #1", o.total_hours / top.total_hours);
      o.reason = cmp + ": " + what;
    }
    if (!o.ecc && !serving) o.reason += "; no ECC: expected failures counted at x" + fmt::format("{:g}", a.get("non_ecc_failure_factor"));
    for (const auto& note : o.software) o.reason += "; " + note;
  }
  for (auto& o : adv.ruled_out) o.reason = o.why_not.empty() ? "no option fits" : o.why_not.front();
  // The same option in the full list carries its rank and reason (the others, not a GPU's best, keep rank 0).
  for (const auto& r : adv.ranked)
    for (auto& o : adv.options)
      if (o.gpu_id == r.gpu_id && o.count == r.count && o.strategy == r.strategy && o.plan == r.plan && o.precision == r.precision &&
          o.batch == r.batch && o.recompute == r.recompute && o.tp == r.tp) {
        o.rank = r.rank;
        o.reason = r.reason;
        break;
      }
  if (adv.ranked.empty()) adv.notes.push_back("no option meets every requirement; the ruled-out list says what each GPU lacks");
  if (!serving && s.work == 0) adv.notes.push_back("no --tokens/--samples given: costs are " + adv.cost_what + ", not for a job");
  if (!serving && !adv.ruled_out.empty())
    adv.notes.push_back(fmt::format("options run up to {} GPUs (--gpus, max_gpus; {} per server, multi-node plans for decoders)",
                                    static_cast<int>(a.get("max_gpus")), static_cast<int>(a.get("max_gpus_per_server"))));
}

}  // namespace

Advice advise(const catalog::Catalog& cat, const workload::Workload& resolved, const Scenario& s, const Assumptions& a,
              const MeasuredMachine* here) {
  const workload::Workload w = validated_workload(s, cat, &resolved);
  Advice adv;
  adv.scenario = s;
  adv.assumptions = a.list();
  const models::NetworkInfo& net = w.network();
  const bool serving = s.task == "infer";
  adv.work_unit = serving ? "requests/s" : net.family == models::Family::decoder ? "tokens" : net.family == models::Family::cnn || net.family == models::Family::unet ? "images" : "samples";
  adv.cost_what = serving ? "per month" : s.work > 0 ? "to finish the job" : "per million " + adv.work_unit;
  // A length the scenario leaves to the model rules options out as surely as one the user chose: say it.
  if (!serving && s.seq_len == 0 && net.default_seq_len > 0)
    adv.assumed.push_back(fmt::format("sequence {} tokens (the model's default; --seq-len changes it)", net.default_seq_len));
  // A quantized checkpoint is served as its weights, whatever the precision policy says; trained as its shape.
  if (net.quantized) {
    const std::string held = net.quantized->weights();
    const std::string policy = s.precision_named ? s.precision : fmt::format("the default rule's precision ({})", perf::kDefaultPrecisionRule);
    adv.assumed.push_back(serving ? fmt::format("{} weights, as {} says (not {}'s)", held, net.quantized->source,
                                                s.precision_named ? s.precision : std::string("the default rule"))
                                  : fmt::format("the model's shape at {}, not its checkpoint's {} weights", policy, held));
  }
  std::vector<const catalog::Gpu*> gpus;
  if (s.gpus.empty())
    for (const auto& g : cat.gpus()) gpus.push_back(&g);
  else
    for (const auto& id : s.gpus) gpus.push_back(&cat.find(id));
  if (s.calibration) {
    const bool considered = std::any_of(gpus.begin(), gpus.end(), [&](const catalog::Gpu* g) { return g->id == s.calibration->gpu_id; });
    if (considered)
      adv.assumed.push_back(fmt::format("{}'s options corrected by what was measured on it ({}), as predict --calibration corrects it",
                                        s.calibration->gpu_id, strings::printable(s.calibration->source)));
    else
      adv.notes.push_back(fmt::format("the measurements of {} ({}) correct no option: it is not among the cards considered",
                                      s.calibration->gpu_id, strings::printable(s.calibration->source)));
  }
  std::vector<Option> all = all_options(cat, w, gpus, s, a);
  // The machine an evaluate run measured, ranked beside the catalog where it trained this workload.
  if (here && !serving && here->workload == s.workload && here->throughput > 0 && s.task == "train") {
    std::string unit = all.empty() || all.front().unit.empty() ? adv.work_unit + "/s" : all.front().unit;
    for (const auto& o : all)
      if (!o.unit.empty()) unit = o.unit;
    all.push_back(measured_option(*here, net, s, a, unit));
  } else if (here) {
    adv.notes.push_back(fmt::format("this machine was measured training {}, so it is not ranked for this {} scenario on {}", here->workload,
                                    s.task, s.workload));
  }
  // Serving replicas are counted from the request rate: a fleet past the cap (max_gpus, --gpus) is not an option.
  const int cap = static_cast<int>(a.get("max_gpus"));
  for (auto& o : all)
    if (o.count > cap) o.why_not.push_back(fmt::format("needs {} GPUs; plans use at most {} (--gpus, max_gpus)", o.count, cap));
  for (auto& o : all) o.feasible = o.fits && o.why_not.empty();
  // Costs per many units: per billion where every figure would be under a cent per million (cost_scale's rule, as
  // compare and evaluate show them).
  double cost_factor = 1;  // the fit hints' costs are scaled alike
  if (!serving && s.work == 0) {
    double largest = 0;
    for (const auto& o : all)
      if (o.cost_usd) largest = std::max(largest, *o.cost_usd);
    const CostScale scale = cost_scale(largest);
    for (auto& o : all)
      for (std::optional<double>* c : {&o.cost_usd, &o.rent_usd, &o.buy_usd, &o.energy_usd})
        if (*c) **c *= scale.factor;
    adv.cost_what = "per " + scale.per + " " + adv.work_unit;
    cost_factor = scale.factor;
  }
  pick_best_per_gpu(all, s, adv);
  explain(s, a, adv);
  // The fabric each card's plans past one server cross where the scenario names none, with predict's reason, once per
  // reason (ranked, ruled out or listed alike: every plan priced on it).
  if (s.network.empty()) {
    std::map<std::string, std::vector<std::string>> cards_by_reason;
    for (const auto& o : all) {
      if (o.network_note.empty()) continue;
      auto& cards = cards_by_reason[o.network_note];
      if (std::find(cards.begin(), cards.end(), o.gpu_id) == cards.end()) cards.push_back(o.gpu_id);
    }
    for (const auto& [reason, cards] : cards_by_reason) {
      std::string why = reason;
      const std::string tail = " (network=ID to change)";
      if (why.size() > tail.size() && why.compare(why.size() - tail.size(), tail.size(), tail) == 0) why.resize(why.size() - tail.size());
      adv.assumed.push_back(fmt::format("past one server, {}: {} (--options network=ID names yours)", strings::join(cards, ", "), why));
    }
  } else if (std::none_of(all.begin(), all.end(), [&](const Option& o) { return o.count > static_cast<int>(a.get("max_gpus_per_server")); })) {
    adv.notes.push_back(fmt::format("network {} is not crossed: no plan runs past one server (--gpus, max_gpus {})", s.network,
                                    static_cast<int>(a.get("max_gpus"))));
  }
  // A plan past one server says why one server will not do: nothing of the card fits in one, or what fits misses
  // a requirement (the nearest miss inside a server, as the ruled-out list says it).
  const int per_server = static_cast<int>(a.get("max_gpus_per_server"));
  for (auto& o : adv.ranked) {
    if (o.count <= per_server || o.plan.empty()) continue;
    const Option* inside = nullptr;
    for (const auto& x : all)
      if (x.gpu_id == o.gpu_id && x.count <= per_server && (!inside || (x.fits && !inside->fits) || (x.fits == inside->fits && x.count > inside->count)))
        inside = &x;
    if (!inside) continue;
    o.reason += inside->fits ? fmt::format("; past one server because {} x {} in one {}", inside->count, o.gpu_id,
                                           inside->why_not.empty() ? "costs more" : inside->why_not.front())
                             : fmt::format("; past one server because the model does not fit {} x {} in one", inside->count, o.gpu_id);
  }
  // What would make a card that does not fit fit: said beside why it is ruled out.
  for (auto& o : adv.ruled_out) {
    if (o.gpu_id == "this-machine") continue;
    o.would_fit_with = fit_hints(cat, w, cat.find(o.gpu_id), s, a, o, cost_factor);
    if (!o.would_fit_with.empty()) o.reason += "; would fit with " + strings::join(o.would_fit_with, "; or ");
  }
  return adv;
}

}  // namespace gpuvs::advise
