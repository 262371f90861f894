// SPDX-License-Identifier: Apache-2.0
// --options on advise and evaluate, in predict's words: one request, said the same way to every command.
#pragma once
#include <cstdint>
#include <map>
#include <string>

#include "advise/advisor.hpp"
#include "models/networks.hpp"

namespace gpuvs::cli {

/// --options' help on advise and evaluate.
inline constexpr const char* kRequestOptionsHelp =
    "k=v;k=v as predict takes them: framework (the serving engine of a served decoder, else the framework profile), seq_len "
    "(prompt_len when serving), gen_len, release=YYYY-MM, network=ID (the fabric between servers of a plan past one); and the workload's shape: an ONNX file's symbolic dims ('sequence=128'), "
    "the gpt workload's 'layers=..;hidden=..;heads=..'";

/// What the command's own flags said (empty or 0: not given), so that --options saying otherwise is refused.
struct RequestFlags {
  std::string engine, release;
  std::int64_t seq_len = 0, gen_len = 0;
};

/// Applies `options` (predict's --options keys) to the scenario, whose task and workload the command has set:
/// framework (the serving engine for a served decoder, else the framework profile: pytorch, nemo, tensorrt, ...),
/// seq_len (prompt_len too for a served decoder), gen_len, release and network set its fields, over a scenario file's; every
/// other key is a shape option of the workload (an ONNX file's symbolic dims, the gpt workload's layers, ...), said over
/// the scenario's key by key (the command clears a file's when a flag names another workload), which advise checks; a
/// key that is one of the workload's own shape options (an ONNX dim named seq_len) stays one. InputError (one line)
/// for a value the command's own flag says otherwise, a framework no profile or engine has, a key advise chooses for
/// each option itself (tp, pp, vp, cp, sharding, recompute, global_batch, sequence_parallel), finetune (--task
/// finetune --finetune), and predict's keys advise does not take, naming why.
void apply_request_options(const std::map<std::string, std::string>& options, const RequestFlags& flags, advise::Scenario& s);

}  // namespace gpuvs::cli
