// SPDX-License-Identifier: Apache-2.0
// gpuvs graph WORKLOAD: the graph IR the engine runs and the performance model prices, with its costs.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <nlohmann/json.hpp>

#include "cli/assumption_options.hpp"
#include "cli/commands.hpp"
#include "cli/output.hpp"
#include "cli/validators.hpp"
#include "core/error.hpp"
#include "core/strings.hpp"
#include "core/units.hpp"
#include "import/model_files.hpp"
#include "import/onnx/onnx_model.hpp"
#include "ir/cost.hpp"
#include "models/builder.hpp"
#include "models/networks.hpp"
#include "perf/predict.hpp"
#include "workload/resolve.hpp"
#include "workload/workload.hpp"

namespace gpuvs::cli {

namespace {
struct GraphArgs {
  std::string workload;
  std::int64_t batch = 32;
  std::int64_t seq_len = 0;
  std::string mode = "train";
  int flash = 1;
  std::string dtype = "f32";
  Output out = Output::table;
  bool ops = false;
  std::string options;  // the gpt workload's shape: layers=..;hidden=..;heads=..
};

ir::DType parse_dtype(const std::string& typed) {
  // The spellings --precision and PyTorch use too: fp32/float32, fp16/float16/half, bfloat16.
  const std::string s = strings::lower(perf::canonical_precision_name(typed));
  if (s == "f32" || s == "fp32") return ir::DType::f32;
  if (s == "f16" || s == "fp16") return ir::DType::f16;
  if (s == "bf16") return ir::DType::bf16;
  if (s == "fp8") return ir::DType::fp8;
  throw InputError(fmt::format("--dtype '{}' is not a dtype (expected f32, f16, bf16 or fp8)", strings::printable(s)));
}


/// The workload `gpuvs graph` shows, resolved once (it builds the forward graph and, for train, the step).
workload::Workload resolve(const GraphArgs& a) {
  const auto shape = perf::parse_option_pairs(a.options);
  if (!shape.empty() && a.workload != "gpt" && !import::is_onnx_path(a.workload))
    throw InputError(fmt::format("--options gives a shape to the gpt workload and an ONNX file's dimensions only, not to '{}'",
                                 strings::printable(a.workload)));
  workload::Workload w(a.workload, shape);
  if (import::is_onnx_path(a.workload))  // --options sizes the file's symbolic dimensions
    for (const auto& [key, value] : shape)
      if (std::find(w.network().shape_options.begin(), w.network().shape_options.end(), key) == w.network().shape_options.end())
        throw InputError(fmt::format("--options: '{}' names no symbolic dimension of {}", strings::printable(key), strings::printable(a.workload)));
  return w;
}

ir::Graph build(const GraphArgs& a, const workload::Workload& w, bool training, std::string& name, double& published,
                std::string& understood) {
  const models::NetworkInfo& net = w.network();
  // A Sequential model from a file (gpuvs's TOML/JSON, Keras's dense models): the graph the engine trains.
  if (net.family == models::Family::mlp && import::is_model_file(a.workload)) {
    const models::ModelSpec spec = workload::resolve_sequential(a.workload);
    name = spec.name;
    published = 0;
    return models::build_graph(spec, {a.batch, ir::DType::f32, training ? models::Mode::train : models::Mode::eval});
  }
  name = net.id;
  published = net.published_params;
  // What was read from a file (a Hugging Face config, an ONNX graph); a built-in name says nothing more.
  if (import::is_model_file(a.workload)) understood = net.description;
  return models::build_network(net, {a.batch, parse_dtype(a.dtype), a.seq_len, a.flash != 0, training});
}

int run_graph(const GraphArgs& a) {
  if (a.batch < 1) throw InputError(fmt::format("--batch must be at least 1, got {}", a.batch));
  if (a.seq_len < 0) throw InputError(fmt::format("--seq-len must be positive, got {}", a.seq_len));
  if (a.mode != "train" && a.mode != "eval")
    throw InputError(fmt::format("--mode '{}' is not a mode (expected train or eval)", strings::printable(a.mode)));
  std::string name, understood;
  double published = 0;
  const auto t0 = std::chrono::steady_clock::now();
  const workload::Workload w = resolve(a);
  const ir::Graph g = build(a, w, a.mode == "train", name, published, understood);
  const double build_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const ir::Graph fwd = a.mode == "train" ? build(a, w, false, name, published, understood) : ir::Graph{};
  const ir::OpCost total = ir::graph_cost(g);
  const ir::OpCost forward = ir::graph_cost(a.mode == "train" ? fwd : g);
  const std::int64_t params = models::param_count(g);
  std::map<std::string, std::pair<int, ir::OpCost>> by_op;
  for (const auto& n : g.nodes()) {
    auto& e = by_op[std::string(ir::op_name(n.op))];
    ++e.first;
    e.second += ir::op_cost(g, n);
  }
  if (a.out != Output::table) {
    nlohmann::json ops = nlohmann::json::object();
    for (const auto& [op, e] : by_op)
      ops[op] = {{"count", e.first}, {"matrix_flops", e.second.matrix_flops}, {"vector_flops", e.second.vector_flops},
                 {"bytes", e.second.bytes}};
    nlohmann::json j{{"schema_version", 1}, {"workload", name}, {"batch", a.batch}, {"mode", a.mode},
                     {"params", params}, {"nodes", g.size()}, {"by_op", ops},
                     {"forward", {{"matrix_flops", forward.matrix_flops}, {"vector_flops", forward.vector_flops},
                                  {"bytes", forward.bytes}}},
                     {"total", {{"matrix_flops", total.matrix_flops}, {"vector_flops", total.vector_flops},
                                {"bytes", total.bytes}}}};
    if (published > 0) j["published_params"] = published;
    if (!understood.empty()) j["understood"] = understood;
    if (a.ops) {
      nlohmann::json list = nlohmann::json::array();
      for (const auto& n : g.nodes()) {
        const auto c = ir::op_cost(g, n);
        list.push_back({{"id", n.id}, {"op", ir::op_name(n.op)}, {"name", n.name}, {"shape", n.shape},
                        {"dtype", ir::dtype_name(n.dtype)}, {"matrix_flops", c.matrix_flops},
                        {"vector_flops", c.vector_flops}, {"bytes", c.bytes}});
      }
      j["ops"] = list;
    }
    print_structured(j, a.out, a.ops ? std::vector<std::string>{"ops"} : std::vector<std::string>{});  // csv, md: a row per op with --ops
    return 0;
  }
  // Names come from model files: their control characters are shown as \xNN, never sent to the terminal.
  const auto esc = strings::escape_control;
  fmt::print("{}: {} graph at batch {}, {} nodes (built in {:.1f} ms)\n", esc(name), a.mode, a.batch, g.size(), build_s * 1e3);
  if (!understood.empty()) fmt::print("  understood      {}\n", esc(understood));
  fmt::print("  parameters      {:>16}{}\n", params,
             published > 0 ? fmt::format("   (published {}, {:+.2f}%)", units::format_plain(published, 4), 100.0 * (static_cast<double>(params) / published - 1)) : "");
  fmt::print("  forward         {:>12} FLOP matrix, {} FLOP vector, {}B moved\n", units::format_si(forward.matrix_flops),
             units::format_si(forward.vector_flops), units::format_si(forward.bytes));
  if (a.mode == "train")
    fmt::print("  training step   {:>12} FLOP matrix, {} FLOP vector, {}B moved\n", units::format_si(total.matrix_flops),
               units::format_si(total.vector_flops), units::format_si(total.bytes));
  fmt::print("\n  {:<22} {:>7} {:>16} {:>16} {:>14}\n", "op", "count", "matrix GFLOP", "vector GFLOP", "GB");
  for (const auto& [op, e] : by_op)
    fmt::print("  {:<22} {:>7} {:>16.4f} {:>16.4f} {:>14.4f}\n", op, e.first, e.second.matrix_flops / 1e9,
               e.second.vector_flops / 1e9, e.second.bytes / 1e9);
  if (a.ops) {
    fmt::print("\n{:<6} {:<20} {:<44} {:<20} {:>14} {:>14} {:>14}\n", "id", "op", "name", "shape", "matrix FLOP",
               "vector FLOP", "bytes");
    for (const auto& n : g.nodes()) {
      const auto c = ir::op_cost(g, n);
      fmt::print("{:<6} {:<20} {:<44} {:<20} {:>14.0f} {:>14.0f} {:>14.0f}\n", n.id, ir::op_name(n.op), esc(n.name),
                 ir::shape_str(n.shape), c.matrix_flops, c.vector_flops, c.bytes);
    }
  }
  return 0;
}
}  // namespace

Runner add_graph_command(CLI::App& app) {
  auto args = std::make_shared<GraphArgs>();
  auto* sub = app.add_subcommand("graph", "Show a workload's graph IR: parameters, FLOPs and bytes by op");
  sub->add_option("workload", args->workload, "Built-in workload id or a .toml/.json model file")->required();
  sub->add_option("--batch", args->batch, "Batch size")->capture_default_str()->check(whole_in(1, models::kMaxBatch));
  sub->add_option("--options", args->options, "The gpt workload's shape: 'layers=24;hidden=2304;heads=24' (kv_heads, ffn, vocab too); an ONNX file's symbolic dims: 'sequence=128'");
  sub->add_option("--seq-len", args->seq_len, "Sequence length for transformers (default: the network's)")->check(whole_in(1, models::kMaxSeqLen));
  sub->add_option("--mode", args->mode, "train (forward, backward, Adam) or eval")->capture_default_str();
  sub->add_option("--flash-attention", args->flash, "1: fused attention, 0: explicit bmm-softmax-bmm")
      ->capture_default_str()->check(whole_in(0, 1));
  sub->add_option("--dtype", args->dtype, "Element type of activations and weights: f32, f16, bf16, fp8")
      ->capture_default_str();
  sub->add_flag("--ops", args->ops, "List every node with its cost");
  add_output_option(sub, args->out);
  return [args] { return run_graph(*args); };
}

}  // namespace gpuvs::cli
