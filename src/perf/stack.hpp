// SPDX-License-Identifier: Apache-2.0
// What a measurement says about the software that ran it, carried to every card (issue 35): the stack's kernels of
// each class reach these multiples of the efficiencies the model assumes. Solved where the stack was measured
// (perf/stack_calibration.hpp); applied to any prediction of the same software (a serving engine or a training
// framework profile) and format (a weight format or a training precision), on whatever card, where each card keeps
// its own bandwidth, peaks, clock, waves and launches: only the classes measured move.
#pragma once
#include <string>
#include <vector>
#include <string_view>

#include "perf/efficiency.hpp"

namespace gpuvs::perf {

struct StackRatios {
  std::string engine, format;  // the software and format measured: other predictions are not touched
  double memory = 1;  // memory-bound kernels (streaming fraction of DRAM bandwidth)
  double gemm = 1;    // matrix kernels: GEMMs and convolutions (fraction of the matrix peak)
  double fixed = 1;   // fixed costs per kernel or iteration: gaps between kernels, launches the GPU waits for, host work
  std::vector<std::string> measured_gpus;  // the cards the figures ran on: they take the ratios whole
};

/// The ratios as they apply on `gpu`: whole on a card a figure ran on; on any other, ratio^transfer_share
/// (perf/constants.hpp), the share of a figure's error that is its stack's rather than its card's.
StackRatios carried_to(const StackRatios& stack, std::string_view gpu);

/// Moves `eff` by `stack` when one is given and it measured `engine` with `format`: the GEMM and convolution
/// ceilings by the matrix ratio and the memory fraction by the memory ratio (each held to 98% of its peak), the
/// per-kernel launch cost by the fixed-cost ratio. Attention kernels and collectives are not moved (no measurement
/// class isolates them yet). Returns whether it applied.
bool apply_stack(EfficiencyParams& eff, const StackRatios* stack, std::string_view engine, std::string_view format, std::string_view gpu);

}  // namespace gpuvs::perf
