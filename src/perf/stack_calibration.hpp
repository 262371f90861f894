// SPDX-License-Identifier: Apache-2.0
// Your measurement in, the other cards out (issue 35): what measured serving figures say about the software
// that ran them. A prefill figure (prompt tokens/s) fixes how close the engine's matrix kernels come to the
// model's assumption; a decode figure, given that, how close its memory-bound kernels come, and where even
// those kernels at their ceiling are too slow for it, how much lower the engine's fixed costs per token are
// (a newer build launching a graph, not a kernel at a time). Each ratio is
// solved so the model reproduces its measurement on the card it was made on, with that card's own
// bandwidth, peaks, clock, launches and host work; carried to another card it moves only those kernels'
// efficiencies, so a card with more fixed cost per token or a different balance of bandwidth and math gets
// a different correction than a flat scale factor would give.
#pragma once
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "catalog/catalog.hpp"
#include "perf/predict.hpp"
#include "perf/serving.hpp"

namespace gpuvs::perf {

/// One measured serving figure in gpuvs's terms: the request as it ran (mode prefill or decode, on the card
/// it ran on) and what it measured, in the prediction's unit (tokens/s).
struct StackMeasurement {
  ServingRequest request;
  double value = 0;
  std::string source;  // FILE:LINE or --measured
  std::string note;    // how the measurement's names were read (the model a tool printed as a gpuvs workload)
};

/// What a figure ran, as a request says it: a stored stack keeps it so that a command given the file (--stack) takes
/// what it leaves unsaid from it as it would from the figures (cli::measured_request).
struct StackRun {
  std::string source;                          // where the figure came from (FILE:LINE or --measured)
  std::string mode;                            // train, prefill, decode or infer
  std::string workload;                        // an id, or a model file as the measurement named it
  std::string precision;                       // a served figure's weight format; a training run's precision ("": none named)
  std::int64_t batch = 0;                      // sequences (served) or samples per GPU (training); 0: none said
  std::map<std::string, std::string> options;  // the request's: engine or framework, lengths, tp, ngl, ...
};

struct StackStep {
  std::string source, gpu, mode, op_class;  // op_class: "matrix" (prefill), "memory" or "fixed-cost" (decode)
  std::string unit = "tokens/s";             // of measured and predicted
  double measured = 0, predicted_before = 0, predicted_after = 0, ratio = 1;
  std::string note;  // set when the ratio met a bound and the model cannot reproduce the figure
  bool held_at_ceiling = false;  // a kernel class at its efficiency ceiling short of the figure: the ratio is the least
                                 // one that reaches the ceiling (higher changes nothing), not the search's bound
  std::size_t measurement = 0;  // which of the measurements given
};

struct StackCalibration {
  StackRatios ratios;
  std::vector<StackStep> steps;
  std::vector<std::string> open;  // what the measurements leave at the model's assumption, said in words
  /// The bench record (gpuvs bench --save) that corrected a measured card while the ratios were solved: they reproduce
  /// that card's figures only with it applied, so the stack is used with it and no other (check_stack_calibration).
  /// Empty when no figure's card was calibrated.
  std::optional<Calibration> solved_with;
  /// What each figure given ran, in the order given (calibrate_stack's and calibrate_training's); empty where not known
  /// (calibrate_figure's bare rate, a stack file written before gpuvs kept it).
  std::vector<StackRun> runs;
  /// Whether the figures were training runs (the engine a training framework profile, not a serving engine).
  bool trained() const;
};

/// Whether one of the stack's figures ran on `gpu` (a catalog id): that card takes its ratios whole.
bool measured_on(const StackCalibration& s, const std::string& gpu);

/// InputError "WHERE: ..." when a stack and the calibration a command applies (`cal`, null for none) disagree about a
/// card the stack's figures ran on: the ratios were solved against the model with s.solved_with, so a calibration the
/// stack was solved without corrects that card twice, and without the one it was solved with (or with another) the
/// card's figure no longer reproduces its measurement. A calibration of a card no figure ran on changes nothing here.
void check_stack_calibration(const StackCalibration& s, const Calibration* cal, const std::string& where);

/// A prediction's rate under a stack's ratios (the caller's request, priced with them).
using StackRate = std::function<double(const StackRatios&)>;

/// What one measured figure of any kind (a training step rate, batched serving, ...) fixes: the ratio of the class
/// its rate is most sensitive to on the card it ran on, in the direction the figure asks for (each class moved
/// 1.25x towards the measurement in turn: the class that takes most of its time and has room to move), solved so
/// `rate` reproduces `measured`. Where that class at its bound cannot reach the figure, the next most sensitive
/// class is solved with it held there (a step each); a figure no class reaches moves nothing (ratios = `base`).
/// `base` carries the engine and format; the classes not solved stay at its ratios, said in `open`.
StackCalibration calibrate_figure(const StackRate& rate, double measured, const std::string& unit, StackRatios base);

/// A measured training run (`measured` in `unit`, the run's total over req.gpus GPUs) on req.gpu: calibrate_figure on the
/// prediction of `req` (which must carry no stack), for the framework profile and precision it resolves to. InputError
/// when `unit` is not the prediction's unit.
StackCalibration calibrate_training(const catalog::Catalog& cat, const workload::Workload& w, const PredictRequest& req, double measured,
                                    const std::string& unit, const std::string& source);

/// One measured training run, for calibrate_training over several.
struct TrainingFigure {
  const workload::Workload* workload = nullptr;
  PredictRequest request;  // carries no stack
  double measured = 0;     // the run's total over request.gpus GPUs, in `unit`
  std::string unit, source;
};

/// Several measured training runs of one stack (one framework profile and precision; any cards, batches, workloads):
/// one figure is calibrate_training's. Each of several fixes the class its rate is most sensitive to on its card
/// (a large batch its matrix kernels, a small one its memory-bound kernels or fixed costs), the classes solved in
/// turn, matrix first, each given those before it; figures of one class give the geometric mean of their ratios.
/// A class no figure is most sensitive to stays at the model's assumption, said in `open`. InputError for none, a
/// figure whose unit is not its prediction's, or figures of different frameworks or precisions.
StackCalibration calibrate_training(const catalog::Catalog& cat, const std::vector<TrainingFigure>& figures);

/// A figure's request may carry a calibration (gpuvs bench --save): the ratios are then solved against the model with
/// it, so the card it measured is not corrected twice, and the stack records it (solved_with). The same holds for
/// calibrate_training's requests.
/// The stack's ratios from `ms` (one engine and weight format; any cards): the matrix ratio from the prefill
/// figures, then the memory ratio from the decode figures under it; several figures of one class give the
/// geometric mean of their ratios. A ratio is held to [0.05, 20] (and the efficiencies it moves to 98% of a
/// peak); a figure the bounds cannot reproduce says so in its step's note. InputError for no measurements,
/// several engines or formats, a mode other than prefill or decode, or a figure that is not a positive rate.
StackCalibration calibrate_stack(const catalog::Catalog& cat, const std::vector<StackMeasurement>& ms);

}  // namespace gpuvs::perf
