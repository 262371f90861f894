// SPDX-License-Identifier: Apache-2.0
// The advisor: the seed document's four yes/no questions (over ~10 B parameters? a run over 24 h?
// multi-tenant isolation? a strict inference SLA?) replaced by quantities. For a scenario it prices every
// option — GPU x count x strategy — with the performance model: memory fit (full training, ZeRO/FSDP,
// LoRA, QLoRA; the largest batch that fits, recompute when needed), time to finish, work expected to be
// lost to failures and the checkpoint interval that minimises it, tenants per card (MIG or dedicated
// cards), p99 latency against an SLA, and the cost of renting or buying. Options that meet every
// requirement are ranked by cost, each with the reason for its place; the rest are listed with why not.
#pragma once
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "advise/assumptions.hpp"
#include "catalog/catalog.hpp"
#include "perf/serving.hpp"
#include "perf/stack.hpp"
#include "workload/workload.hpp"

namespace gpuvs::advise {

struct Scenario {
  std::string name;
  std::string workload = "seed-mlp";
  std::string task = "train";      // train | finetune | infer
  std::string finetune = "lora";   // with task=finetune: full | lora | qlora
  std::string precision = "amp-bf16";
  bool precision_named = false;    // false: the default rule (perf::default_precision), said as predict says it
  double work = 0;                 // tokens (decoders) or samples to process; 0: rate only
  std::optional<double> hours;     // deadline for training
  int tenants = 1;                 // serving: independent tenants sharing the fleet
  std::optional<double> sla_p99_ms;
  double requests_per_s = 0;       // serving: mean rate over the day, all tenants together
  std::optional<double> budget_usd;
  std::string purchase = "either"; // buy | rent | either
  std::vector<std::string> gpus;   // candidate catalog ids; empty: every catalog GPU
  std::int64_t seq_len = 0, gen_len = 0;  // 0: the workload's defaults
  // LLM serving (decoders): latency targets per request and the serving engine (perf/serving_engine.hpp).
  std::optional<double> sla_ttft_ms, sla_tpot_ms;
  std::string engine;              // empty: the serving default (vllm)
  // The framework profile training and non-LLM inference are priced under (data/frameworks.toml: pytorch, nemo,
  // tensorrt, ...; perf/framework.hpp), as predict's --options framework=. Empty: the default profile. Not a
  // scenario-file key: it comes from the command line (--options framework=).
  std::string framework;
  // The framework or engine release the user runs, YYYY-MM (perf/maturity.hpp): a stack older than a card's native
  // kernels is priced at what it reaches there. Empty: the profile's own release.
  std::string release;
  // The fabric between servers in a plan past one (data/networks.toml's id, as predict's --options network=): evaluate
  // sets the one it measured across an MPI job's nodes. Empty: the one a cluster of each card usually has (perf::default_fabric), said.
  std::string network;
  /// The workload's own shape options: the gpt workload's layers/hidden/heads..., an ONNX file's symbolic dims.
  std::map<std::string, std::string> workload_options;
  /// A measured stack (--measured, --stack: perf/stack.hpp), applied to every option whose framework or engine and
  /// precision or format match it. Not a scenario-file key: it comes from the command line.
  std::optional<perf::StackRatios> stack;
  /// A device's measured corrections (a gpuvs bench --save record: --calibration; evaluate's own run's), applied to the
  /// options on the card it measured, as predict --calibration applies them. Not a scenario-file key.
  std::optional<perf::Calibration> calibration;
};

/// Reads a scenario from TOML (the same keys as the fields above, plus an [assume] table). InputError
/// with file:line for unknown keys, wrong types and impossible values.
/// The scenario is validated, which resolves its workload: that workload goes to `resolved` when given, so
/// a command hands it on (advise's overload taking a Workload) instead of resolving the file's model again.
Scenario read_scenario(const std::string& path, Assumptions& assumptions, const catalog::Catalog& cat,
                       std::optional<workload::Workload>* resolved = nullptr);
/// Checks a scenario (flags or file): InputError naming the bad field.
void validate(const Scenario& s, const catalog::Catalog& cat);
/// The same, returning the scenario's workload: `resolved` when it is the one the scenario names
/// (Workload::is), else the scenario's own, resolved here. A command that has resolved its workload already
/// hands it in, so the advice prices what the command's predictions priced.
workload::Workload validated_workload(const Scenario& s, const catalog::Catalog& cat, const workload::Workload* resolved = nullptr);

struct Option {
  std::string gpu_id, gpu_name;
  int count = 1;
  std::string strategy;           // single | ddp | zero2 | fsdp | lora | qlora | serve-mig | serve-dedicated | serve-shared; past one
                                  // server: 3d | tp x dp | pp x dp | dp (zero1), the plan's dimensions
  std::string precision;
  std::int64_t batch = 0;
  std::string recompute = "none";
  std::string plan;               // past one server: tp x pp x dp, micro-batches, the link each dimension runs over
  std::string network;            // past one server: the fabric between the servers (data/networks.toml's id)
  std::string network_note;       // ... and why that one, where the scenario named none (perf::default_fabric's reason)
  bool fits = false;
  double peak_gib = 0, capacity_gib = 0;  // per GPU (per MIG slice when serving on MIG)
  double throughput = 0;          // all cards together, in `unit`
  std::string unit;
  // Training.
  double compute_hours = 0, lost_hours = 0, total_hours = 0;
  double mtbf_hours = 0, checkpoint_interval_hours = 0, expected_failures = 0, checkpoint_gb = 0;
  bool ecc = true;
  // Serving.
  double latency_p99_ms = 0, capacity_rps = 0;
  double ttft_ms = 0, per_token_ms = 0;  // decoder serving: time to first token, then per generated token
  std::optional<double> usd_per_million_tokens;  // decoder serving: the cost basis over the output tokens served
  int tp = 1;                     // decoder serving: tensor-parallel GPUs per replica
  int tenants_per_card = 0;
  std::string isolation;
  // Cost.
  std::optional<double> rent_usd, buy_upfront_usd, buy_usd, energy_usd, breakeven_utilization;
  std::optional<double> cost_usd;  // the cost the ranking uses
  std::string cost_basis;          // rent | buy | none
  bool feasible = false;
  std::vector<std::string> why_not;
  std::string reason;
  std::vector<std::string> would_fit_with;  // ruled out for memory: the nearest changes that make it fit, priced
  std::vector<std::string> software;        // training: kernels the profile's release predates on this card (perf/maturity.hpp)
  int rank = 0;
};

struct Advice {
  Scenario scenario;
  std::string work_unit;   // tokens, samples, images; requests for serving
  std::string cost_what;   // "to finish the job" | "per month"
  std::vector<Option> ranked;     // each GPU's best feasible option, best first
  std::vector<Option> ruled_out;  // the nearest attempt per GPU that has no feasible option, with why
  std::vector<Option> options;    // every feasible option (GPU x count x strategy), best first
  std::vector<Assumption> assumptions;
  std::vector<std::string> assumed;  // what the scenario left to gpuvs and what it took (the sequence length, ...)
  std::vector<std::string> notes;
};

/// The machine the user already has, measured training the scenario's workload (evaluate trains it). The
/// advisor ranks it as an option like any GPU: its measured speed, no purchase, electricity only at the
/// `this_machine_watts` assumption. Training scenarios only; the workload must be the one measured.
struct MeasuredMachine {
  std::string name;              // shown as the option's device, e.g. "this machine: Intel Xeon (2 cores), CPU"
  std::string workload;          // the workload id it trained
  std::string precision;         // what it ran, e.g. "fp32"
  double throughput = 0;         // measured, in the workload's unit per second
  std::int64_t batch = 0;
  double peak_gib = 0, capacity_gib = 0;
};

/// The option id the measured machine gets in the ranking.
inline constexpr const char* kThisMachine = "this-machine";

Advice advise(const catalog::Catalog& cat, const Scenario& s, const Assumptions& a, const MeasuredMachine* here = nullptr);
/// The same with the scenario's workload resolved by the caller (validated_workload).
Advice advise(const catalog::Catalog& cat, const workload::Workload& w, const Scenario& s, const Assumptions& a,
              const MeasuredMachine* here = nullptr);

/// Whether `name` is a precision policy (perf::parse_precision reads it), not a weight format.
bool is_precision_policy(const std::string& name);
/// The serving request a scenario's decoder is priced with on `gpu_id`: the scenario's engine, release and lengths
/// (seq_len is the prompt), `format` weights, replicas of `tp` GPUs, the measured stack, as many requests in flight
/// as fit (batch 0). The advice prices each LLM serving option with it and evaluate its predictions and curves, so
/// that every figure of one serving question comes from one request.
perf::ServingRequest serving_request(const Scenario& s, const workload::Workload& w, const std::string& gpu_id, const std::string& format,
                                     int tp = 1);

/// Young/Daly: the checkpoint interval that minimises expected waste, sqrt(2 C M), hours.
double optimal_checkpoint_interval(double checkpoint_hours, double mtbf_hours);

}  // namespace gpuvs::advise
