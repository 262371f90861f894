// `--measured FILE|SPEC` (issue 35): the figures a team already has, read and put in gpuvs's terms for the
// stack calibration (perf/stack_calibration.hpp). A FILE is read as the tool that wrote it wrote it
// (llama-bench's md, csv, json, jsonl or sql so far); a SPEC is key=value pairs (measured/spec.hpp).
#pragma once
#include <string>
#include <vector>

#include "catalog/catalog.hpp"
#include "perf/stack_calibration.hpp"

namespace gpuvs::cli {

/// Every figure `args` name, resolved: the card (a catalog id or alias, or the name the tool printed), the
/// workload (named, or the built-in decoder with the tool's parameter count), the weight format, the engine,
/// and the test as a serving request (prefill of n_prompt tokens, or decode of n_gen after the depth, one
/// sequence; llama.cpp's layers offloaded as ngl). InputError naming FILE:LINE for what cannot be resolved:
/// no card named, several cards, a CPU run, a model no built-in decoder matches, a weight format gpuvs does
/// not price, a combined or deep prefill test.
std::vector<perf::StackMeasurement> measured_inputs(const catalog::Catalog& cat, const std::vector<std::string>& args);

}  // namespace gpuvs::cli
