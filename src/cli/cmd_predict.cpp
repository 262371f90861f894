// SPDX-License-Identifier: Apache-2.0
// gpuvs predict: a workload's training or inference speed and memory on a catalog GPU.
#include <fmt/format.h>

#include <tuple>

#include <algorithm>

#include <nlohmann/json.hpp>

#include "catalog/catalog.hpp"
#include "cli/calibration_file.hpp"
#include "cli/measured_input.hpp"
#include "cli/assumption_options.hpp"
#include "cli/commands.hpp"
#include "cli/gpu_names.hpp"
#include "cli/output.hpp"
#include "cli/validators.hpp"
#include "core/error.hpp"
#include "core/strings.hpp"
#include "core/units.hpp"
#include "models/networks.hpp"
#include "perf/framework.hpp"
#include "perf/predict.hpp"
#include "perf/serving.hpp"
#include "perf/stack_calibration.hpp"
#include "workload/workload.hpp"

namespace gpuvs::cli {

namespace {

struct PredictArgs {
  std::string workload = "seed-mlp", gpu, precision, mode = "train", options, calibration;  // precision "": the default rule
  std::string facts;  // --facts FILE
  std::vector<std::string> measured;  // --measured FILE|SPEC
  std::string stack_file;             // --stack FILE (gpuvs calibrate --save)
  std::vector<std::string> catalogs;
  int gpus = 1;
  std::int64_t batch = 0;
  Output out = Output::table;
  bool workload_given = false, mode_given = false;  // set from the parsed command line
};

/// What a prediction's measurements gave: the stack (solved with the calibration it applies), what the request took from
/// them (said), and how their names were read.
struct Measured {
  std::optional<perf::StackCalibration> stack;
  std::vector<std::string> taken, read_as;
};

/// --calibration FILE, read once for the request; nullopt without the flag.
std::optional<perf::Calibration> calibration_of(const PredictArgs& a, const catalog::Catalog& cat) {
  if (a.calibration.empty()) return std::nullopt;
  return load_calibration(a.calibration, cat);
}

// Whether the calibration corrected this card; where it measured another that a stack's figures ran on, what it did
// price (compare's words for the same case).
std::string calibration_status(const perf::Calibration& cal, bool applied, const perf::StackCalibration* stack) {
  if (applied) return "applied";
  if (stack && stack->solved_with && perf::measured_on(*stack, cal.gpu_id))
    return fmt::format("not applied here (measured on {}): it priced only the stack's figures on it", cal.gpu_id);
  return "not applied (measured on another device)";
}

void print_stack(const perf::StackCalibration& s, bool applied, double uncalibrated, const std::string& unit) {
  for (const auto& st : s.steps) fmt::print("  measured     {}\n", stack_step_line(st));
  if (const std::string solved = stack_solved_with_line(s); !solved.empty()) fmt::print("  measured     {}\n", solved);
  for (const auto& o : s.open) fmt::print("  measured     left open: {}\n", o);
  if (applied)
    fmt::print("  calibrated   {} {} as measured; without the measurements: {} {}\n", s.ratios.engine, s.ratios.format,
               units::format_si(uncalibrated), unit);
  else
    fmt::print("  calibrated   not applied: the measurements ran {} {}, this prediction another engine, framework or format\n",
               s.ratios.engine, s.ratios.format);
}

int run_serving(const PredictArgs& a, const catalog::Catalog& cat, const workload::Workload& w, const std::optional<perf::Calibration>& cal,
                const Measured& measured) {
  perf::ServingRequest req;
  req.workload = a.workload;
  req.gpu = a.gpu;
  req.gpus = a.gpus;
  req.batch = a.batch;
  // The precision's weights on this card, or the nearest it has (said), as compare, advise and evaluate serve it; a card
  // that runs neither is refused by the serving model, naming what it lacks.
  const catalog::Gpu& gpu = cat.find(a.gpu);
  std::string instead;
  req.format = perf::serving_format_on(gpu, a.precision, &instead)
                   .value_or(perf::serving_format_for(a.precision.empty() ? std::string(perf::precision_name(perf::default_precision(gpu))) : a.precision));
  req.mode = a.mode;
  req.options = perf::parse_option_pairs(a.options);
  req.calibration = cal ? &*cal : nullptr;
  // Your measurements: the stack they ran, calibrated (solved with the calibration this prediction applies, so its card
  // is corrected once), and this prediction with and without it.
  const std::optional<perf::StackCalibration>& stack = measured.stack;
  const std::vector<std::string>& read_as = measured.read_as;
  double uncalibrated = 0;
  bool stack_applied = false;
  if (stack) {
    uncalibrated = perf::predict_serving(cat, w, req).throughput;
    req.stack = &stack->ratios;
  }
  const perf::ServingPrediction p = perf::predict_serving(cat, w, req);
  if (stack) stack_applied = p.engine == stack->ratios.engine && p.format == stack->ratios.format;
  const auto& c = p.step;
  const bool decode_only = p.mode == "decode";
  std::vector<std::string> said = measured.taken;
  for (auto& line : perf::serving_assumed(req, p, !a.precision.empty())) said.push_back(std::move(line));
  if (!instead.empty() && p.quantized_from.empty())  // after what the request took from the measurement
    said.insert(said.begin() + static_cast<std::ptrdiff_t>(measured.taken.size()), fmt::format("weights {} ({})", p.format, instead));
  if (a.out != Output::table) {
    nlohmann::json j{
        {"schema_version", 1},
        {"workload", p.workload},
        {"gpu", p.gpu_id},
        {"gpus", p.gpus},
        {"mode", p.mode},
        {"format", p.format},
        {"group_size", p.group_size > 0 ? nlohmann::json(p.group_size) : nlohmann::json(nullptr)},
        {"bits_per_weight", p.bits_per_weight},
        {"engine", p.engine},
        {"tp", p.tp},
        {"replicas", p.replicas},
        {"layer_split", p.layer_split},
        {"prompt_len", p.prompt_len},
        {"gen_len", p.gen_len},
        {"batch", p.batch},
        {"batch_chosen", p.batch_chosen},
        {"batch_limit", p.batch_limit},
        {"throughput", {{"value", p.throughput}, {"unit", p.unit}, {"per", "system"}, {"low", p.band_low}, {"high", p.band_high}}},
        {"latency_s",
         {{"time_to_first_token", decode_only ? nlohmann::json(nullptr) : nlohmann::json(p.ttft_s)},  // decode prices no prompt
          {"time_to_first_token_p99", decode_only ? nlohmann::json(nullptr) : nlohmann::json(p.ttft_p99_s)}, {"per_output_token", p.tpot_s},
          {"request", p.request_s}, {"request_p99", p.request_p99_s}}},
        {"iteration_s",
         {{"total", c.seconds}, {"gemm", c.gemm_s}, {"dequant", c.dequant_s}, {"attention", c.attention_s}, {"elementwise", c.elementwise_s},
          {"lm_head", c.lm_head_s}, {"communication", c.comm_s}, {"launch", c.launch_s}, {"host", c.host_s}}},
        {"memory_per_gpu_gib",  // GiB, as training's memory and the catalog's capacities
         {{"weights", p.weight_bytes / units::kGiB}, {"kv_cache", p.kv_bytes / units::kGiB}, {"kv_budget", p.kv_budget_bytes / units::kGiB},
          {"runtime", p.runtime_bytes / units::kGiB}, {"capacity", p.capacity_bytes / units::kGiB}, {"fits", p.fits}}},
        {"kv_dtype", p.kv_dtype},
        {"layers", {{"total", p.layers}, {"on_gpu", p.gpu_layers}, {"host_gbs", p.host_gbs}, {"offloaded_s", c.offload_s}}},
        {"kv_bytes_per_token", p.kv_bytes_per_token},
        {"max_concurrency", p.max_concurrency},
        {"max_context", p.max_context},
        {"notes", p.notes},
        {"assumed", said},
    };
    if (stack) {
      j["measured"] = stack_json(*stack);
      j["measured"]["applied"] = stack_applied;
      j["measured"]["throughput_without"] = uncalibrated;
      j["measured"]["read_as"] = read_as;
    }
    if (p.mode == "infer") {
      nlohmann::json curve = nlohmann::json::array();
      for (const auto& q : perf::serving_load_curve(cat, w, req))
        curve.push_back({{"in_flight", q.batch}, {"output_tokens_per_s", q.throughput}, {"requests_per_s", q.throughput / static_cast<double>(q.gen_len)},
                         {"time_to_first_token_s", q.ttft_s}, {"time_to_first_token_p99_s", q.ttft_p99_s},
                         {"per_output_token_s", q.tpot_s}, {"request_p99_s", q.request_p99_s}});
      j["load_curve"] = curve;
    }
    if (cal) {  // as the training output says it: applied only on the card it measured
      const bool applied = cal->gpu_id == p.gpu_id;
      j["calibration"] = {{"source", cal->source}, {"measured_on", cal->gpu_id}, {"applied", applied},
                          {"classes", calibration_classes_json(*cal, applied)}};
    }
    print_structured(j, a.out);  // csv, md: one row
    return 0;
  }
  const std::string what = p.mode == "prefill"  ? fmt::format("{} sequence(s) x {}-token prompt", p.batch, p.prompt_len)
                           : p.mode == "decode" ? fmt::format("{} sequence(s), context {} -> {}", p.batch, p.prompt_len, p.prompt_len + p.gen_len)
                                                : fmt::format("requests of {} + {} tokens, {} in flight{}", p.prompt_len, p.gen_len, p.batch,
                                                              p.batch_chosen ? " (limited by " + p.batch_limit + ")" : "");
  fmt::print("{} {} on {} x {} ({}), {}; {} weights, KV cache {}\n", strings::escape_control(p.workload), p.mode, p.gpus,
             strings::escape_control(p.gpu_name), strings::escape_control(p.gpu_id), what,
             p.group_size > 0     ? fmt::format("{} (groups of {})", p.format, p.group_size)
             : p.variable_bits    ? fmt::format("{} ({:.3g} bits a weight)", p.format, p.bits_per_weight)
                                  : p.format,
             p.kv_dtype);
  fmt::print("  throughput   {} {} per system (likely {} to {})\n", units::format_si(p.throughput), p.unit, units::format_si(p.band_low),
             units::format_si(p.band_high));
  fmt::print("  engine       {} profile: {}\n", p.engine, p.engine_name);
  if (cal)
    fmt::print("  calibration  from {} (measured on {}): {}\n", cal->source, cal->gpu_id,
               calibration_status(*cal, cal->gpu_id == p.gpu_id, stack ? &*stack : nullptr));
  if (p.layer_split > 1) {
    const int fewest = p.layers / p.layer_split, most = (p.layers + p.layer_split - 1) / p.layer_split;
    fmt::print("  layout       one model split by layers over {} GPUs (-sm layer), {} blocks each: each token passes every card in turn\n",
               p.layer_split, fewest == most ? std::to_string(most) : fmt::format("{}-{}", fewest, most));
  } else if (p.tp > 1 || p.replicas > 1)
    fmt::print("  layout       tensor parallel {} x {} replica(s)\n", p.tp, p.replicas);
  fmt::print("  iteration    {}: GEMMs {}, dequantize {}, attention {}, elementwise {}, LM head {}, {} {}, launches {}, host {}{}\n",
             units::format_seconds(c.seconds), units::format_seconds(c.gemm_s), units::format_seconds(c.dequant_s),
             units::format_seconds(c.attention_s), units::format_seconds(c.elementwise_s), units::format_seconds(c.lm_head_s),
             p.layer_split > 1 ? "hand-overs between cards" : "all-reduce", units::format_seconds(c.comm_s), units::format_seconds(c.launch_s), units::format_seconds(c.host_s),
             c.offload_s > 0 ? fmt::format(" (of which {} in the {} blocks run from system RAM)", units::format_seconds(c.offload_s),
                                           p.layers - p.gpu_layers)
                             : "");
  if (p.mode == "decode")  // decode steps alone: no prompt is processed, so no first-token time is priced
    fmt::print("  latency      {} per token over {} generated tokens (decode only: first-token time is --mode prefill's, whole "
               "requests --mode infer's)\n",
               units::format_seconds(p.tpot_s), p.gen_len);
  else if (p.mode != "prefill")
    fmt::print("  latency      first token {} (p99 {}), then {} per token; whole request {} (p99 {})\n", units::format_seconds(p.ttft_s),
               units::format_seconds(p.ttft_p99_s), units::format_seconds(p.tpot_s), units::format_seconds(p.request_s),
               units::format_seconds(p.request_p99_s));
  fmt::print("  memory/GPU   weights {:.2f} GiB, KV cache {:.2f} GiB ({} per token) of a {:.2f} GiB budget, runtime {:.2f} GiB, card {:.2f} GiB: {}\n",
             p.weight_bytes / units::kGiB, p.kv_bytes / units::kGiB, units::format_bytes_binary(p.kv_bytes_per_token), p.kv_budget_bytes / units::kGiB,
             p.runtime_bytes / units::kGiB, p.capacity_bytes / units::kGiB, p.fits ? "fits" : "DOES NOT FIT");
  fmt::print("  capacity     {} concurrent requests of {} tokens; one sequence up to {} tokens{}\n", p.max_concurrency,
             p.prompt_len + (p.mode == "prefill" ? 0 : p.gen_len), p.max_context,
             p.context_limited_by_model ? " (the model's positions; the cache holds more)" : "");
  for (const auto& n : p.notes) fmt::print("  note         {}\n", n);
  if (stack) print_stack(*stack, stack_applied, uncalibrated, p.unit);
  for (const auto& r : read_as) fmt::print("  assumed      {}\n", r);
  if (!said.empty()) fmt::print("  assumed      {}\n", strings::join(said, "; "));
  if (p.mode == "infer" && req.batch == 0) {
    fmt::print("  latency against load (per system):\n    {:>9} {:>14} {:>10} {:>12} {:>12} {:>11} {:>12}\n", "in flight", "output tok/s",
               "requests/s", "first token", "p99", "per token", "request p99");
    for (const auto& q : perf::serving_load_curve(cat, w, req))
      fmt::print("    {:>9} {:>14} {:>10} {:>12} {:>12} {:>11} {:>12}\n", q.batch, units::format_si(q.throughput),
                 units::format_si(q.throughput / static_cast<double>(q.gen_len)), units::format_seconds(q.ttft_s), units::format_seconds(q.ttft_p99_s),
                 units::format_seconds(q.tpot_s), units::format_seconds(q.request_p99_s));
  }
  return 0;
}

constexpr double kGiB = 1073741824.0;

/// What the training profile `id` fuses (perf/framework.hpp); none for a serving engine or a profile without.
std::vector<std::string> framework_fuses(const std::string& id) {
  for (const auto& f : perf::frameworks())
    if (f.id == id) return f.fuses;
  return {};
}

/// predict --json for a graph-priced workload: one object, GiB and seconds as named.
nlohmann::json prediction_json(const perf::Prediction& p, const std::string& mode, const perf::Calibration* cal) {
  const auto& d = p.detail;
  const auto& m = p.memory;
  nlohmann::json j{
      {"schema_version", 1},
      {"workload", p.workload},
      {"gpu", p.gpu_id},
      {"gpus", p.gpus},
      {"mode", mode},
      {"precision", perf::precision_name(p.plan.precision)},
      {"matrix_unit", p.plan.matrix_unit},
      {"batch", p.batch},
      {"params", p.params},
      {"throughput", {{"value", p.throughput}, {"unit", p.unit}, {"per", "gpu"}}},
      {"step_time_s", p.step_s},
      {"band", {{"low", p.band_low}, {"high", p.band_high}, {"basis", "held-out validation errors: an interval that holds 80% of rows never seen (split conformal)"}}},
      {"time_by_bound_s",
         {{"compute", d.compute_s}, {"memory", d.memory_s}, {"latency", d.latency_s}, {"launch", d.launch_s}, {"communication", p.comm_exposed_s}}},
      {"kernels", d.kernels},
      {"framework",
       {{"profile", p.framework}, {"fuses", framework_fuses(p.framework)}, {"not_modelled", p.framework_unmodelled}, {"maturity", p.maturity_notes}}},
      {"memory",
       {{"peak_gib", m.peak_bytes / kGiB}, {"capacity_gib", m.capacity_bytes / kGiB}, {"fits", m.fits},
        {"weights_gib", m.weights_bytes / kGiB}, {"gradients_gib", m.gradients_bytes / kGiB},
        {"optimizer_gib", m.optimizer_bytes / kGiB}, {"activations_gib", m.activations_bytes / kGiB},
        {"transient_gib", m.transient_bytes / kGiB}, {"runtime_gib", m.runtime_bytes / kGiB}}}};
  if (p.seq_len > 0) j["seq_len"] = p.seq_len;
  if (p.sample_len > 0) j["sample_len"] = p.sample_len;
  if (!p.lengths.empty())
    j["padding"] = {{"lengths", p.lengths}, {"bin_size", p.bin_size}, {"real_tokens_mean", p.real_len}, {"padded_tokens_mean", p.padded_len}};
  if (p.finetune != "full")
    j["finetune"] = {{"method", p.finetune}, {"lora_rank", p.lora_rank}, {"lora_targets", models::lora_targets_name(p.lora_targets)}};
  if (p.micro_batches > 1 && !p.parallel)
    j["accumulation"] = {{"micro_batches", p.micro_batches}, {"global_batch", p.global_batch}, {"micro_batch_s", p.microbatch_s},
                         {"optimizer_s", p.optimizer_s}};
  if (p.decode)
    j["decode"] = {{"prompt_len", p.prompt_len}, {"gen_len", p.gen_len}, {"time_to_first_token_s", p.prefill_s},
                   {"per_token_latency_s", p.decode_step_s}, {"kv_cache_gib", p.kv_cache_bytes / kGiB},
                   {"request_latency_s", p.prefill_s + static_cast<double>(p.gen_len) * p.decode_step_s}};
  if (p.parallel)
    j["parallel"] = {{"gpus", p.gpus}, {"tp", p.tp}, {"pp", p.pp}, {"vp", p.vp}, {"cp", p.cp}, {"dp", p.dp},
                     {"global_batch", p.global_batch}, {"micro_batches", p.micro_batches}, {"micro_batch_s", p.microbatch_s},
                     {"tp_allreduce_s_per_micro_batch", p.tp_comm_s}, {"cp_exposed_s_per_micro_batch", p.cp_exposed_s},
                     {"pp_send_s_per_micro_batch", p.pp_comm_s}, {"bubble_s", p.bubble_s}, {"dp_reduce_s", p.dp_comm_s},
                     {"dp_exposed_s", p.dp_exposed_s}, {"optimizer_s", p.optimizer_s}, {"network", p.network},
                     {"network_note", p.network_note}, {"tp_link", p.tp_link}, {"pp_link", p.pp_link}, {"dp_link", p.dp_link}};
  else if (p.gpus > 1)
    j["scaling"] = {{"link", p.link.kind}, {"link_description", p.link.description}, {"bus_gbps", p.link.bus_gbs},
                    {"sharding", p.sharding}, {"comm_bytes_per_step", p.comm_bytes}, {"comm_s", p.comm_s},
                    {"comm_exposed_s", p.comm_exposed_s}, {"single_gpu_step_s", p.single_gpu_step_s},
                    {"efficiency", p.single_gpu_step_s / p.step_s}};
  if (cal) {
    j["calibration"] = {{"source", cal->source}, {"measured_on", cal->gpu_id}, {"applied", p.calibrated},
                        {"classes", calibration_classes_json(*cal, p.calibrated)}};
  }
  return j;
}

void print_prediction(const perf::Prediction& p, const std::string& mode, const perf::Calibration* cal, const perf::StackCalibration* stack) {
  const auto& d = p.detail;
  const auto& m = p.memory;
  fmt::print("{} {} on {} ({}), batch {}{}, {}\n", strings::escape_control(p.workload), mode, strings::escape_control(p.gpu_name),
             strings::escape_control(p.gpu_id), p.batch,
             p.seq_len > 0 ? fmt::format(" x {} tokens", p.seq_len) : "", p.plan.matrix_unit);
  fmt::print("  throughput   {} {} per GPU (likely {} to {})\n", units::format_si(p.throughput), p.unit,
             units::format_si(p.band_low), units::format_si(p.band_high));
  const auto fuses = framework_fuses(p.framework);
  const std::string fused = fuses.empty() ? "" : " (fuses " + strings::join(fuses, ", ") + ")";
  fmt::print("  framework    {} profile{}{}\n", p.framework, fused,
             p.framework_unmodelled.empty() ? "" : "; not priced: " + strings::join(p.framework_unmodelled, "; "));
  if (!p.maturity_notes.empty())
    fmt::print("  software     {}; a native stack: {} {} (the band spans that step both ways)\n", strings::join(p.maturity_notes, "; "),
               units::format_si(p.native_throughput), p.unit);
  if (p.sample_len > 0)
    fmt::print("  packing      samples of about {} tokens packed into each {}-token sequence; attention within each sample (sample_len)\n",
               p.sample_len, p.seq_len);
  if (!p.lengths.empty())
    fmt::print("  padding      samples of {} ({:.0f} real tokens on average) in batches {}: computed at {:.0f} tokens a sequence on average, "
               "not {} (lengths, bin_size)\n",
               p.lengths, p.real_len,
               p.bin_size == p.seq_len ? std::string("padded to their longest sample") : fmt::format("drawn from bins of {} lengths, each padded to its longest sample", p.bin_size),
               p.padded_len, p.seq_len);
  if (p.finetune != "full")
    fmt::print("  fine-tuning  {}: rank-{} adapters on {} (lora_targets={}); every base weight frozen\n", p.finetune, p.lora_rank,
               p.lora_targets == models::LoraTargets::all         ? "every linear layer"
               : p.lora_targets == models::LoraTargets::qkv       ? "the query, key and value projections"
               : p.lora_targets == models::LoraTargets::attention ? "the attention's projections"
                                                                  : "the MLP's matrices",
               models::lora_targets_name(p.lora_targets));
  if (p.parallel) {
    fmt::print("  plan         {} GPUs = tp {} x pp {}{} x cp {} x dp {}; global batch {} = {} micro-batches of {} per data-parallel rank\n",
               p.gpus, p.tp, p.pp, p.vp > 1 ? fmt::format(" (vp {})", p.vp) : "", p.cp, p.dp, p.global_batch, p.micro_batches, p.batch);
    fmt::print("  step time    {}: {} micro-batches x {} + bubble {} + data-parallel reduction {} (of {}) + optimizer {}\n",
               units::format_seconds(p.step_s), p.micro_batches, units::format_seconds(p.microbatch_s), units::format_seconds(p.bubble_s),
               units::format_seconds(p.dp_exposed_s), units::format_seconds(p.dp_comm_s), units::format_seconds(p.optimizer_s));
    fmt::print("  micro-batch  {} on the slowest stage ({} kernels: compute-bound {}, memory-bound {}, latency-bound {}, launch {}{}), "
               "TP all-reduces {}, CP exchange not hidden {}, pipeline sends {}\n",
               units::format_seconds(p.microbatch_s), d.kernels, units::format_seconds(d.compute_s), units::format_seconds(d.memory_s),
               units::format_seconds(d.latency_s), units::format_seconds(d.launch_s), p.recompute_s > 0 ? ", recompute " + units::format_seconds(p.recompute_s) : "",
               units::format_seconds(p.tp_comm_s), units::format_seconds(p.cp_exposed_s), units::format_seconds(p.pp_comm_s));
    fmt::print("  links        TP: {}; PP: {}; DP: {}{}\n", p.tp_link, p.pp_link, p.dp_link,
               p.network_note.empty() ? "" : "; network assumed: " + p.network_note);
  } else {
    fmt::print("  step time    {} ({} kernels): compute-bound {}, memory-bound {}, latency-bound {} (kernels too small to stream), "
               "launch {}\n",
               units::format_seconds(p.step_s), d.kernels, units::format_seconds(d.compute_s), units::format_seconds(d.memory_s),
               units::format_seconds(d.latency_s), units::format_seconds(d.launch_s));
  }
  if (p.micro_batches > 1 && !p.parallel)
    fmt::print("  accumulation {} micro-batches of {} per optimizer step (global batch {}): {} each, the optimizer {} once; the kernels "
               "above are one micro-batch's\n",
               p.micro_batches, p.batch, p.global_batch, units::format_seconds(p.microbatch_s), units::format_seconds(p.optimizer_s));
  if (p.decode)
    fmt::print("  serving      prompt {} + {} generated tokens: first token after {}, then {} per token; request {}; "
               "KV cache {:.2f} GiB\n",
               p.prompt_len, p.gen_len, units::format_seconds(p.prefill_s), units::format_seconds(p.decode_step_s),
               units::format_seconds(p.prefill_s + static_cast<double>(p.gen_len) * p.decode_step_s),
               p.kv_cache_bytes / kGiB);
  if (p.gpus > 1 && !p.parallel)
    fmt::print("  scaling      {} GPUs over {}: {}B exchanged per GPU per step in {}, {} not hidden by compute; "
               "{:.0f}% scaling efficiency{}\n",
               p.gpus, p.link.description, units::format_si(p.comm_bytes), units::format_seconds(p.comm_s),
               units::format_seconds(p.comm_exposed_s), 100 * p.single_gpu_step_s / p.step_s,
               p.sharding != "none" ? ", sharding " + p.sharding : "");
  fmt::print("  memory       {:.2f} GiB of {:.2f} GiB usable: {} (weights {:.2f}, gradients {:.2f}, optimizer {:.2f}, "
             "activations {:.2f}, transient {:.2f}, runtime {:.2f})\n",
             m.peak_bytes / kGiB, m.capacity_bytes / kGiB, m.fits ? "fits" : "DOES NOT FIT", m.weights_bytes / kGiB,
             m.gradients_bytes / kGiB, m.optimizer_bytes / kGiB, m.activations_bytes / kGiB, m.transient_bytes / kGiB,
             m.runtime_bytes / kGiB);
  if (cal) {
    fmt::print("  calibration  from {} (measured on {}): {}\n", cal->source, cal->gpu_id, calibration_status(*cal, p.calibrated, stack));
    for (const auto& c : cal->classes)
      fmt::print("    {:<12} measured {:.4g} {} vs model {:.4g}: x{:.3f}{}\n", c.op_class, c.measured, c.unit, c.predicted,
                 c.ratio, c.applied && p.calibrated ? "" : " (reported only)");
  }
}

int run_predict(PredictArgs a) {
  const auto facts = install_facts(a.facts);  // first: everything after prices with them
  const auto engine_preferred = install_preferred_engine();  // a user's default engine, before anything is priced
  catalog::Catalog cat = catalog::Catalog::builtin();
  for (const auto& f : a.catalogs) cat.add_file(f);
  if (a.mode != "train" && !perf::is_serving_mode(a.mode))
    throw InputError(fmt::format("--mode '{}' is not a mode (expected train, prefill, decode or infer)", strings::printable(a.mode)));
  if (a.gpus < 1) throw InputError(fmt::format("--gpus must be at least 1, got {}", a.gpus));
  a.gpu = gpu_id(cat, a.gpu);  // an unknown card is named before the workload is read; nvidia-smi names read too
  const std::optional<perf::Calibration> cal = calibration_of(a, cat);
  // Your measurements: the stack they ran, calibrated (with the calibration this prediction applies, so its card is
  // corrected once); what the request leaves unsaid is what they ran, said (compare's rule).
  Measured measured;
  FlagRequest fr{.workload = a.workload, .mode = a.mode, .precision = a.precision, .options = a.options, .batch = a.batch,
                 .workload_given = a.workload_given, .mode_given = a.mode_given};
  measured.stack = measured_request(cat, a.measured, a.stack_file, cal ? &*cal : nullptr, fr, measured.taken, &measured.read_as);
  std::tie(a.workload, a.mode, a.precision, a.options, a.batch) = std::tie(fr.workload, fr.mode, fr.precision, fr.options, fr.batch);
  const workload::Workload w(a.workload, perf::parse_option_pairs(a.options));
  check_measured_request(fr, w);
  if (workload::pricer_for(a.mode, w.family()) == workload::Pricer::serving) return run_serving(a, cat, w, cal, measured);
  const std::optional<perf::StackCalibration>& stack = measured.stack;
  perf::PredictRequest req;
  req.workload = a.workload;
  req.gpu = a.gpu;
  req.gpus = a.gpus;
  req.batch = a.batch;
  // The named precision on this card, or the nearest it has (said), as compare, advise and evaluate price it; a card
  // that runs neither is refused by predict, naming what it lacks.
  std::string instead;
  if (const auto named = named_precision(a.precision)) req.precision = perf::precision_run(*named, cat.find(a.gpu), &instead).value_or(*named);
  req.training = a.mode == "train";
  req.options = perf::parse_options(a.options, w);
  req.calibration = cal ? &*cal : nullptr;
  double uncalibrated = 0;
  if (stack) {
    uncalibrated = perf::predict(cat, w, req).throughput;
    req.stack = &stack->ratios;
  }
  const perf::Prediction p = perf::predict(cat, w, req);
  std::vector<std::string> said = measured.taken;
  for (auto& line : perf::assumed(req, p)) said.push_back(std::move(line));
  if (!instead.empty())  // after what the request took from the measurement
    said.insert(said.begin() + static_cast<std::ptrdiff_t>(measured.taken.size()),
                fmt::format("precision {} ({})", perf::precision_name(p.plan.precision), instead));
  if (a.out != Output::table) {
    nlohmann::json j = prediction_json(p, a.mode, cal ? &*cal : nullptr);
    j["assumed"] = said;
    if (stack) {
      j["measured"] = stack_json(*stack);
      j["measured"]["applied"] = p.stack_applied;
      j["measured"]["throughput_without"] = uncalibrated;
    }
    print_structured(j, a.out);  // csv, md: one row
  } else {
    print_prediction(p, a.mode, cal ? &*cal : nullptr, stack ? &*stack : nullptr);
    if (stack) print_stack(*stack, p.stack_applied, uncalibrated, p.unit + " per GPU");
    if (!said.empty()) fmt::print("  assumed      {}\n", strings::join(said, "; "));
  }
  return 0;
}

}  // namespace

Runner add_predict_command(CLI::App& app) {
  auto a = std::make_shared<PredictArgs>();
  auto* sub = app.add_subcommand("predict", "Predict a workload's throughput and memory on a catalog GPU");
  add_facts_option(sub, a->facts);
  auto* workload_opt = sub->add_option("--workload", a->workload, "Workload id or model file (gpuvs workloads lists the built-in ones)")->capture_default_str();
  sub->add_option("--gpu", a->gpu, "Catalog GPU id or alias")->required();
  sub->add_option("--gpus", a->gpus, "GPUs (data parallel)")->capture_default_str()->check(whole_in(1, 1 << 20));
  sub->add_option("--batch", a->batch, "Batch per GPU (default: the workload family's)")->check(whole_in(1, models::kMaxBatch));
  sub->add_option("--precision", a->precision,
                  precision_help("fp32, tf32, fp16, bf16, amp-fp16, amp-bf16, amp-fp8; serving a decoder: a weight format (fp16, bf16, fp8, int8, "
                                 "int8-w8a16, int4-awq, int4-gptq, q8_0, q6_k, q5_k_m, q4_k_m, q4_0)"));
  auto* mode_opt = sub->add_option("--mode", a->mode, "train, infer; for decoders also prefill and decode (infer = whole requests under the engine's batching)")
      ->capture_default_str();
  sub->add_option("--options", a->options,
                  "k=v;k=v: seq_len, flash_attention, sharding=none|zero1|zero2|full, nvls=0|1 (NVLink SHARP all-reduce), lengths=ID;bin_size=N (encoders: "
                  "samples of a data set's lengths, each batch padded to its longest), ...; serving: "
                  "prompt_len, gen_len, tp, framework=" + perf::engine_ids("|") + ", kv_dtype=fp16|fp8, group_size=32|64|128 (AWQ, GPTQ), bpw=N (EXL2: 2 to 8 bits a weight), arrival=steady|wave "
                  "(wave: --batch requests all at once, none after); both: release=YYYY-MM (the framework or engine release you run)");
  sub->add_option("--catalog", a->catalogs, "Add devices from a TOML file (repeatable)");
  sub->add_option("--calibration", a->calibration, "A gpuvs bench --save record: correct the model for the GPU it measured");
  add_measured_options(sub, a->measured, a->stack_file);
  add_output_option(sub, a->out);
  return [a, workload_opt, mode_opt] {
    a->workload_given = workload_opt->count() > 0;
    a->mode_given = mode_opt->count() > 0;
    return run_predict(*a);
  };
}

}  // namespace gpuvs::cli
