// SPDX-License-Identifier: Apache-2.0
#include "perf/stack.hpp"

#include <algorithm>
#include <cmath>

#include "perf/constants.hpp"

namespace gpuvs::perf {

namespace {
constexpr double kMaxFraction = 0.98;  // no kernel reaches its unit's peak
}  // namespace

StackRatios carried_to(const StackRatios& stack, std::string_view gpu) {
  if (std::find(stack.measured_gpus.begin(), stack.measured_gpus.end(), gpu) != stack.measured_gpus.end()) return stack;
  const double share = active_constants().transfer_share;
  StackRatios on = stack;
  on.memory = std::pow(stack.memory, share);
  on.gemm = std::pow(stack.gemm, share);
  on.fixed = std::pow(stack.fixed, share);
  return on;
}

bool apply_stack(EfficiencyParams& eff, const StackRatios* stack, std::string_view engine, std::string_view format, std::string_view gpu) {
  if (!stack || stack->engine != engine || stack->format != format) return false;
  const StackRatios on = carried_to(*stack, gpu);
  eff.gemm_max = std::min(kMaxFraction, eff.gemm_max * on.gemm);
  eff.conv_max = std::min(kMaxFraction, eff.conv_max * on.gemm);
  eff.mem_max = std::min(kMaxFraction, eff.mem_max * on.memory);
  eff.launch_s *= on.fixed;
  return true;
}

}  // namespace gpuvs::perf
