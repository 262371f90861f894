// SPDX-License-Identifier: Apache-2.0
// gpuvs advise: ranked options (GPU x count x strategy) for a training, fine-tuning or serving scenario,
// with time, cost, risk and the reason for each rank; every assumption printed and overridable.
#include <fmt/format.h>

#include <charconv>
#include <cmath>
#include <filesystem>
#include <optional>
#include <limits>
#include <sstream>

#include "advise/advice_json.hpp"
#include "advise/advisor.hpp"
#include "cli/assumption_options.hpp"
#include "cli/calibration_file.hpp"
#include "cli/request_options.hpp"
#include "cli/commands.hpp"
#include "cli/measured_input.hpp"
#include "cli/gpu_names.hpp"
#include "cli/output.hpp"
#include "cli/validators.hpp"
#include "core/error.hpp"
#include "core/strings.hpp"
#include "models/networks.hpp"
#include "perf/predict.hpp"
#include "store/store.hpp"
#include "workload/workload.hpp"

namespace gpuvs::cli {

namespace {

constexpr double kUnset = std::numeric_limits<double>::quiet_NaN();

struct AdviseArgs {
  std::string scenario_file, workload, task, finetune, precision, purchase;
  std::vector<std::string> gpu;  // --gpu ID[,ID...]: candidate cards
  std::string gpus;              // --gpus N: the most GPUs a plan may use
  std::string facts;  // --facts FILE
  std::string params;  // a size as decoder-<size> ids take it: 7e9, 13b, 500m
  bool params_given = false;
  double tokens = kUnset, samples = kUnset, hours = kUnset, sla = kUnset, rps = kUnset, budget = kUnset;
  double sla_ttft = kUnset, sla_tpot = kUnset;
  std::string engine, options, release;
  AssumptionArgs costs;
  int tenants = -1;  // unset
  std::int64_t seq_len = 0, gen_len = 0;
  std::size_t top = 12;
  std::int64_t measured_run = 0;  // an evaluate run whose measured machine is ranked too
  std::vector<std::string> measured;  // --measured FILE|SPEC: your stack, calibrated
  std::string stack_file;             // --stack FILE (gpuvs calibrate --save)
  std::string calibration;            // --calibration FILE (gpuvs bench --save), as predict takes it
  std::string db;
  std::vector<std::string> catalogs;
  Output out = Output::table;
};

/// --measured-run: the machine an evaluate run measured (its payload's measured_here), as an option.
advise::MeasuredMachine measured_machine(const AdviseArgs& a) {
  const store::Store db = store::Store::open(a.db.empty() ? store::default_path() : std::filesystem::path(a.db), false);
  const store::Run run = db.get(a.measured_run);
  const nlohmann::json m = run.payload.value("measured_here", nlohmann::json());
  if (run.kind != "evaluate" || !m.is_object() || !(m.value("throughput", 0.0) > 0))
    throw InputError(fmt::format("--measured-run {}: that run measured no machine on a workload (an evaluate run of seed-mlp has one)",
                                 a.measured_run));
  advise::MeasuredMachine here;
  here.name = m.value("device", "this machine") + fmt::format(" (run {}, {})", run.id, run.created_utc);
  here.workload = m.value("workload", "");
  here.precision = m.value("precision", "");
  here.throughput = m.value("throughput", 0.0);
  here.batch = m.value("batch", std::int64_t{0});
  here.peak_gib = m.value("peak_gib", 0.0);
  here.capacity_gib = m.value("capacity_gib", 0.0);
  return here;
}

/// --params: a decoder built to that size by a stated rule (models::sized_decoder), never a preset swapped
/// in silently; the advice says which model it priced and how far its exact count is from the request.
std::string params_note(double requested, const models::SizedDecoder& d) {
  const double n = static_cast<double>(d.params);
  const std::string count = n >= 1e12 ? fmt::format("{:.3g} T", n / 1e12)
                            : n >= 1e9 ? fmt::format("{:.3g} B", n / 1e9)
                                       : fmt::format("{:.3g} M", n / 1e6);
  return fmt::format("model: a LLaMA-style decoder built to --params {:g} by the rule width = 128 x layers (a multiple of 4 from 8 up): {}: {} "
                     "parameters ({:+.1f}% from the request)",
                     requested, models::describe_shape(d.config), count, 100 * (n / requested - 1));
}

/// --gpus N: a count, as predict and train take it. Ids there (the flag's old meaning) are told where they go.
double gpu_count(const std::string& text) {
  std::int64_t n = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
  if (ec != std::errc() || end != text.data() + text.size() || n < 1 || n > 65536)
    throw InputError(fmt::format("--gpus {}: the most GPUs a plan may use, a count in [1, 65536] as in predict and train; "
                                 "name the cards to consider with --gpu (e.g. --gpu rtx-4090,h100-sxm)",
                                 strings::printable(text)));
  return static_cast<double>(n);
}

int run_advise(const AdviseArgs& a) {
  const auto facts = install_facts(a.facts);  // first: everything after prices with them
  const auto engine_preferred = install_preferred_engine();  // a user's default engine, before anything is priced
  catalog::Catalog cat = catalog::Catalog::builtin();
  for (const auto& f : a.catalogs) cat.add_file(f);
  advise::Assumptions assumptions = standing_assumptions(cat);
  advise::Scenario s;
  std::optional<workload::Workload> from_file;  // the scenario file's workload, resolved once
  if (!a.scenario_file.empty()) s = advise::read_scenario(a.scenario_file, assumptions, cat, &from_file);
  // Flags override the file; a file's shape options belong to its workload, not to another a flag names.
  const auto name_workload = [&s](const std::string& id) {
    if (id != s.workload) s.workload_options.clear();
    s.workload = id;
  };
  if (!a.workload.empty()) name_workload(a.workload);
  double params = kUnset;
  if (a.params_given) {
    if (!a.workload.empty()) throw InputError("--workload and --params both name the model; give one");
    params = models::parse_decoder_size(a.params, "--params");
    name_workload(models::sized_decoder_id(params));
  }
  if (!a.task.empty()) s.task = a.task;
  if (!a.finetune.empty()) s.finetune = a.finetune;
  if (!a.precision.empty()) {
    s.precision = a.precision;
    s.precision_named = true;
  }
  if (!a.purchase.empty()) s.purchase = a.purchase;
  if (!std::isnan(a.tokens) && !std::isnan(a.samples)) throw InputError("--tokens and --samples both give the work; give one");
  if (!std::isnan(a.tokens)) s.work = a.tokens;
  if (!std::isnan(a.samples)) s.work = a.samples;
  if (!std::isnan(a.hours)) s.hours = a.hours;
  if (!std::isnan(a.sla)) s.sla_p99_ms = a.sla;
  if (!std::isnan(a.sla_ttft)) s.sla_ttft_ms = a.sla_ttft;
  if (!std::isnan(a.sla_tpot)) s.sla_tpot_ms = a.sla_tpot;
  if (!a.engine.empty()) s.engine = a.engine;
  if (!a.release.empty()) s.release = a.release;
  if (!std::isnan(a.rps)) s.requests_per_s = a.rps;
  if (!std::isnan(a.budget)) s.budget_usd = a.budget;
  if (a.tenants != -1) s.tenants = a.tenants;
  if (a.seq_len != 0) s.seq_len = a.seq_len;
  if (a.gen_len != 0) s.gen_len = a.gen_len;
  // A card's benchmarks: its options corrected as predict --calibration corrects its prediction.
  if (!a.calibration.empty()) s.calibration = load_calibration(a.calibration, cat);
  // Your stack, measured (solved with that calibration, so its card is corrected once): every option whose framework or
  // engine and precision or format match moves by it. What neither the flags nor a scenario file say is what the figures
  // ran, taken as predict and compare take it (measured_request): the workload, the task, the precision or weights, the
  // engine or framework and a whole request's lengths; advise chooses batch, tp and the rest for each option it ranks.
  // Before --options, whose keys mean what the task and workload make them.
  std::vector<std::string> read_as, taken;
  std::optional<perf::StackCalibration> stack;
  const perf::Calibration* cal = s.calibration ? &*s.calibration : nullptr;
  if (a.scenario_file.empty() && (!a.measured.empty() || !a.stack_file.empty())) {
    auto said_options = perf::parse_option_pairs(a.options);  // what the flags say stays theirs
    if (!a.engine.empty()) said_options.try_emplace("framework", a.engine);
    if (a.seq_len != 0 || said_options.count("seq_len"))
      said_options.try_emplace("prompt_len", a.seq_len != 0 ? std::to_string(a.seq_len) : said_options.at("seq_len"));
    if (a.gen_len != 0) said_options.try_emplace("gen_len", std::to_string(a.gen_len));
    const bool task_given = !a.task.empty();
    FlagRequest fr{.workload = s.workload,
                   .mode = task_given ? (s.task == "infer" ? "infer" : "train") : "",
                   .precision = a.precision,
                   .options = perf::option_pairs_text(said_options),
                   .workload_given = !a.workload.empty() || a.params_given,
                   .mode_given = task_given};
    // A serving engine, its weight formats and a whole request's lengths belong to a decoder served alone (tenants
    // sharing a card are priced under a framework profile); batch and tp advise chooses.
    fr.takes_options = s.tenants == 1 ? std::vector<std::string>{"framework", "prompt_len", "gen_len"} : std::vector<std::string>{};
    fr.takes_precision = s.tenants == 1;
    fr.takes_batch = false;
    fr.served_as = "infer";  // whole requests
    if (task_given) fr.said_as = s.task;
    stack = measured_request(cat, a.measured, a.stack_file, cal, fr, taken, &read_as);
    if (!fr.workload_given) name_workload(fr.workload);
    if (!task_given) s.task = fr.mode == "infer" ? "infer" : "train";
    if (a.precision.empty() && !fr.precision.empty()) {
      s.precision = fr.precision;
      s.precision_named = true;
    }
    if (!fr.figures_from.empty()) check_measured_request(fr, workload::Workload(s.workload, s.workload_options));  // as predict and compare refuse
    std::map<std::string, std::string> from_figures;
    for (const auto& [k, v] : perf::parse_option_pairs(fr.options))
      if (!said_options.count(k)) from_figures[k] = v;
    if (!from_figures.empty()) apply_request_options(from_figures, {a.engine, a.release, a.seq_len, a.gen_len}, s);
  } else {
    stack = measured_stack(cat, a.measured, a.stack_file, cal, &read_as);
  }
  if (stack) s.stack = stack->ratios;
  // predict's words for the same request (framework, seq_len, prompt_len, gen_len, release), once the task is known.
  if (!a.options.empty()) apply_request_options(perf::parse_option_pairs(a.options), {a.engine, a.release, a.seq_len, a.gen_len}, s);
  if (!a.gpu.empty()) {
    s.gpus.clear();
    for (const auto& item : a.gpu) {
      std::stringstream ss(item);
      for (std::string g; std::getline(ss, g, ',');)
        if (!g.empty()) s.gpus.push_back(gpu_id(cat, g));  // ids, aliases, or the names nvidia-smi prints
    }
  }
  if (a.top == 0) throw InputError("--top must be at least 1");
  apply_assumption_options(a.costs, assumptions, cat);
  if (!a.gpus.empty()) assumptions.set("max_gpus", gpu_count(a.gpus), cat);  // over --assume max_gpus: the flag is the narrower
  std::optional<advise::MeasuredMachine> here;
  if (a.measured_run != 0) here = measured_machine(a);
  // Flags may have named another workload than the file's: advise resolves that one (validated_workload).
  advise::Advice adv = from_file ? advise::advise(cat, *from_file, s, assumptions, here ? &*here : nullptr)
                                 : advise::advise(cat, s, assumptions, here ? &*here : nullptr);
  if (!std::isnan(params))
    adv.notes.insert(adv.notes.begin(), params_note(params, models::sized_decoder_for_id(s.workload)));
  if (stack) {
    adv.assumed.push_back(fmt::format("your measured stack, {} {}: matrix kernels x{:.3f}, memory-bound kernels x{:.3f}, fixed costs x{:.3f}, "
                                      "on every option that runs it (the others as the model has them)",
                                      stack->ratios.engine, stack->ratios.format, stack->ratios.gemm, stack->ratios.memory, stack->ratios.fixed));
    for (const auto& st : stack->steps) adv.notes.push_back("measured " + stack_step_line(st));
    if (stack->solved_with) adv.assumed.push_back(stack_solved_with_line(*stack));
    for (const auto& r : read_as) adv.assumed.push_back(r);
    for (const auto& t : taken) adv.assumed.push_back(t);
    if (!a.scenario_file.empty()) adv.assumed.push_back(fmt::format("the request as {} and the flags say it (nothing taken from your measurements)",
                                                                    strings::escape_control(a.scenario_file)));
  }
  nlohmann::json doc = advise::advice_json(adv);
  doc["measured"] = stack ? stack_json(*stack) : nlohmann::json(nullptr);
  if (!print_structured(doc, a.out, {"ranked", "ruled_out"})) fmt::print("{}", advise::advice_text(adv, a.top));
  return 0;
}

}  // namespace

Runner add_advise_command(CLI::App& app) {
  auto a = std::make_shared<AdviseArgs>();
  auto* sub = app.add_subcommand("advise", "Rank GPU options for a training, fine-tuning or serving scenario");
  add_facts_option(sub, a->facts);
  sub->add_option("--scenario", a->scenario_file, "A TOML scenario file (flags override it)");
  sub->add_option("--workload", a->workload, "Workload id or model file");
  sub->add_option("--options", a->options, kRequestOptionsHelp);
  auto* params = sub->add_option("--params", a->params,
                                 "Model size in parameters (7e9, 13b, 500m; 1e7 to 2e12): a LLaMA-style decoder built "
                                 "to it, width = 128 x layers (workload decoder-<size>)");
  sub->add_option("--task", a->task, "train, finetune or infer (default train)");
  sub->add_option("--finetune", a->finetune, "full, lora or qlora (default lora)");
  sub->add_option("--precision", a->precision,
                  precision_help("Precision policy; a decoder served alone: or a weight format as predict takes it (int4-awq, q4_k_m, ...)"));
  sub->add_option("--tokens", a->tokens, "Tokens to train on (decoders)")->check(positive());
  sub->add_option("--samples", a->samples, "Samples to train on (other workloads)")->check(positive());
  sub->add_option("--hours", a->hours, "Deadline for the training run, hours")->check(positive());
  sub->add_option("--tenants", a->tenants, "Serving: tenants that share the fleet")->check(whole_in(1, 1 << 20));
  sub->add_option("--sla-p99-ms", a->sla, "Serving: p99 latency target, ms")->check(positive());
  sub->add_option("--sla-ttft-ms", a->sla_ttft, "LLM serving: time-to-first-token target, ms")->check(positive());
  sub->add_option("--sla-tpot-ms", a->sla_tpot, "LLM serving: time-per-output-token target, ms")->check(positive());
  sub->add_option("--release", a->release,
                  "The framework or engine release you run, YYYY-MM: a stack older than a card's native kernels is priced at what it "
                  "reaches there (as predict's --options release=)");
  sub->add_option("--engine", a->engine, "LLM serving engine: " + perf::engine_ids(", ") + " (default: " + perf::default_serving_engine() + ", or the engine your user config prefers)");
  sub->add_option("--requests-per-s", a->rps, "Serving: mean requests per second (all tenants)")->check(positive());
  sub->add_option("--budget", a->budget, "Budget in USD (buying: up front; renting: the job or a month of serving)")->check(positive());
  sub->add_option("--purchase", a->purchase, "buy, rent or either (default either)");
  sub->add_option("--gpu", a->gpu, "Candidate cards: catalog ids, aliases or nvidia-smi names, comma-separated or repeated (default: all)");
  sub->add_option("--gpus", a->gpus, "The most GPUs a plan may use, a count as in predict and train (default: max_gpus, 1024)");
  sub->add_option("--seq-len", a->seq_len, "Sequence length (transformers)")->check(whole_in(1, models::kMaxSeqLen));
  sub->add_option("--gen-len", a->gen_len, "Generated tokens per request (decoder serving)")->check(whole_in(1, models::kMaxSeqLen));
  add_assumption_options(sub, a->costs);
  sub->add_option("--top", a->top, "Ranked rows to show")->check(whole_in(1, 1000000))->capture_default_str();
  sub->add_option("--catalog", a->catalogs, "Add devices from a TOML file (repeatable)");
  sub->add_option("--measured-run", a->measured_run,
                  "Rank the machine an evaluate run measured too (gpuvs history lists runs): measured speed, no purchase")
      ->check(whole_in(1, std::numeric_limits<std::int64_t>::max()));
  sub->add_option("--db", a->db, "Results database for --measured-run (default $XDG_DATA_HOME/gpuvs/history.db)");
  sub->add_option("--calibration", a->calibration, "A gpuvs bench --save record: correct the model for the GPU it measured (as predict does)");
  add_measured_options(sub, a->measured, a->stack_file);
  add_output_option(sub, a->out);
  return [a, params] {
    a->params_given = params->count() > 0;
    return run_advise(*a);
  };
}

}  // namespace gpuvs::cli
