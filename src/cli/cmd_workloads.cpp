// SPDX-License-Identifier: Apache-2.0
// gpuvs workloads: every built-in network a workload can name, with its family, size and default sequence,
// and the other ways to name one (a decoder built to a size, the gpt shape, model files).
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "cli/assumption_options.hpp"
#include "cli/commands.hpp"
#include "cli/output.hpp"
#include "core/strings.hpp"
#include "core/units.hpp"
#include "models/networks.hpp"

namespace gpuvs::cli {

namespace {

constexpr const char* kOtherNames =
    "Also: decoder-<size> (a LLaMA-style decoder built to a size, decoder-500m ... decoder-2t), gpt with its shape "
    "in --options (layers, hidden, heads, ...), and model files: gpuvs .toml/.json, Keras .keras or model.to_json() "
    ".json, a Hugging Face config.json, ONNX .onnx, a llama.cpp GGUF .gguf (its weights priced as stored).";

int run_workloads(Output out) {
  const auto& nets = models::networks();
  if (out != Output::table) {
    nlohmann::json arr = nlohmann::json::array();
    for (const auto& n : nets)
      arr.push_back({{"id", n.id}, {"family", models::family_name(n.family)}, {"params", n.published_params},
                     {"params_source", n.params_source}, {"seq_len", n.default_seq_len > 0 ? nlohmann::json(n.default_seq_len) : nlohmann::json(nullptr)},
                     {"max_positions", n.decoder.max_positions > 0 ? nlohmann::json(n.decoder.max_positions) : nlohmann::json(nullptr)},
                     {"sample_unit", n.sample_unit}, {"description", n.description}});
    // csv, md: a row per workload (the `also` note is said on the table only).
    if (out == Output::json) print_json(nlohmann::json{{"schema_version", 1}, {"workloads", arr}, {"also", kOtherNames}});
    else print_structured(nlohmann::json{{"workloads", arr}}, out, {"workloads"});
    return 0;
  }
  fmt::print("{:<18} {:<8} {:>9} {:>8}  {}\n", "workload", "family", "params", "seq len", "description");
  for (const auto& n : nets)
    fmt::print("{:<18} {:<8} {:>9} {:>8}  {}\n", n.id, models::family_name(n.family),
               n.published_params > 0 ? units::format_si(n.published_params) : "-", n.default_seq_len > 0 ? std::to_string(n.default_seq_len) : "-",
               n.description);
  fmt::print("\n");
  for (const auto& line : strings::wrap_words(kOtherNames, 110)) fmt::print("{}\n", line);
  return 0;
}

}  // namespace

Runner add_workloads_command(CLI::App& app) {
  auto out = std::make_shared<Output>(Output::table);
  auto* sub = app.add_subcommand("workloads", "List the built-in workloads (networks) with their family, size and sequence length");
  add_output_option(sub, *out);
  return [out] { return run_workloads(*out); };
}

}  // namespace gpuvs::cli
