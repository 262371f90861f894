// SPDX-License-Identifier: Apache-2.0
// A stored calibration is a file (issue 35): `gpuvs calibrate MEASUREMENT... --save my-stack.toml` writes what the
// measurements said about a stack, human-readable, with the figures it came from; `--stack my-stack.toml` on predict
// and compare applies it on another machine without the measurements.
#pragma once
#include <string>

#include "core/files.hpp"
#include "perf/stack_calibration.hpp"

namespace gpuvs::perf {

/// The calibration as TOML: the engine (or framework profile) and format, the three ratios, what the measurements
/// leave open, and a [[step]] per figure solved (where it came from, card, mode, kernels, unit, measured, the model's
/// figure before and after, ratio, note), and a [[figure]] per figure given, in order (what it ran: source, mode,
/// workload, precision, batch, options; a file written before gpuvs kept them has none).
std::string stack_toml(const StackCalibration& s);

/// Reads stack_toml's output back. InputError "WHERE[:LINE]: ..." for malformed TOML, an unknown or missing key, a
/// schema other than 1, or a ratio that is not a finite number in [0.05, 20] (the solver's bounds).
StackCalibration parse_stack(const std::string& text, const std::string& where);

/// The output policy's view of the writer: files that hold stack_toml's first line are its own.
files::OutputSpec stack_output(const std::string& flag, bool force);

}  // namespace gpuvs::perf
