// SPDX-License-Identifier: Apache-2.0
// `--measured FILE|SPEC` (issue 35): the figures a team already has, read and put in gpuvs's terms for the
// stack calibration (perf/stack_calibration.hpp). A FILE is read as the tool that wrote it wrote it
// (llama-bench's md, csv, json, jsonl or sql so far); a SPEC is key=value pairs (measured/spec.hpp).
#pragma once
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "catalog/catalog.hpp"
#include "perf/stack_calibration.hpp"
#include "perf/validation.hpp"
#include "workload/workload.hpp"

namespace gpuvs::cli {

/// Every figure `args` name, resolved: the card (a catalog id or alias, or the name the tool printed), the
/// workload (named, or the built-in decoder with the tool's parameter count), the weight format, the engine,
/// and the test as a serving request (prefill of n_prompt tokens, or decode of n_gen after the depth, one
/// sequence; llama.cpp's layers offloaded as ngl). InputError naming FILE:LINE for what cannot be resolved:
/// no card named, several cards, a CPU run, a model no built-in decoder matches, a weight format gpuvs does
/// not price, a combined or deep prefill test.
std::vector<perf::StackMeasurement> measured_inputs(const catalog::Catalog& cat, const std::vector<std::string>& args);

/// A measured training run (`--measured 'gpu=rtx-3090;workload=resnet50;mode=train;precision=amp-fp16;batch=256;value=905
/// images/s'`): the figure is the run's total over its gpus=, batch= is per GPU.
struct TrainingMeasured {
  perf::PredictRequest request;
  double value = 0;
  std::string unit, source;
};
/// The training figures among `args` (typed specs, and TensorBoard logs named by file=), resolved (card, precision,
/// framework, a step rate made samples/s); empty when none is one. InputError when training figures come with
/// served ones, or a figure carries serving keys.
std::vector<TrainingMeasured> training_figures(const catalog::Catalog& cat, const std::vector<std::string>& args);
/// The first of training_figures (what a command leaves unsaid is what it ran); nullopt when there is none.
std::optional<TrainingMeasured> training_measured(const catalog::Catalog& cat, const std::vector<std::string>& args);
/// perf::calibrate_training over the figures: one stack, each figure fixing the class it is most sensitive to. `cal`:
/// the calibration (gpuvs bench --save) the command applies, so its card's figures are solved as the command prices it.
perf::StackCalibration calibrate_trained(const catalog::Catalog& cat, const std::vector<TrainingMeasured>& figures,
                                         const perf::Calibration* cal = nullptr);

/// Every measurement `args` name calibrated as one stack: a training figure by perf::calibrate_training, served
/// decoders' figures by perf::calibrate_stack. `read_as` gets how the measurements' names were read (each once); `cal`
/// as calibrate_trained's.
perf::StackCalibration calibrate_measured(const catalog::Catalog& cat, const std::vector<std::string>& args, std::vector<std::string>* read_as = nullptr,
                                          const perf::Calibration* cal = nullptr);

/// --stack FILE: a stored calibration (gpuvs calibrate --save), read as one of this run's inputs.
perf::StackCalibration read_stack(const std::string& path);
/// read_stack, checked against the
/// calibration the command applies (`cal`, null for none: perf::check_stack_calibration).
perf::StackCalibration load_stack(const std::string& path, const perf::Calibration* cal);

/// Notes every file `args` reads (an output named as is, or a spec's file=) as an input the command's outputs may
/// not land on; call before checking the outputs.
void note_measured_inputs(const std::vector<std::string>& args);

/// The stack a pricing command was given: calibrate_measured of `measured`, else load_stack of `stack_file`, else none;
/// `cal`: the calibration the command applies (gpuvs bench --save), null for none.
std::optional<perf::StackCalibration> measured_stack(const catalog::Catalog& cat, const std::vector<std::string>& measured,
                                                     const std::string& stack_file, const perf::Calibration* cal,
                                                     std::vector<std::string>* read_as = nullptr);

/// A pricing request as a command's flags gave it, for measured_request to complete.
struct FlagRequest {
  std::string workload, mode, precision, options;  // precision "": the default rule
  std::int64_t batch = 0;                           // 0: the default
  bool workload_given = false, mode_given = false;
  bool trained = false;  // set by measured_request: the figures are training runs
  /// Set by measured_request where it read what the figures ran: "--measured" or "--stack FILE" ("": nothing read).
  std::string figures_from{};
  /// What the command takes from a figure at all (advise chooses batch, tp and the like for each option it ranks): the
  /// option keys (nullopt: every one), its batch, its precision or weights, and the mode it serves a decoder's figures
  /// in ("": the figure's own).
  std::optional<std::vector<std::string>> takes_options{};
  bool takes_batch = true;
  bool takes_precision = true;
  std::string served_as{};
  /// What messages call the request where the command names it otherwise than its mode (advise's "finetune", priced as
  /// train); "": its mode.
  std::string said_as{};
};

/// True where a figure's workload names a model on this machine by its path (a model file, or a checkpoint folder), not
/// an id: a stored stack keeps it absolute, so that it names the same model from any directory.
bool names_local_model(const std::string& workload);

/// The stack a pricing command's measurements give (measured_stack with `cal`), and what the command left unsaid taken
/// from the figures as they ran, each said in `said` (predict's and compare's rule, one for both): a training run's
/// workload, precision and framework (mode train), and its batch where the request is of its workload; a served
/// decoder's workload and weights (its decode figure's, else its first), and its mode, and where the request is of that
/// mode its lengths, options and batch. A stored stack (`stack_file`) gives what its steps say they ran by the same
/// rule; a file that does not say (written before gpuvs kept it) gives nothing, said. How the figures' names were read
/// goes to `read_as`, else to `said`.
std::optional<perf::StackCalibration> measured_request(const catalog::Catalog& cat, const std::vector<std::string>& measured,
                                                       const std::string& stack_file, const perf::Calibration* cal, FlagRequest& r,
                                                       std::vector<std::string>& said, std::vector<std::string>* read_as = nullptr);

/// InputError where the figures measured_request read cannot calibrate the request it completed (`w`: its workload): a
/// served decoder's figures for a workload that is not a decoder or for its training, a training run's for a served
/// request. Nothing where it read none (r.figures_from empty: no --measured, or a stack file that does not say).
void check_measured_request(const FlagRequest& r, const workload::Workload& w);

/// `--measured FILE|SPEC` (repeatable) and `--stack FILE` (the one or the other) on a pricing command, said the same
/// way on every command that takes them.
void add_measured_options(CLI::App* sub, std::vector<std::string>& measured, std::string& stack_file);

/// Every measurement `args` name as a published row for `gpuvs validate --measured`: a served decoder's figure (per
/// system, its request's options), a training run's (per system), or a collective's at each message size (an
/// nccl-tests output: its bus bandwidth over the group's ranks). Cards resolved as for --measured; the row's id is
/// where it came from (FILE:LINE).
std::vector<perf::PublishedRow> measured_rows(const catalog::Catalog& cat, const std::vector<std::string>& args);

/// The calibration as JSON, the same in every command: the engine and format, the ratios, each measurement's step
/// (source, card, mode, kernels, measured, predicted before and after, ratio, note) and what it leaves open.
nlohmann::json stack_json(const perf::StackCalibration& s);
/// How the stack was solved where a calibration (gpuvs bench --save) priced its figures, in words; "" where none did.
std::string stack_solved_with_line(const perf::StackCalibration& s);
/// One step in words: "SOURCE: decode 37.71 tokens/s on rtx-3090; the model gave 33.14: memory kernels x0.902 (NOTE)".
std::string stack_step_line(const perf::StackStep& st);

}  // namespace gpuvs::cli
