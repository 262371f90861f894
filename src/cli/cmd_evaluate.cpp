// SPDX-License-Identifier: Apache-2.0
// gpuvs evaluate: the main job. Probes this machine, runs the quick benchmarks, trains the seed workload
// briefly on the best local device, calibrates the performance model with what it measured (when a
// catalog GPU was measured), predicts the workload on every catalog GPU, runs the advisor, prints a
// summary, writes the HTML report and stores the run in the results history.
#include <fmt/format.h>

#include <limits>

#include <chrono>
#include <cmath>
#include <ctime>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "advise/advice_json.hpp"
#include "advise/advisor.hpp"
#include "bench/cluster_benchmarks.hpp"
#include "bench/gpu_benchmarks.hpp"
#include "bench/registry.hpp"
#include "bench/results_json.hpp"
#include "catalog/catalog.hpp"
#include "catalog/featured.hpp"
#include "cli/calibration_file.hpp"
#include "cli/measured_input.hpp"
#include "cli/assumption_options.hpp"
#include "cli/request_options.hpp"
#include "cli/commands.hpp"
#include "cli/output.hpp"
#include "cli/devices_json.hpp"
#include "cli/validators.hpp"
#include "core/clock.hpp"
#include "core/error.hpp"
#include "core/files.hpp"
#include "core/strings.hpp"
#include "core/units.hpp"
#include "dist/world.hpp"
#include "engine/data.hpp"
#include "engine/param_store.hpp"
#include "engine/trainer.hpp"
#include "gpuvs_revision.hpp"
#include "hw/cpu.hpp"
#include "hw/match.hpp"
#include "hw/nvidia.hpp"
#include "import/model_files.hpp"
#include "models/builder.hpp"
#include "models/networks.hpp"
#include "models/sequential_presets.hpp"
#include "perf/calibration.hpp"
#include "perf/parallel.hpp"
#include "perf/predict.hpp"
#include "perf/serving.hpp"
#include "perf/weight_format.hpp"
#include "perf/system_facts.hpp"
#include "report/evaluate_record.hpp"
#include "report/report.hpp"
#include "store/store.hpp"
#include "workload/resolve.hpp"
#include "workload/workload.hpp"

namespace gpuvs::cli {

namespace {

using json = nlohmann::json;

struct EvaluateArgs {
  std::string workload = "seed-mlp", precision, report = "gpuvs-report.html", db, scenario, options;  // precision "": the default rule
  std::string facts;  // --facts FILE
  std::vector<std::string> measured;  // --measured FILE|SPEC: your stack, calibrated and carried to every card
  std::string stack_file;             // --stack FILE (gpuvs calibrate --save)
  AssumptionArgs costs;
  std::int64_t epochs = 2, rows = 20000;
  int threads = 0;
  bool no_report = false, force = false;
  bool workload_given = false, options_given = false, precision_given = false;  // on the command line, over a scenario's
  Output out = Output::table;
};

class Steps {
 public:
  explicit Steps(int total, bool quiet = false) : total_(total), quiet_(quiet), t0_(std::chrono::steady_clock::now()) {}
  void begin(const std::string& what) {
    ++n_;
    if (quiet_) return;
    fmt::print(stderr, "[{}/{}] {} ({:.0f} s)\n", n_, total_, strings::escape_control(what), seconds());  // names from files: \xNN
  }
  double seconds() const { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count(); }

 private:
  int total_, n_ = 0;
  bool quiet_ = false;
  std::chrono::steady_clock::time_point t0_;
};

/// One line per epoch, from rank 0 alone under MPI (the epoch's figures are the whole job's).
class QuietObserver final : public engine::TrainObserver {
 public:
  explicit QuietObserver(bool lead) : lead_(lead) {}
  void on_epoch_end(const engine::EpochResult& e) override {
    if (!lead_) return;
    fmt::print(stderr, "      epoch {}: loss {:.4f}, accuracy {:.4f}, {} samples/s\n", e.epoch, e.loss, e.accuracy,
               units::format_si(e.samples_per_s));
  }

 private:
  bool lead_;
};

const bench::Measurement* figure(const std::vector<bench::Measurement>& r, const std::string& key) {
  for (const auto& m : r)
    if (m.key == key && m.status == "ok") return &m;
  return nullptr;
}

/// The local device's roofline: peak and bandwidth from the benchmarks, the benchmark points, and the
/// training step's ops (CPU) placed by their measured FLOP/s and graph arithmetic intensity.
json roofline(const std::vector<bench::Measurement>& results, const engine::TrainResult& tr, const std::string& workload,
              const hw::CpuInfo& cpu) {
  json r;
  const auto* gemm = figure(results, "cuda.gemm.bf16");
  const auto* copy = figure(results, "cuda.mem.copy");
  if (gemm && copy) {  // a GPU was measured: its roofline
    r = {{"device", gemm->device}, {"peak_gflops", gemm->median * 1e3}, {"bandwidth_gbs", copy->median}, {"workload", workload}};
    json pts = json::array();
    for (const char* k : {"cuda.gemm.fp32", "cuda.gemm.tf32", "cuda.gemm.bf16", "cuda.gemm.fp8"})
      if (const auto* m = figure(results, k)) pts.push_back({{"label", k}, {"intensity", 8192.0 / 6}, {"gflops", m->median * 1e3}});
    pts.push_back({{"label", "cuda.mem.copy"}, {"intensity", 1.0 / 8}, {"gflops", copy->median / 8}});
    r["points"] = pts;
    r["ops"] = json::array();
    return r;
  }
  const auto* sgemm = figure(results, "cpu.gemm.sgemm");
  const auto* fma = figure(results, "cpu.fma.peak.1t");
  const auto* triad = figure(results, "cpu.stream.triad");
  if (!sgemm || !triad) return json();
  const double peak = std::max(sgemm->median, fma ? fma->median * cpu.cores : 0.0);
  r = {{"device", fmt::format("CPU {} ({} cores)", cpu.model, cpu.cores)}, {"peak_gflops", peak}, {"bandwidth_gbs", triad->median},
       {"workload", workload}};
  json pts = json::array();
  // Triad: 2 FLOP per 24 bytes; SGEMM n^3 at quick size 1024: 2n^3 / (3 * 4 n^2) = n/6 FLOP/byte.
  pts.push_back({{"label", "cpu.stream.triad"}, {"intensity", 2.0 / 24}, {"gflops", triad->median * 2 / 24}});
  pts.push_back({{"label", "cpu.gemm.sgemm"}, {"intensity", 1024.0 / 6}, {"gflops", sgemm->median}});
  if (fma) pts.push_back({{"label", fmt::format("cpu.fma.peak.1t x {} cores", cpu.cores)}, {"intensity", 512.0}, {"gflops", fma->median * cpu.cores}});
  r["points"] = pts;
  json ops = json::array();
  for (const auto& op : tr.op_profile) {
    const double flops = op.matrix_flops + op.vector_flops;
    if (flops <= 0 || op.bytes <= 0 || op.seconds_per_step <= 0) continue;
    ops.push_back({{"name", op.name + " (" + op.op + ")"}, {"intensity", flops / op.bytes}, {"gflops", flops / op.seconds_per_step / 1e9}});
  }
  r["ops"] = ops;
  return r;
}

/// Under MPI, the cluster's measured network replaces the catalog's for a decoder's training plans past one server
/// (the scenario's, unless it names one); its record, or why there is none.
json use_measured_fabric(const json& cluster, const models::NetworkInfo& net, advise::Scenario& scenario, const advise::Assumptions& a) {
  const auto m = bench::measured_network(cluster);
  if (!m) return {{"note", "one node: no inter-node link to measure; multi-node predictions keep the catalog's network figures"}};
  perf::register_fabric({m->id, m->name, m->source, m->gbs_per_gpu, m->latency_s, 0});
  // The advisor's rule: a decoder's training (full fine-tuning too) plans from two servers up to max_gpus.
  const bool trains = scenario.task == "train" || (scenario.task == "finetune" && scenario.finetune == "full");
  const std::string what = scenario.task == "finetune" ? scenario.finetune + " fine-tuning" : scenario.task;
  std::string not_applied;  // why no plan here crosses it, or ""
  if (!scenario.network.empty())
    not_applied = fmt::format("the scenario names network {}", scenario.network);
  else if (net.family != models::Family::decoder || !trains)
    not_applied = fmt::format("no plan for {} {} runs past one server (a decoder's full training plans do)", what, scenario.workload);
  else if (a.get("max_gpus") < 2 * a.get("max_gpus_per_server"))
    not_applied = fmt::format("no plan runs past one server (max_gpus {})", static_cast<int>(a.get("max_gpus")));
  if (!not_applied.empty())
    return {{"note", fmt::format("{}; not applied: {}", m->name, not_applied)}};
  scenario.network = m->id;
  return {{"id", m->id}, {"name", m->name}, {"gbs_per_gpu", m->gbs_per_gpu}, {"latency_us", m->latency_s * 1e6}, {"source", m->source}};
}

json training_record(const engine::TrainResult& tr, const std::string& measured_name, std::int64_t batch) {
  json history = json::array();
  for (const auto& e : tr.history)
    history.push_back({{"epoch", e.epoch}, {"loss", e.loss}, {"accuracy", e.accuracy}, {"val_loss", e.val_loss},
                       {"val_accuracy", e.val_accuracy}, {"samples_per_s", e.samples_per_s}});
  return {{"workload", measured_name}, {"device", tr.device}, {"threads", tr.threads}, {"gemm", tr.gemm},
          {"samples_per_s", tr.samples_per_s}, {"step_time_median_s", tr.step_time_median_s}, {"batch", batch}, {"history", history}};
}

/// The model calibrated by this run: the engine's own per-op CUDA-event timings of the training step
/// against the model for the same GPU (engine_ops), and the quick benchmarks' classes where a catalog GPU
/// was measured. The calibration, and its record (null when there is neither).
std::pair<std::optional<perf::Calibration>, json> calibrate(const std::vector<bench::Measurement>& results, const engine::TrainResult& tr,
                                                             const models::ModelSpec& spec, std::int64_t batch, const hw::NvidiaReport& nv,
                                                             const catalog::Catalog& cat) {
  json calibration = nullptr;
  json engine_ops = json::array();
  if (tr.device != "cpu" && !tr.op_profile.empty() && !nv.gpus.empty() && !nv.gpus.front().catalog_id.empty()) {
    const ir::Graph g = models::build_graph(spec, {batch, ir::DType::f32, models::Mode::train});
    std::vector<double> measured(g.size(), 0.0);
    for (const auto& op : tr.op_profile)
      if (const ir::NodeId id = g.find(op.name); id != ir::kNone) measured[static_cast<std::size_t>(id)] = op.seconds_per_step;
    const catalog::Gpu& local = cat.find(nv.gpus.front().catalog_id);
    for (const auto& c : perf::engine_op_ratios(g, measured, local, perf::plan_precision(perf::Precision::tf32, local)))
      engine_ops.push_back({{"class", c.op_class}, {"measured_us", c.measured}, {"predicted_us", c.predicted}, {"ratio", c.ratio}});
  }
  if (!engine_ops.empty()) calibration = {{"engine_ops", engine_ops}};
  std::optional<perf::Calibration> cal = calibration_from(results, true, cat, "this run's quick benchmarks");
  if (cal) {
    calibration["measured_on"] = cal->gpu_id;
    calibration["classes"] = calibration_classes_json(*cal, true);  // measured here: applied to this card's prediction
  }
  return {std::move(cal), std::move(calibration)};
}

/// What the predictions price: the scenario's task (training, fine-tuning by its method, serving) and its
/// sequence over the workload's own options, so that the tables, the charts, the headline and the advice all
/// answer the scenario's question.
struct PricedTask {
  std::map<std::string, std::string> options;
  bool training = true;
  bool serving = false;  // a decoder served: each card priced as predict --mode infer and the advice price it
  std::string words;  // "training", "LoRA fine-tuning", "inference"
};

PricedTask priced_task(const advise::Scenario& s, const std::map<std::string, std::string>& workload_options, const models::NetworkInfo& net) {
  PricedTask t;
  t.options = workload_options;
  t.training = s.task != "infer";
  t.words = s.task == "infer" ? "inference" : s.task == "finetune" ? (s.finetune == "full" ? "full fine-tuning" : s.finetune + " fine-tuning") : "training";
  if (s.task == "finetune" && s.finetune != "full" && net.layers > 0) t.options["finetune"] = s.finetune;
  if (s.seq_len > 0 && net.default_seq_len > 0) t.options["seq_len"] = std::to_string(s.seq_len);
  if (!s.release.empty()) t.options["release"] = s.release;  // as the advice prices its options
  if (!s.framework.empty()) t.options["framework"] = s.framework;
  // A decoder served alone; tenants sharing cards are priced as graphs, as the advice prices them.
  t.serving = !t.training && s.tenants == 1 && workload::pricer_for("infer", net.family) == workload::Pricer::serving;
  return t;
}

/// The cost of a million of the prediction's units at the hour prices: the rent where the card can be rented, else
/// owning it (as compare and advise price a GPU-hour), and owning it for every card with a list price (the one basis
/// the report's cost chart compares on).
void price_entry(json& e, const catalog::Gpu& g, double throughput, const perf::GpuHourPrices& hour_prices) {
  const double hours_per_million = 1e6 / throughput / 3600.0;
  if (const auto rent = hour_prices.rent(g)) {
    e["usd_per_million"] = hours_per_million * *rent;
    e["cost_basis"] = "cloud rent";
  } else if (const auto own = hour_prices.own(g)) {
    e["usd_per_million"] = hours_per_million * *own;
    e["cost_basis"] = "owned";
  }
  if (const auto own = hour_prices.own(g)) e["owned_usd_per_million"] = hours_per_million * *own;
}

/// The request one card serves the scenario's decoder with, as the advice prices one replica (advise::serving_request),
/// with this run's calibration; nullopt where the card runs neither the precision nor its fallback.
std::optional<perf::ServingRequest> card_request(const advise::Scenario& scenario, const workload::Workload& w, const catalog::Gpu& g,
                                                 const perf::Calibration* cal, std::string* instead = nullptr) {
  // A card without the precision serves the nearest it has, as the advice prices it (`instead` says so).
  const auto format = perf::serving_format_on(g, scenario.precision_named ? scenario.precision : std::string(), instead);
  if (!format) return std::nullopt;
  perf::ServingRequest req = advise::serving_request(scenario, w, g.id, *format);
  req.calibration = cal;
  return req;
}

/// A served decoder on every catalog GPU: the request the advice prices (advise::serving_request: the scenario's
/// engine, release and lengths, its precision's weights on each card, as many requests in flight as fit, one GPU),
/// so that a card's figure here is `gpuvs predict --mode infer`'s and the advice's for one replica. Throughput is
/// output tokens per second at that load.
json predict_catalog_serving(const catalog::Catalog& cat, const workload::Workload& w, const advise::Scenario& scenario,
                             const perf::Calibration* cal, const perf::GpuHourPrices& hour_prices, const std::string& local_gpu) {
  json predictions = json::array();
  for (const auto& g : cat.gpus()) {
    std::string instead;
    const auto req = card_request(scenario, w, g, cal, &instead);
    if (!req) continue;
    std::optional<perf::ServingPrediction> p;
    try {
      p = perf::predict_serving(cat, w, *req);
    } catch (const InputError&) {
      continue;  // a card that cannot serve it on one GPU (its math, the engine's formats)
    }
    json e = {{"gpu", g.id}, {"name", g.name}, {"precision", p->format}, {"throughput", p->throughput}, {"unit", p->unit},
              {"band_low", p->band_low}, {"band_high", p->band_high}, {"step_time_s", p->step.seconds}, {"batch", p->batch},
              {"in_flight", p->batch}, {"engine", p->engine}, {"prompt_len", p->prompt_len}, {"gen_len", p->gen_len},
              {"peak_gib", (p->weight_bytes + p->kv_bytes + p->runtime_bytes) / 1073741824.0}, {"capacity_gib", p->capacity_bytes / 1073741824.0},
              {"fits", p->fits}, {"calibrated", cal && cal->gpu_id == g.id}, {"local", g.id == local_gpu}, {"framework", p->engine}};
    if (!instead.empty() && p->quantized_from.empty()) e["precision_note"] = instead;
    if (req->stack) {  // your measurement applied where its engine and format match, and this card without it
      perf::ServingRequest plain = *req;
      plain.stack = nullptr;
      const bool applied = p->engine == req->stack->engine && p->format == req->stack->format;
      e["measured_applied"] = applied;
      e["without_measured"] = applied ? perf::predict_serving(cat, w, plain).throughput : p->throughput;
    }
    price_entry(e, g, p->throughput, hour_prices);
    e["scaling"] = json::array({{{"gpus", 1}, {"efficiency", 1.0}}});
    predictions.push_back(e);
  }
  return predictions;
}

/// Every catalog GPU's prediction of the task (at the named precision, else each card's default), with its cost
/// per million units at the hour prices (rented where the card can be, else owned), and, for training, 2/4/...
/// GPU scaling within a server; cards that cannot run it are left out.
json predict_catalog(const catalog::Catalog& cat, const workload::Workload& w, const PricedTask& task,
                     std::optional<perf::Precision> precision, const perf::Calibration* cal, const perf::GpuHourPrices& hour_prices,
                     const std::string& local_gpu, const perf::StackRatios* stack) {
  json predictions = json::array();
  for (const auto& g : cat.gpus()) {
    perf::PredictRequest req;
    req.workload = w.name();
    req.gpu = g.id;
    std::string instead;  // a card without the named precision runs the nearest it has, as the advice prices it
    if (precision) {
      req.precision = perf::precision_run(*precision, g, &instead);
      if (!req.precision) continue;
    }
    req.options = task.options;
    req.training = task.training;
    req.calibration = cal;
    req.stack = stack;
    std::optional<perf::Prediction> p;
    try {
      p = perf::predict(cat, w, req);
    } catch (const InputError&) {
      continue;  // a card that cannot run it (the named precision, the workload's memory plan)
    }
    json e = {{"gpu", g.id}, {"name", g.name}, {"precision", perf::precision_name(p->plan.precision)}, {"throughput", p->throughput}, {"unit", p->unit},
              {"band_low", p->band_low}, {"band_high", p->band_high}, {"step_time_s", p->step_s}, {"batch", p->batch},
              {"peak_gib", p->memory.peak_bytes / 1073741824.0}, {"capacity_gib", p->memory.capacity_bytes / 1073741824.0},
              {"fits", p->memory.fits}, {"calibrated", p->calibrated}, {"local", g.id == local_gpu}, {"framework", p->framework}};
    if (!instead.empty()) e["precision_note"] = instead;
    if (stack) {  // your measurement applied where its software and format match, and this card without it
      perf::PredictRequest plain = req;
      plain.stack = nullptr;
      e["measured_applied"] = p->stack_applied;
      e["without_measured"] = p->stack_applied ? perf::predict(cat, w, plain).throughput : p->throughput;
    }
    price_entry(e, g, p->throughput, hour_prices);
    json scaling = json::array();
    scaling.push_back({{"gpus", 1}, {"efficiency", 1.0}});
    for (int n = 2; task.training && n <= perf::system_facts().gpus_per_server; n *= 2) {  // data parallel within one server
      perf::PredictRequest rn = req;
      rn.gpus = n;
      try {
        const auto pn = perf::predict(cat, w, rn);
        scaling.push_back({{"gpus", n}, {"efficiency", pn.throughput / p->throughput}});
        if (n == 2) e["link"] = pn.link.kind;
      } catch (const InputError&) {
        break;
      }
    }
    e["scaling"] = scaling;
    predictions.push_back(e);
  }

  return predictions;
}

/// This machine, measured, against the predictions: which catalog GPUs are predicted slower, the fastest,
/// and the seed question's consumer card when it is among the slower (data/featured-gpus.toml); its own
/// cost per million samples is electricity alone. The record and the verdict in words.
std::pair<json, std::string> measured_here(const advise::MeasuredMachine& here, const json& predictions, const catalog::Catalog& cat,
                                           const advise::Assumptions& assumptions, double step_time_s) {
  std::string verdict;
  std::vector<std::string> slower;  // catalog GPUs predicted slower than this machine measured
  const json* fastest = nullptr;
  for (const auto& e : predictions) {
    if (e["throughput"].get<double>() <= here.throughput) slower.push_back(e["gpu"].get<std::string>());
    if (!fastest || e["throughput"].get<double>() > (*fastest)["throughput"].get<double>()) fastest = &e;
  }
  // The seed question's consumer card, named when this machine beats it (data/featured-gpus.toml).
  const catalog::Gpu& consumer = cat.find(catalog::featured().seed_question.front());
  const auto it = std::find_if(predictions.begin(), predictions.end(), [&](const json& e) { return e["gpu"] == consumer.id; });
  if (slower.empty() && fastest)
    verdict = fmt::format("Every catalog GPU is predicted faster; the fastest, {}, by {:.1f}x.", (*fastest)["gpu"].get<std::string>(),
                          (*fastest)["throughput"].get<double>() / here.throughput);
  else if (fastest)
    verdict = fmt::format("It is as fast as or faster than the predicted {} of {} catalog GPUs ({}{}){}: for this model, buying one of those "
                          "would not speed training up. The fastest, {}, is predicted {:.1f}x faster.",
                          slower.size(), predictions.size(), strings::join(std::vector<std::string>(slower.begin(), slower.begin() + std::min<std::size_t>(slower.size(), 6)), ", "),
                          slower.size() > 6 ? ", …" : "",
                          it != predictions.end() && (*it)["throughput"].get<double>() <= here.throughput
                              ? fmt::format(", the {} among them at {} {}", consumer.name, units::format_si((*it)["throughput"].get<double>()), (*it)["unit"].get<std::string>())
                              : "",
                          (*fastest)["gpu"].get<std::string>(), (*fastest)["throughput"].get<double>() / here.throughput);
  const double hours_per_million = 1e6 / here.throughput / 3600.0;
  const json measured = {{"label", "this machine (measured)"}, {"device", here.name}, {"workload", here.workload}, {"precision", here.precision},
              {"throughput", here.throughput}, {"unit", "samples/s"}, {"batch", here.batch}, {"step_time_s", step_time_s},
              {"peak_gib", here.peak_gib}, {"capacity_gib", here.capacity_gib},
              {"usd_per_million", hours_per_million * assumptions.get("this_machine_watts") / 1000.0 * assumptions.get("electricity_usd_per_kwh")},
              {"cost_basis", fmt::format("owned, electricity only at {:g} W", assumptions.get("this_machine_watts"))},
              {"predicted_slower", slower}, {"verdict", verdict}};
  return {measured, verdict};
}

/// LLM serving (decoders): each card's latency against load under in-flight batching, for the report's
/// serving charts — the request the advice and the predictions price (advise::serving_request: the scenario's
/// engine, release and lengths, its precision's weights on each card, the measured stack), one GPU.
json serving_curves(const catalog::Catalog& cat, const workload::Workload& w, const advise::Scenario& scenario, const perf::Calibration* cal) {
  if (workload::pricer_for("infer", w.family()) != workload::Pricer::serving) return json();
  json curves = json::array();
  std::string engine, format;
  std::int64_t prompt = 0, gen = 0;
  for (const auto& g : cat.gpus()) {
    const auto sr = card_request(scenario, w, g, cal);
    if (!sr) continue;
    std::vector<perf::ServingPrediction> curve;
    try {
      curve = perf::serving_load_curve(cat, w, *sr);
    } catch (const InputError&) {
      continue;  // the card cannot serve it on one GPU (its math, its memory)
    }
    if (curve.empty() || !curve.back().fits) continue;
    json points = json::array();
    for (const auto& q : curve)
      points.push_back({{"in_flight", q.batch}, {"output_tokens_per_s", q.throughput},
                        {"requests_per_s", q.throughput / static_cast<double>(q.gen_len)}, {"ttft_p99_s", q.ttft_p99_s},
                        {"tpot_s", q.tpot_s}, {"request_p99_s", q.request_p99_s}});
    curves.push_back({{"gpu", g.id}, {"points", points}});
    engine = curve.back().engine;
    format = curve.back().format;
    prompt = curve.back().prompt_len;
    gen = curve.back().gen_len;
  }
  if (curves.empty()) return json();
  return {{"engine", engine}, {"format", format}, {"prompt_len", prompt}, {"gen_len", gen}, {"curves", curves}};
}

/// This machine as the advisor ranks it: what the training run measured, on the CPU or its GPU.
advise::MeasuredMachine machine_measured(const engine::TrainResult& tr, const std::string& workload, std::int64_t batch, const hw::CpuInfo& cpu,
                                         const hw::NvidiaReport& nv) {
  advise::MeasuredMachine here;
  here.name = tr.device == "cpu" ? fmt::format("{} ({} cores), CPU, {} threads", cpu.model, cpu.cores, tr.threads) : tr.device;
  here.workload = workload;
  here.precision = tr.device == "cpu" ? "fp32" : "the GPU engine's default (tf32)";
  here.throughput = tr.samples_per_s;
  here.batch = batch;
  here.peak_gib = static_cast<double>(tr.peak_memory_bytes) / units::kGiB;
  here.capacity_gib = tr.device == "cpu" ? static_cast<double>(cpu.memory_bytes) / units::kGiB
                                         : (nv.gpus.empty() ? 0.0 : static_cast<double>(nv.gpus.front().memory_total_bytes) / units::kGiB);
  return here;
}

/// The summary's line on a run across MPI ranks: its nodes, the all-reduce bus bandwidth at the largest
/// size, the slowest link, and the network multi-node plans were priced on.
std::string cluster_line(const json& cluster, const json& network, const dist::World& world, std::int64_t batch) {
  double busbw = 0;
  for (const auto& c : cluster["collectives"])
    if (c["op"] == "allreduce") busbw = c["busbw_gbs"].get<double>();  // the largest size, swept last
  return fmt::format("Cluster: {} ranks on {} node{} trained data parallel (global batch {}); all-reduce bus bandwidth {:.2f} GB/s at "
                     "the largest size{}; {}",
                     world.size, world.nodes, world.nodes == 1 ? "" : "s", batch * world.size, busbw,
                     cluster.contains("slowest_link") ? fmt::format(", slowest link rank {} <-> rank {} at {:.2f} GB/s",
                                                                    cluster["slowest_link"]["a"].get<int>(), cluster["slowest_link"]["b"].get<int>(),
                                                                    cluster["slowest_link"]["bandwidth_gbs"].get<double>())
                                                      : "",
                     network.contains("name") ? "multi-node plans priced on " + network["name"].get<std::string>()
                                              : network["note"].get<std::string>());
}

/// The headline: the fastest and the cheapest among the cards the workload fits on (a card that does not fit
/// is neither), costs per million or billion (advise::cost_scale) of the unit the throughput counts (tokens for a decoder,
/// not sequences).
std::string predictions_line(const json& predictions, const std::string& workload) {
  const json* fastest = nullptr;
  const json* cheapest = nullptr;
  std::size_t fitting = 0;
  for (const auto& e : predictions) {
    if (!e.contains("fits") || e["fits"] != true) continue;
    ++fitting;
    if (!fastest || e["throughput"].get<double>() > (*fastest)["throughput"].get<double>()) fastest = &e;
    if (e.contains("usd_per_million") && (!cheapest || e["usd_per_million"].get<double>() < (*cheapest)["usd_per_million"].get<double>()))
      cheapest = &e;
  }
  const auto batch = [](const json& e) { return e.contains("batch") && e["batch"].is_number_integer() ? e["batch"].get<std::int64_t>() : 0; };
  if (!fastest && !predictions.empty() && predictions[0].contains("in_flight"))
    return fmt::format("Predicted {} served on one GPU: it fits on none of the {} catalog GPUs that run its weights (the advice splits it "
                       "over 2, 4 or 8 GPUs a replica)",
                       workload, predictions.size());
  if (!fastest)
    return fmt::format("Predicted {} at batch {} per GPU: it fits on none of the {} catalog GPUs (the advice searches batch and recompute per card)",
                       workload, predictions.empty() ? 0 : batch(predictions[0]), predictions.size());
  const std::string unit = (*fastest)["unit"].get<std::string>();
  const std::string per = unit.size() > 2 && unit.ends_with("/s") ? unit.substr(0, unit.size() - 2) : unit;
  // Dollars as the report's cost chart shows them (owning each card where the record prices that for every card)
  // and as advise and compare do: per billion where every figure is under a cent per million.
  bool owned_basis = false;
  for (const auto& e : predictions) owned_basis = owned_basis || e.contains("owned_usd_per_million");
  double largest = 0;
  for (const auto& e : predictions)
    if (e.contains(owned_basis ? "owned_usd_per_million" : "usd_per_million"))
      largest = std::max(largest, e[owned_basis ? "owned_usd_per_million" : "usd_per_million"].get<double>());
  const advise::CostScale scale = advise::cost_scale(largest);
  const auto cost = [&](const json& e) {
    return fmt::format("{} per {} {}, {}", units::format_usd(scale.factor * e["usd_per_million"].get<double>()), scale.per, per,
                       e["cost_basis"].get<std::string>());
  };
  if (fastest->contains("in_flight"))  // served: each card at as many requests in flight as it holds
    return fmt::format("Predicted {} served by {}, requests of {} + {} tokens, as many in flight as each card holds (fits on {} of {} GPUs): "
                       "fastest {} at {} {} ({} in flight){}",
                       workload, (*fastest)["engine"].get<std::string>(), (*fastest)["prompt_len"].get<std::int64_t>(),
                       (*fastest)["gen_len"].get<std::int64_t>(), fitting, predictions.size(), (*fastest)["gpu"].get<std::string>(),
                       units::format_si((*fastest)["throughput"].get<double>()), unit, batch(*fastest),
                       cheapest ? fmt::format("; cheapest at full load: {} ({})", (*cheapest)["gpu"].get<std::string>(), cost(*cheapest)) : "");
  return fmt::format("Predicted {} at batch {} per GPU (fits on {} of {} GPUs{}): fastest {} at {} {} per GPU{}", workload, batch(*fastest),
                     fitting, predictions.size(), fitting < predictions.size() ? "; the advice searches batch and recompute per card" : "",
                     (*fastest)["gpu"].get<std::string>(), units::format_si((*fastest)["throughput"].get<double>()), unit,
                     cheapest ? fmt::format("; cheapest: {} ({})", (*cheapest)["gpu"].get<std::string>(), cost(*cheapest)) : "");
}

/// What this machine measured in the run, and what it stands for.
struct LocalRun {
  hw::CpuInfo cpu;
  hw::NvidiaReport nv;
  std::vector<bench::Measurement> results;
  engine::TrainResult tr;
  std::int64_t batch = perf::system_facts().batch_for(models::Family::mlp);  // the dense family's default: what predictions assume
  std::string measured_name;     // what trained: the workload, or the seed model in its place
  std::string measured_instead;  // why the seed model trained instead, or ""
  std::string local_gpu;         // the catalog id of the first local GPU, or ""
};

std::vector<std::string> summary_lines(const LocalRun& m, const json& cluster, const json& network, const json& predictions, const std::string& workload,
                                       const advise::MeasuredMachine* here, const std::string& verdict,
                                       const std::optional<perf::Calibration>& cal, const std::string& cal_withheld,
                                       const advise::Advice& advice, const std::optional<perf::StackCalibration>& stack) {
  std::vector<std::string> summary;
  summary.push_back(fmt::format("This machine: {} ({} cores); GPU: {}", m.cpu.model, m.cpu.cores,
                                m.nv.status == "ok" ? fmt::format("{} x {}", m.nv.gpus.size(), m.nv.gpus.front().name) : "none (" + m.nv.detail + ")"));
  if (!m.measured_instead.empty()) summary.push_back(m.measured_instead);
  auto count = [&](const char* status) { return std::count_if(m.results.begin(), m.results.end(), [&](const auto& r) { return r.status == status; }); };
  summary.push_back(fmt::format("Measured: {} trains at {} samples/s on {}; {} benchmarks ran, {} waived, {} failed", m.measured_name,
                                units::format_si(m.tr.samples_per_s), m.tr.device == "cpu" ? fmt::format("the CPU ({} threads)", m.tr.threads) : m.tr.device,
                                count("ok"), count("waived"), count("FAILED")));
  if (!cluster.is_null()) summary.push_back(cluster_line(cluster, network, dist::world(), m.batch));
  if (!predictions.empty()) summary.push_back(predictions_line(predictions, workload));
  if (here) summary.push_back(fmt::format("This machine (measured): {} samples/s at batch {}. {}", units::format_si(here->throughput), here->batch, verdict));
  summary.push_back(!cal                  ? std::string("Not calibrated: no catalog GPU was measured here (predictions use the class defaults)")
                    : cal_withheld.empty() ? fmt::format("Calibrated on the measured {}", cal->gpu_id)
                                           : fmt::format("Measured {}'s benchmarks, {}", cal->gpu_id, cal_withheld));
  if (stack)
    summary.push_back(fmt::format("Your measured stack, {} {}: matrix kernels x{:.3f}, memory-bound kernels x{:.3f}, fixed costs x{:.3f}, on "
                                  "every card and option that runs it{}",
                                  stack->ratios.engine, stack->ratios.format, stack->ratios.gemm, stack->ratios.memory, stack->ratios.fixed,
                                  stack->solved_with ? fmt::format(" (solved with this run's calibration of {})", stack->solved_with->gpu_id) : ""));
  summary.push_back(advice.ranked.empty() ? "Advice: no option meets every requirement (see the ruled-out list)" : "Advice: #1 " + advice.ranked.front().reason);
  return summary;
}

/// Stores the run in the history, writes its report, and prints where both went.
void store_and_report(const EvaluateArgs& a, store::Store& db, const std::filesystem::path& db_path, const report::EvaluateRecord& record,
                      const LocalRun& m, const advise::Advice& advice, double seconds) {
  store::Run run;
  run.created_utc = clock::utc_now();
  run.kind = "evaluate";
  run.gpuvs_version = record.gpuvs;
  run.host = m.cpu.model;
  run.gpu = m.nv.status == "ok" ? m.nv.gpus.front().name + (m.local_gpu.empty() ? "" : " (" + m.local_gpu + ")") : "none";
  run.summary = fmt::format("{}: {} samples/s {} on {}; {}", a.workload, units::format_si(m.tr.samples_per_s), m.measured_name, m.tr.device == "cpu" ? "CPU" : "GPU",
                            advice.ranked.empty() ? "no option" : "#1 " + advice.ranked.front().gpu_id);
  run.payload = report::to_json(record);
  for (const auto& r : m.results) run.figures.push_back({r.key, r.device, r.unit, r.status, r.median, r.spec});
  const std::int64_t id = db.add(run);
  if (!a.no_report) {
    const json stored = {{"schema_version", 1}, {"id", id}, {"created_utc", run.created_utc}, {"payload", run.payload}};
    files::write_output(a.report, report::html_output("--report", a.force), report::render_html(stored));
  }
  if (a.out != Output::table) {  // csv, md: one row, the summary's lines joined
    print_structured(json{{"schema_version", 1}, {"run", id}, {"db", db_path.string()}, {"report", a.no_report ? json(nullptr) : json(a.report)},
                          {"summary", record.summary}, {"seconds", seconds}},
                     a.out);
  } else {
    for (const auto& line : record.summary) fmt::print("{}\n", strings::escape_control(line));
    fmt::print("Stored as run {} in {}{}\n", id, strings::escape_control(db_path.string()), a.no_report ? "" : "; report: " + strings::escape_control(a.report));
    fmt::print("Done in {:.0f} s\n", seconds);
  }
}

int run_evaluate(EvaluateArgs a) {
  const auto facts = install_facts(a.facts);  // first: everything after prices with them
  const auto engine_preferred = install_preferred_engine();  // a user's default engine, before anything is priced
  // Under MPI every rank measures the cluster and trains its shard; rank 0 alone predicts, advises, writes.
  const dist::World& world = dist::world();
  const bool lead = world.rank == 0;
  Steps steps(7, !lead);
  const std::filesystem::path db_path = a.db.empty() ? store::default_path() : std::filesystem::path(a.db);
  // Everything that can be refused is refused before any work: the report path, the database, the
  // workload, the precision, the scenario and assumptions.
  // The inputs are noted first, so that the report may land on none of them.
  files::note_input(db_path);
  if (!a.scenario.empty()) files::note_input(a.scenario);
  note_measured_inputs(a.measured);
  catalog::Catalog cat = catalog::Catalog::builtin();
  advise::Assumptions assumptions = standing_assumptions(cat);
  advise::Scenario scenario;
  std::optional<workload::Workload> from_file;  // the scenario file's workload, resolved once
  std::map<std::string, std::string> workload_options;  // the workload's shape: a file's for its workload, else --options
  // One question: the predictions, the serving curves and the advice price one workload at one precision. A
  // scenario file says them where the flags do not; the flags say them over the file (as for gpuvs advise).
  if (!a.scenario.empty()) {
    scenario = advise::read_scenario(a.scenario, assumptions, cat, &from_file);
    const advise::Scenario unsaid;
    if (!a.workload_given && scenario.workload != unsaid.workload) a.workload = scenario.workload;
    // The file's shape options go with its workload (a flag naming that same workload keeps them, as advise does;
    // --options saying a shape replaces them below).
    if (a.workload == scenario.workload) workload_options = scenario.workload_options;
    if (!a.precision_given && scenario.precision_named) a.precision = scenario.precision;
  }
  if (a.scenario.empty() || a.workload_given || a.options_given) {
    scenario.workload = a.workload;
    scenario.workload_options = workload_options;
  }
  if (!a.precision.empty()) {
    scenario.precision = a.precision;
    scenario.precision_named = true;
  }
  if (a.options_given) {  // predict's words for the same request, over the file's (evaluate has no flags of its own for them)
    apply_request_options(perf::parse_option_pairs(a.options), {}, scenario);
    workload_options = scenario.workload_options;
  }
  if (import::is_model_file(a.workload)) files::note_input(a.workload);
  if (!a.no_report && lead) files::check_output(a.report, report::html_output("--report", a.force));
  std::optional<workload::Workload> own;  // resolved once: predictions and serving curves price it
  const workload::Workload& w =
      from_file && from_file->is(a.workload, workload_options) ? *from_file : own.emplace(a.workload, workload_options);
  const models::NetworkInfo& net = w.network();
  apply_assumption_options(a.costs, assumptions, cat);
  // Your measured stack, solved before anything runs (a bad measurement is refused first): every prediction and
  // every option of the advice that runs its software and format moves by it. Measurements are solved again once this
  // run has calibrated its card; a stored stack solved with a calibration cannot be (evaluate applies its own run's).
  std::optional<perf::StackCalibration> stack = measured_stack(cat, a.measured, "", nullptr);
  if (!a.stack_file.empty()) {
    stack = read_stack(a.stack_file);
    if (const auto& c = stack->solved_with)
      throw InputError(fmt::format("--stack {}: this stack was solved with {} corrected by the calibration from {}, and evaluate corrects only "
                                   "the card it runs on, by its own benchmarks: give the measurements with --measured (solved under this "
                                   "run's calibration), or a stack solved without a calibration",
                                   a.stack_file, c->gpu_id, c->source));
  }
  if (stack) scenario.stack = stack->ratios;
  // The advice prices the predictions' workload where the scenario names it (one graph store), else the file's.
  const workload::Workload* known = w.is(scenario.workload, scenario.workload_options) || !from_file ? &w : &*from_file;
  const workload::Workload scenario_workload = advise::validated_workload(scenario, cat, known);
  // A decoder served alone may be named in a weight format (int4-awq, q4_k_m, ...): the check above refused what is
  // neither that nor a policy, and a format for anything else.
  const bool served = scenario.task == "infer" && scenario.tenants == 1 && workload::pricer_for("infer", net.family) == workload::Pricer::serving;
  const std::optional<perf::Precision> precision =
      served && !a.precision.empty() && !advise::is_precision_policy(a.precision) ? std::nullopt : named_precision(a.precision);
  if (a.epochs < 1 || a.rows < 100) throw InputError("--epochs must be at least 1 and --rows at least 100");
  // What to train here: the workload itself when the engine can run it (dense Sequential models: seed-mlp,
  // a gpuvs model file, a Keras file), else the seed model, said in one line. Its synthetic rows are refused
  // with the figures now, not after the benchmarks.
  const bool trains_workload = net.family == models::Family::mlp;
  const models::ModelSpec spec = trains_workload ? workload::resolve_sequential(a.workload) : models::sequential_preset("seed-mlp");
  engine::check_synthetic_fits(a.rows, spec.input_dim, spec.num_classes());
  std::optional<store::Store> db;
  if (lead) db.emplace(store::Store::open(db_path, true));  // last: a refused run creates no database

  LocalRun m;
  steps.begin("probing devices");
  m.cpu = hw::probe_cpu();
  m.nv = hw::probe_nvidia_matched(cat);
  m.local_gpu = m.nv.gpus.empty() ? "" : m.nv.gpus.front().catalog_id;
  report::EvaluateRecord record;
  record.devices = devices_record(m.cpu, m.nv);

  steps.begin(world.size > 1 ? fmt::format("quick benchmarks (and the cluster's {} ranks)", world.size) : std::string("quick benchmarks"));
  if (world.size > 1) record.cluster = bench::run_cluster_benchmarks({true, {}}, record.devices);
  if (lead) m.results = bench::run_benchmarks({}, {true, a.threads, std::nullopt});
  const bool failed = std::any_of(m.results.begin(), m.results.end(), [](const auto& r) { return r.status == "FAILED"; });
  record.gpuvs = fmt::format("{} (git {})", GPUVS_VERSION, GPUVS_GIT_REVISION);
  record.bench = bench::results_json(m.results, true, record.gpuvs);

  engine::TrainConfig cfg;
  cfg.device = world.size > 1 ? "cpu" : "auto";  // the best local device (across ranks the CPU: gradients over MPI)
  const engine::Placement place = engine::resolve_placement(cfg);
  m.measured_name = trains_workload ? spec.name : "seed-mlp";
  m.measured_instead =
      trains_workload ? "" : fmt::format("Measured seed-mlp instead of {}: the CPU engine trains dense models only, and {} is {}.",
                                         a.workload, net.id, net.family == models::Family::onnx ? "an ONNX graph" : fmt::format("a {} network", models::family_name(net.family)));
  if (!m.measured_instead.empty() && lead) fmt::print(stderr, "{}\n", strings::escape_control(m.measured_instead));
  steps.begin(fmt::format("training {} on {}", m.measured_name, place.device));
  const engine::Dataset data = engine::make_synthetic(a.rows, spec.input_dim, spec.num_classes(), 1);
  cfg.epochs = a.epochs;
  cfg.batch = m.batch;
  cfg.threads = a.threads;
  cfg.profile = true;
  QuietObserver obs(lead);
  engine::ParamStore params;
  m.tr = engine::train(spec, data, cfg, obs, params);
  if (!lead) return 0;  // the other ranks' part is done
  if (world.size > 1) record.network = use_measured_fabric(record.cluster, net, scenario, assumptions);
  record.training = training_record(m.tr, m.measured_name, m.batch);

  steps.begin("calibrating the model");
  std::optional<perf::Calibration> cal;
  std::tie(cal, record.calibration) = calibrate(m.results, m.tr, spec, m.batch, m.nv, cat);
  // Your measurements solved again with this run's calibration, so its card is corrected once (as predict
  // --calibration does with them). A stored stack solved on this card's figures was solved without it: the card is
  // priced as the stack was solved, and the calibration reported only (applied too, it would correct the card twice).
  const perf::Calibration* pricing_cal = cal ? &*cal : nullptr;
  std::string cal_withheld;
  if (cal && !a.measured.empty()) {
    stack = measured_stack(cat, a.measured, "", &*cal);
    scenario.stack = stack->ratios;
  } else if (cal && stack && perf::measured_on(*stack, cal->gpu_id)) {
    cal_withheld = fmt::format("not applied: --stack {} was solved on {}'s figures without it, and both would correct the card twice "
                               "(--measured with the figures solves them with it)",
                               strings::escape_control(a.stack_file), cal->gpu_id);
    record.calibration["classes"] = calibration_classes_json(*cal, false);
    record.calibration["not_applied"] = cal_withheld;
    pricing_cal = nullptr;
  }

  steps.begin(fmt::format("predicting {} on {} catalog GPUs", a.workload, cat.gpus().size()));
  const PricedTask task = priced_task(scenario, workload_options, net);
  record.predictions = task.serving ? predict_catalog_serving(cat, w, scenario, pricing_cal, assumptions.hour_prices(), m.local_gpu)
                                    : predict_catalog(cat, w, task, precision, pricing_cal, assumptions.hour_prices(), m.local_gpu,
                                                      stack ? &stack->ratios : nullptr);
  record.measured = stack ? stack_json(*stack) : json(nullptr);

  // This machine, measured, beside the predictions and among the advisor's options, when what it trained
  // is the workload being predicted.
  const advise::MeasuredMachine here = machine_measured(m.tr, a.workload, m.batch, m.cpu, m.nv);
  std::string verdict;
  if (trains_workload) std::tie(record.measured_here, verdict) = measured_here(here, record.predictions, cat, assumptions, m.tr.step_time_median_s);
  // Serving curves answer a serving question: shown for a decoder unless a scenario asks about training it.
  std::string no_curves;  // why a serving question about a decoder has no curves, said beside the predictions
  // Tenants sharing cards are priced as graphs (the table, the advice): no one-tenant curves beside them.
  if (scenario.tenants > 1) no_curves = "; no serving curves: tenants share the cards (priced as graphs, as the advice prices them)";
  if ((a.scenario.empty() || scenario.task == "infer") && scenario.tenants == 1) {
    record.serving = serving_curves(cat, w, scenario, pricing_cal);
    if (record.serving.is_null() && workload::pricer_for("infer", w.family()) == workload::Pricer::serving) {
      try {
        (void)perf::weight_format(perf::serving_format_for(scenario.precision));
        no_curves = "; no serving curves: no card serves it on one GPU";
      } catch (const InputError& e) {
        no_curves = fmt::format("; no serving curves: {} (serving engines run fp16, bf16, fp8 or quantized weights)", e.what());
      }
    }
  }

  steps.begin("advising");
  if (pricing_cal) scenario.calibration = *pricing_cal;  // the advice prices this run's card as the table beside it does
  const advise::Advice advice = advise::advise(cat, scenario_workload, scenario, assumptions, trains_workload ? &here : nullptr);
  record.advice = advise::advice_json(advice);

  steps.begin("writing the report and the history");
  record.workload = a.workload;
  record.precision = a.precision.empty() ? perf::kDefaultPrecisionRule : a.precision;
  record.measured_here_note = trains_workload ? "" : m.measured_instead + " No measured bar beside the predictions.";
  const json* first = record.predictions.empty() ? nullptr : &record.predictions[0];
  bool fell_back = false;  // a card priced at the nearest precision it runs (its entry's precision_note)
  for (const auto& e : record.predictions) fell_back = fell_back || e.contains("precision_note");
  // The weights as named, else the default rule's by card (as predict and compare say it).
  const std::string weights_said = scenario.precision_named ? perf::serving_format_for(scenario.precision)
                                                            : std::string("the default rule's 16-bit (bf16, fp16 on a card without BF16)");
  record.prediction_note =
      task.serving && first
          ? fmt::format("{} served, requests of {} + {} tokens, as many in flight as each card holds, {} weights, priced with the {} engine "
                        "profile (as predict --mode infer and each option of the advice); band = the model's validation error spread{}",
                        a.workload, (*first)["prompt_len"].get<std::int64_t>(), (*first)["gen_len"].get<std::int64_t>(),
                        weights_said + (scenario.precision_named ? " (or the nearest a card runs)" : ""), (*first)["engine"].get<std::string>(), no_curves)
      : task.serving ? fmt::format("{} served: no catalog GPU serves its {} weights on one GPU{}", a.workload,
                                   scenario.precision_named ? weights_said : std::string("16-bit"), no_curves)
          : fmt::format("{} {}, default batch per GPU, {}{}, priced with the {} framework profile; band = the model's validation error spread{}",
                        a.workload, task.words, record.precision, fell_back ? " (or the nearest a card runs)" : "",
                        first ? first->value("framework", "pytorch") : "pytorch", no_curves);
  record.roofline = roofline(m.results, m.tr, m.measured_name, m.cpu);
  record.summary =
      summary_lines(m, record.cluster, record.network, record.predictions, a.workload, trains_workload ? &here : nullptr, verdict, cal, cal_withheld, advice, stack);
  store_and_report(a, *db, db_path, record, m, advice, steps.seconds());
  return failed ? 1 : 0;
}

}  // namespace

Runner add_evaluate_command(CLI::App& app) {
  auto a = std::make_shared<EvaluateArgs>();
  auto* sub = app.add_subcommand("evaluate", "Measure this machine, predict the catalog GPUs, advise, report and store the run");
  add_facts_option(sub, a->facts);
  auto* workload = sub->add_option("--workload", a->workload, "Workload to predict and advise on (default: the scenario's, else seed-mlp)");
  auto* options = sub->add_option("--options", a->options, kRequestOptionsHelp);
  auto* precision = sub->add_option("--precision", a->precision, precision_help("Precision policy for the predictions and the advice"));
  sub->add_option("--scenario", a->scenario, "Advisor scenario file (TOML; flags say over it); default: train the workload");
  add_assumption_options(sub, a->costs);
  sub->add_option("--report", a->report, "HTML report to write")->capture_default_str();
  sub->add_flag("--no-report", a->no_report, "Do not write the HTML report");
  sub->add_flag("--force", a->force, "Replace a --report file that gpuvs did not write (or that has other hard links)");
  sub->add_option("--db", a->db, "Results database (default $XDG_DATA_HOME/gpuvs/history.db)");
  add_measured_options(sub, a->measured, a->stack_file);
  sub->add_option("--epochs", a->epochs, "Epochs of the seed training")->capture_default_str()->check(whole_in(1, 1000));
  sub->add_option("--rows", a->rows, "Rows of the synthetic training data")->capture_default_str()->check(whole_in(100, std::numeric_limits<std::int64_t>::max()));
  sub->add_option("--threads", a->threads, "CPU threads (default: every core)")->check(threads());
  add_output_option(sub, a->out);  // the summary; progress goes to stderr
  return [a, workload, options, precision] {
    a->workload_given = workload->count() > 0;
    a->options_given = options->count() > 0;
    a->precision_given = precision->count() > 0;
    return run_evaluate(*a);
  };
}

}  // namespace gpuvs::cli
