// SPDX-License-Identifier: Apache-2.0
#include "perf/validation.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <map>
#include <cstdlib>

#include "core/csv.hpp"
#include "core/error.hpp"
#include "core/stats.hpp"
#include "core/strings.hpp"
#include "models/networks.hpp"
#include "perf/achievable.hpp"
#include "perf/band.hpp"
#include "perf/parallel.hpp"
#include "perf/predict.hpp"
#include "perf/serving.hpp"
#include "workload/workload.hpp"

namespace gpuvs::perf {

namespace {

using csv::next_record;
using csv::to_number;

const std::vector<std::string> kDocumentaryKeys = {"published_tflops_per_gpu", "tool", "metric", "engine", "scenario"};

/// The row's options the model takes; every key is accounted for: passed on, checked against what the
/// model assumes, or a reason it cannot be priced (all of them, joined, in `why`).
std::map<std::string, std::string> model_options(const PublishedRow& r, std::string& why) {
  std::map<std::string, std::string> out;
  std::vector<std::string> reasons;
  for (const auto& [key, value] : parse_option_pairs(r.options)) {
    if (documentary_option(key)) continue;
    if (std::find(prediction_option_keys().begin(), prediction_option_keys().end(), key) != prediction_option_keys().end()) {
      out[key] = value;
    } else {
      reasons.push_back(fmt::format("option {}={} is not understood by the model", key, value));
    }
  }
  why = strings::join(reasons, "; ");
  return out;
}

/// A microbenchmark row: the device's achievable figure for that key (a GEMM rate, a DRAM stream, the host
/// link, a peer copy). Collectives at a message size are not priced yet.
/// A collective at a message size (nccl-tests' busbw): the ring's time on the link the group crosses (NVLink
/// or PCIe inside a node, the cluster's network beyond), as bus bandwidth.
double collective_busbw(const catalog::Catalog& cat, const PublishedRow& r, const std::map<std::string, std::string>& o) {
  if (r.n_gpus < 2) throw InputError(fmt::format("{} needs at least 2 GPUs", r.workload));
  const auto it = o.find("msg_bytes");
  const double bytes = it == o.end() ? 0 : std::strtod(it->second.c_str(), nullptr);
  if (!(bytes >= 1 && bytes <= 1e12)) throw InputError(fmt::format("{} needs msg_bytes from 1 to 1e12", r.workload));
  const catalog::Gpu& gpu = cat.find(r.gpu);
  ParallelLayout l;
  l.dp = r.n_gpus;
  std::string why;
  l.network = o.count("network") ? fabric_by_id(o.at("network")).id : default_fabric(gpu, &why).id;
  l.nvls = nvls_option(o);  // nvls=0: a run with NCCL_NVLS_ENABLE=0 or an NCCL before 2.17
  const Link link = group_link(gpu, l, r.n_gpus, 1);
  const double n = r.n_gpus;
  const double seconds = r.workload == "allreduce" ? allreduce_seconds(bytes, r.n_gpus, link) : allgather_seconds(bytes, r.n_gpus, link);
  // busbw = algbw x 2(n-1)/n for all-reduce, x (n-1)/n for all-gather and reduce-scatter (nccl-tests).
  return bytes / seconds * (r.workload == "allreduce" ? 2.0 * (n - 1) / n : (n - 1) / n) / 1e9;
}

void price_micro(const catalog::Catalog& cat, const PublishedRow& r, const std::set<std::string>& held_out, ValidatedRow& v) {
  std::map<std::string, std::string> opts;
  for (const auto& [key, value] : parse_option_pairs(r.options))
    if (key == "msg_bytes" || key == "network" || key == "nvls") opts[key] = value;
    else if (!documentary_option(key)) throw InputError(fmt::format("option {}={} is not understood for a micro row", key, value));
  if (r.workload == "allreduce" || r.workload == "allgather" || r.workload == "reducescatter") {
    if (!r.unit.empty() && r.unit != "GB/s busbw")
      throw InputError(fmt::format("row unit {} differs from the prediction's GB/s busbw", r.unit));
    v.predicted = collective_busbw(cat, r, opts);
    v.predicted_unit = "GB/s busbw";
    v.band_low = v.predicted * model_band().low(1.0);
    v.band_high = v.predicted * model_band().high(1.0);
    v.status = "ok";
    v.reason = "NCCL's collective (rings, or NVLink SHARP where the switch has it) on the link the group crosses (perf/collective.hpp, perf/parallel.hpp)";
    if (r.value && *r.value > 0) v.ape = std::fabs(v.predicted - *r.value) / *r.value;
    return;
  }
  if (!opts.empty()) throw InputError(fmt::format("option {} applies to collectives only", opts.begin()->first));
  const auto& keys = achievable_keys();
  if (std::find(keys.begin(), keys.end(), r.workload) == keys.end())
    throw InputError(fmt::format("micro figure '{}' is not priced yet (priced: {})", strings::printable(r.workload), strings::join(keys, ", ")));
  if (r.precision.size() && r.workload.rfind("gemm-", 0) == 0 && r.workload != "gemm-" + r.precision)
    throw InputError(fmt::format("precision {} does not match the figure {}", r.precision, r.workload));
  const catalog::Gpu& gpu = cat.find(r.gpu);
  const auto a = achievable(cat, gpu, r.workload, builtin_achievable(), held_out);
  if (!a) throw InputError(fmt::format("{} has no {} to measure", gpu.id, r.workload));
  const std::string unit = achievable_unit(r.workload);
  if (!r.unit.empty() && r.unit != unit) throw InputError(fmt::format("row unit {} differs from the prediction's {}", r.unit, unit));
  const double scale = r.per == "system" ? r.n_gpus : 1.0;
  v.predicted = a->value * scale;
  v.predicted_unit = unit;
  // A microbenchmark's own spread: the band is the model's (published figures are exact, rules are not).
  v.band_low = v.predicted * model_band().low(1.0);
  v.band_high = v.predicted * model_band().high(1.0);
  v.status = "ok";
  v.reason = a->basis;
  if (r.value && *r.value > 0) v.ape = std::fabs(v.predicted - *r.value) / *r.value;
}

/// An LLM serving row (prefill, decode, or a decoder's whole requests): perf/serving.hpp, every option
/// accounted for as for training rows.
void price_serving(const catalog::Catalog& cat, const workload::Workload& w, const PublishedRow& r, const StackRatios* stack, ValidatedRow& v) {
  v.serving = true;
  ServingRequest req;
  req.stack = stack;
  std::vector<std::string> reasons;
  for (const auto& [key, value] : parse_option_pairs(r.options)) {
    if (documentary_option(key)) continue;
    const auto& keys = serving_option_keys();
    const auto& shape = models::gpt_shape_keys();
    if (std::find(keys.begin(), keys.end(), key) != keys.end() || std::find(shape.begin(), shape.end(), key) != shape.end())
      req.options[key] = value;
    else
      reasons.push_back(fmt::format("option {}={} is not understood by the serving model", key, value));
  }
  if (!reasons.empty()) throw InputError(strings::join(reasons, "; "));
  req.workload = r.workload;
  req.gpu = r.gpu;
  req.gpus = r.n_gpus;
  req.batch = r.batch;
  req.mode = r.mode;
  req.format = serving_format_for(r.precision);
  const ServingPrediction p = predict_serving(cat, w, req);
  // Serving predictions are per system; a per-GPU row is the system's figure over its GPUs.
  const double scale = r.per == "system" ? 1.0 : 1.0 / r.n_gpus;
  v.predicted = p.throughput * scale;
  v.band_low = p.band_low * scale;
  v.band_high = p.band_high * scale;
  v.predicted_unit = p.unit;
  v.engine = p.engine;
  v.format = p.format;
  v.batch = p.batch;
  v.batch_chosen = r.batch == 0 && r.mode == "infer";
  if (!r.unit.empty() && r.unit != p.unit) {
    v.reason = fmt::format("row unit {} differs from the prediction's {}", r.unit, p.unit);
    return;
  }
  v.status = "ok";
  v.reason = fmt::format("{} engine profile, {} weights, KV cache {}{}", p.engine, p.format, p.kv_dtype,
                         p.batch_chosen ? fmt::format(", {} requests in flight (limited by {})", p.batch, p.batch_limit) : "");
  if (r.value && *r.value > 0) v.ape = std::fabs(v.predicted - *r.value) / *r.value;
}

}  // namespace

bool documentary_option(const std::string& key) {
  return std::find(kDocumentaryKeys.begin(), kDocumentaryKeys.end(), key) != kDocumentaryKeys.end();
}

std::vector<std::string> configuration_keys(const std::vector<PublishedRow>& rows) {
  auto base = [](const PublishedRow& r) {
    return fmt::format("{}\x1f{}\x1f{}\x1f{}\x1f{}\x1f{}\x1f{}\x1f{}", r.file, r.source, r.workload, r.mode, r.precision, r.options,
                       r.n_gpus, r.per);
  };
  // A configuration in which some card has several batches is a sweep: its rows group only at one batch.
  std::map<std::string, std::map<std::string, std::set<std::int64_t>>> batches;  // configuration -> card -> batches
  for (const auto& r : rows) batches[base(r)][r.gpu].insert(r.batch);
  std::vector<std::string> keys;
  keys.reserve(rows.size());
  for (const auto& r : rows) {
    std::string key = base(r);
    const auto& cards = batches[key];
    if (std::any_of(cards.begin(), cards.end(), [](const auto& c) { return c.second.size() > 1; }))
      key += fmt::format("\x1f{}", r.batch);
    keys.push_back(std::move(key));
  }
  return keys;
}

std::vector<std::string> configuration_keys(const std::vector<ValidatedRow>& rows) {
  std::vector<PublishedRow> published;
  published.reserve(rows.size());
  for (const auto& v : rows) published.push_back(v.row);
  return configuration_keys(published);
}

std::vector<PublishedRow> read_published(const std::string& text, const std::string& where) {
  std::size_t pos = 0;
  int line = 1, start = 1;
  std::vector<std::string> header, cells;
  if (!next_record(text, pos, line, header, start, where)) throw InputError(fmt::format("{}: empty file", where));
  std::map<std::string, std::size_t> col;
  for (std::size_t i = 0; i < header.size(); ++i) col[strings::lower(header[i])] = i;
  for (const char* need : {"id", "gpu", "workload", "mode", "precision", "batch_per_gpu"})
    if (!col.count(need)) throw InputError(fmt::format("{}:1: missing column '{}'", where, need));
  std::vector<PublishedRow> rows;
  while (next_record(text, pos, line, cells, start, where)) {
    if (cells.size() == 1 && cells[0].empty()) continue;  // blank line
    if (cells.size() < header.size())
      throw InputError(fmt::format("{}:{}: {} fields, the header has {}", where, start, cells.size(), header.size()));
    auto get = [&](const char* name) -> std::string {
      auto it = col.find(name);
      return it == col.end() ? std::string() : cells[it->second];
    };
    PublishedRow r;
    r.line = start;
    // Text of a row reaches the terminal in validate's table: a control character is refused, as in every data file.
    for (const auto& c : cells)
      if (strings::has_control(c))
        throw InputError(fmt::format("{}:{}: a field holds a control character ('{}')", where, start, strings::printable(c)));
    r.id = get("id");
    r.gpu = get("gpu");
    r.workload = get("workload");
    r.mode = get("mode");
    r.precision = get("precision");
    r.options = get("options");
    r.unit = get("unit");
    r.source = get("source");
    const std::string n = get("n_gpus");
    const double gpus = n.empty() ? 1 : to_number(n, "n_gpus", where, start);
    if (gpus < 1 || gpus > 1e6 || gpus != std::floor(gpus))
      throw InputError(fmt::format("{}:{}: n_gpus '{}' is not a whole number from 1 to 1000000", where, start, strings::printable(n)));
    r.n_gpus = static_cast<int>(gpus);
    const std::string b = get("batch_per_gpu");
    const double batch = b.empty() ? 0 : to_number(b, "batch_per_gpu", where, start);
    if (batch < 0 || batch > 1e9 || batch != std::floor(batch))
      throw InputError(fmt::format("{}:{}: batch_per_gpu '{}' is not a whole number from 1 to 1e9 (or empty)", where, start,
                                   strings::printable(b)));
    r.batch = static_cast<std::int64_t>(batch);
    r.per = get("per");
    if (r.per.empty()) r.per = "gpu";
    if (r.per != "gpu" && r.per != "system")
      throw InputError(fmt::format("{}:{}: per '{}' is not gpu or system", where, start, strings::printable(r.per)));
    r.file = std::filesystem::path(where).stem().string();
    const std::string v = get("value");
    if (!v.empty()) {
      r.value = to_number(v, "value", where, start);
      // A measurement is a rate or a time: zero or less is a typo, not a row to leave out of the errors unsaid.
      if (*r.value <= 0) throw InputError(fmt::format("{}:{}: value {} is not a positive measurement (leave it empty for a row without one)", where, start, strings::printable(v)));
    }
    if (r.id.empty()) throw InputError(fmt::format("{}:{}: empty id", where, start));
    rows.push_back(std::move(r));
  }
  return rows;
}

ValidationReport validate(const catalog::Catalog& cat, const std::vector<PublishedRow>& rows, const std::set<std::string>& held_out) {
  workload::Workloads workloads;
  return validate(cat, rows, held_out, workloads);
}

ValidatedRow validate_row(const catalog::Catalog& cat, const PublishedRow& r, const std::set<std::string>& held_out, workload::Workloads& workloads,
                          const StackRatios* stack) {
  ValidatedRow v;
  v.row = r;
  v.status = "unsupported";
  try {
    if (r.mode == "micro") {
      price_micro(cat, r, held_out, v);
      return v;
    }
    if (r.mode != "train" && !is_serving_mode(r.mode))
      throw InputError(fmt::format("mode '{}' is not priced (train, prefill, decode, infer and micro are)", strings::printable(r.mode)));
    const workload::Workload& w = workloads.get(r.workload, parse_option_pairs(r.options));
    if (workload::pricer_for(r.mode, w.family()) == workload::Pricer::serving) {
      price_serving(cat, w, r, stack, v);
      return v;
    }
    std::string why;
    PredictRequest req;
    req.options = model_options(r, why);
    if (!why.empty()) throw InputError(why);
    req.workload = r.workload;
    req.gpu = r.gpu;
    req.gpus = r.n_gpus;
    req.batch = r.batch;
    req.precision = parse_precision(r.precision);
    req.training = r.mode == "train";
    req.stack = stack;
    const Prediction p = predict(cat, w, req);
    const double scale = r.per == "system" ? r.n_gpus : 1.0;
    v.predicted = p.throughput * scale;
    v.band_low = p.band_low * scale;
    v.band_high = p.band_high * scale;
    v.predicted_unit = p.unit;
    v.engine = p.framework;
    v.format = std::string(precision_name(p.plan.precision));
    v.batch = p.batch;
    v.batch_chosen = r.batch == 0;
    if (r.batch > 0) {
      v.memory_peak_gib = p.memory.peak_bytes / 1073741824.0;
      v.memory_capacity_gib = p.memory.capacity_bytes / 1073741824.0;
    }
    if (!r.unit.empty() && r.unit != p.unit) {
      v.reason = fmt::format("row unit {} differs from the prediction's {}", r.unit, p.unit);
    } else {
      v.status = "ok";
      if (r.value && *r.value > 0) v.ape = std::fabs(v.predicted - *r.value) / *r.value;
    }
  } catch (const InputError& e) {
    v.reason = e.what();
  }
  return v;
}

namespace {

/// The errors over every scored row: median and mean, coverage, the band and how many rows it holds.
void summarize_errors(ValidationReport& rep) {
  std::vector<double> apes, logs, serving_logs;
  std::size_t inside = 0;
  for (const auto& v : rep.rows)
    if (v.ape) {
      apes.push_back(*v.ape);
      // The band is for workload predictions: microbenchmark figures (often the data's own) stay out of it;
      // serving has a band of its own.
      if (v.serving) serving_logs.push_back(std::log(v.predicted / *v.row.value));
      else if (v.row.mode != "micro") logs.push_back(std::log(v.predicted / *v.row.value));
      inside += *v.row.value >= v.band_low && *v.row.value <= v.band_high;
    }
  const auto s = stats::summarize(apes);
  rep.median_ape = s.median;
  rep.mean_ape = s.mean;
  rep.coverage = rep.rows.empty() ? 0 : static_cast<double>(apes.size()) / static_cast<double>(rep.rows.size());
  rep.in_band = apes.empty() ? 0 : static_cast<double>(inside) / static_cast<double>(apes.size());
  // The band is a promise about rows it never saw: split-conformal order statistics hold at least 80% of a new row
  // drawn like these, where interpolated 10th and 90th percentiles hold less than 80% of the very rows they came from.
  const stats::Interval band = stats::conformal_interval(logs, 0.2);
  rep.log_err_p10 = band.low;
  rep.log_err_p90 = band.high;
  rep.band_rows = static_cast<int>(logs.size());
  rep.serving_band_rows = static_cast<int>(serving_logs.size());
  if (!serving_logs.empty()) {
    const stats::Interval serving = stats::conformal_interval(serving_logs, 0.2);
    rep.serving_log_err_p10 = serving.low;
    rep.serving_log_err_p90 = serving.high;
  }
}

/// Cross-GPU ratios, the answer to "how much faster is X than Y".
void pair_ratios(ValidationReport& rep) {
  // Cross-GPU ratios: rows of one configuration (configuration_keys) on different GPUs.
  const std::vector<std::string> keys = configuration_keys(rep.rows);
  std::vector<double> ratio_apes;
  for (std::size_t i = 0; i < rep.rows.size(); ++i)
    for (std::size_t j = i + 1; j < rep.rows.size(); ++j) {
      const auto& a = rep.rows[i];
      const auto& b = rep.rows[j];
      if (!a.ape || !b.ape || a.row.gpu == b.row.gpu || keys[i] != keys[j]) continue;
      RatioError e;
      e.a = a.row.id;
      e.b = b.row.id;
      e.measured = *a.row.value / *b.row.value;
      e.predicted = a.predicted / b.predicted;
      e.ape = std::fabs(e.predicted / e.measured - 1.0);
      ratio_apes.push_back(e.ape);
      rep.ratios.push_back(e);
    }
  const auto rs = stats::summarize(ratio_apes);
  rep.ratio_median_ape = rs.median;
  rep.ratio_mean_ape = rs.mean;
}

void summarize_sources(ValidationReport& rep) {
  // Per source file.
  std::vector<std::string> files;
  for (const auto& v : rep.rows)
    if (std::find(files.begin(), files.end(), v.row.file) == files.end()) files.push_back(v.row.file);
  std::map<std::string, std::string> file_of;
  for (const auto& v : rep.rows) file_of[v.row.id] = v.row.file;
  for (const auto& f : files) {
    SourceSummary sum;
    sum.file = f;
    std::vector<double> fa, fr;
    int in = 0;
    for (const auto& v : rep.rows) {
      if (v.row.file != f) continue;
      ++sum.rows;
      if (!v.ape) continue;
      fa.push_back(*v.ape);
      in += *v.row.value >= v.band_low && *v.row.value <= v.band_high;
    }
    for (const auto& e : rep.ratios)
      if (file_of[e.a] == f) fr.push_back(e.ape);
    sum.scored = static_cast<int>(fa.size());
    sum.coverage = sum.rows ? static_cast<double>(sum.scored) / sum.rows : 0;
    sum.median_ape = fa.empty() ? 0 : stats::summarize(fa).median;
    sum.ratio_pairs = static_cast<int>(fr.size());
    sum.ratio_median_ape = fr.empty() ? 0 : stats::summarize(fr).median;
    sum.in_band = fa.empty() ? 0 : static_cast<double>(in) / static_cast<double>(fa.size());
    rep.sources.push_back(sum);
  }
}

}  // namespace

ValidationReport report_of(std::vector<ValidatedRow> rows) {
  ValidationReport rep;
  rep.rows = std::move(rows);
  for (const auto& v : rep.rows)
    if (v.status == "ok" && v.memory_peak_gib && v.memory_capacity_gib) {
      ++rep.memory_rows;
      if (*v.memory_peak_gib > *v.memory_capacity_gib) rep.memory_over.push_back(v.row.id);
    }
  summarize_errors(rep);
  pair_ratios(rep);
  summarize_sources(rep);
  return rep;
}

ValidationReport validate(const catalog::Catalog& cat, const std::vector<PublishedRow>& rows, const std::set<std::string>& held_out,
                          workload::Workloads& workloads) {
  std::vector<ValidatedRow> priced;
  for (const auto& r : rows) priced.push_back(validate_row(cat, r, held_out, workloads));
  return report_of(std::move(priced));
}

}  // namespace gpuvs::perf
