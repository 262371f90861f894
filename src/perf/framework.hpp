// SPDX-License-Identifier: Apache-2.0
// Framework profiles (data/frameworks.toml, compiled in): the software that runs a training step, as data.
// A profile sets the defaults of the mechanics the model prices — the attention kernel, optimizer-state
// sharding, the convolution layout — to what that framework does out of the box, and names what it does
// that the model does not price yet, so every prediction says which profile priced it and what it left out.
#pragma once
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "models/networks.hpp"

namespace gpuvs::perf {

struct FrameworkProfile {
  std::string id, name, source;
  std::map<std::string, std::string> defaults;  // prediction options: flash_attention, sharding, memory_format, ...
  std::vector<std::string> fuses;               // kernels it fuses that eager code runs apart (framework_fusions())
  std::vector<std::string> unmodelled;          // what the framework does that the model does not price
  int released = 0;  // the release it describes, perf/maturity.hpp's parse_month (0: undated, today's)
  // An inference engine builder (TensorRT): training with it is refused, and its GEMMs are the tactics it times
  // on the card when it builds the engine, so they reach the card's achievable GEMM rate (data/achievable.toml)
  // as serving engines' do, not the fitted fraction eager frameworks reach.
  bool inference_only = false;
  bool tuned_gemms = false;
  int line = 0;
};

/// The fusions a profile's `fuses` may name, each with what it means: fp8-shared-input-cast, fp8-norm-cast,
/// fp8-activation-cast, scale-mask-softmax, dropout-add, add-norm, gemm-activation (perf/roofline.hpp's KernelFusion), attention-views
/// (models::NetworkOptions::head_copies false) and fused-qkv (models::NetworkOptions::fused_qkv).
const std::vector<std::pair<std::string, std::string>>& framework_fusions();
bool fuses(const FrameworkProfile& f, const std::string& fusion);

/// The compiled-in profiles.
const std::vector<FrameworkProfile>& frameworks();
/// Parses profile TOML; InputError "WHERE:LINE: ..." for unknown keys, missing fields, bad values.
std::vector<FrameworkProfile> parse_frameworks(const std::string& text, const std::string& where);
/// By id; InputError naming the known ids when unknown.
const FrameworkProfile& framework(const std::string& id);

/// `options` with the profile's defaults added where the caller gave none ("model" leaves the workload
/// family's own default in place): the convolution layout for convolutional families only, optimizer
/// sharding and NVLink SHARP only when several GPUs train, the LoRA adapters' rank and targets only when the run fine-tunes with LoRA.
std::map<std::string, std::string> with_framework_defaults(const FrameworkProfile& f, std::map<std::string, std::string> options,
                                                           models::Family family, int gpus, bool training);

}  // namespace gpuvs::perf
