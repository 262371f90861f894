#include "perf/stack.hpp"

#include <algorithm>

namespace gpuvs::perf {

namespace {
constexpr double kMaxFraction = 0.98;  // no kernel reaches its unit's peak
}  // namespace

bool apply_stack(EfficiencyParams& eff, const StackRatios* stack, std::string_view engine, std::string_view format) {
  if (!stack || stack->engine != engine || stack->format != format) return false;
  eff.gemm_max = std::min(kMaxFraction, eff.gemm_max * stack->gemm);
  eff.conv_max = std::min(kMaxFraction, eff.conv_max * stack->gemm);
  eff.mem_max = std::min(kMaxFraction, eff.mem_max * stack->memory);
  eff.launch_s *= stack->fixed;
  return true;
}

}  // namespace gpuvs::perf
