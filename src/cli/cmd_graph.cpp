// gpuvs graph WORKLOAD: the graph IR the engine runs and the performance model prices, with each op's cost.
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "cli/commands.hpp"
#include "core/error.hpp"
#include "graph/builder.hpp"
#include "graph/cost.hpp"
#include "graph/workloads.hpp"

namespace gpuvs::cli {

namespace {
struct GraphArgs {
  std::string workload;
  std::int64_t batch = 32;
  std::string mode = "train";
  bool json = false;
};

int run_graph(const GraphArgs& a) {
  const graph::ModelSpec spec = graph::resolve_workload(a.workload);
  if (a.batch < 1) throw InputError(fmt::format("--batch must be at least 1, got {}", a.batch));
  if (a.mode != "train" && a.mode != "eval")
    throw InputError(fmt::format("--mode '{}' is not a mode (expected train or eval)", a.mode));
  const graph::Graph g =
      graph::build_graph(spec, {a.batch, graph::DType::f32, a.mode == "train" ? graph::Mode::train : graph::Mode::eval});
  const graph::OpCost total = graph::graph_cost(g);
  if (a.json) {
    nlohmann::json ops = nlohmann::json::array();
    for (const auto& n : g.nodes()) {
      const auto c = graph::op_cost(g, n);
      ops.push_back({{"id", n.id}, {"op", graph::op_name(n.op)}, {"name", n.name}, {"shape", n.shape},
                     {"dtype", graph::dtype_name(n.dtype)}, {"matrix_flops", c.matrix_flops},
                     {"vector_flops", c.vector_flops}, {"bytes", c.bytes}});
    }
    nlohmann::json j{{"schema_version", 1}, {"workload", spec.name}, {"batch", a.batch}, {"mode", a.mode},
                     {"params", spec.param_count()}, {"ops", ops},
                     {"total", {{"matrix_flops", total.matrix_flops}, {"vector_flops", total.vector_flops},
                                {"bytes", total.bytes}}}};
    fmt::print("{}\n", j.dump(2));
    return 0;
  }
  fmt::print("{}", spec.summary());
  fmt::print("\n{} graph at batch {}: {} nodes\n", a.mode, a.batch, g.size());
  fmt::print("{:<4} {:<18} {:<28} {:<12} {:>14} {:>14} {:>14}\n", "id", "op", "name", "shape", "matrix FLOP",
             "vector FLOP", "bytes");
  for (const auto& n : g.nodes()) {
    const auto c = graph::op_cost(g, n);
    fmt::print("{:<4} {:<18} {:<28} {:<12} {:>14.0f} {:>14.0f} {:>14.0f}\n", n.id, graph::op_name(n.op), n.name,
               graph::shape_str(n.shape), c.matrix_flops, c.vector_flops, c.bytes);
  }
  fmt::print("{:<4} {:<18} {:<28} {:<12} {:>14.0f} {:>14.0f} {:>14.0f}\n", "", "total", "", "", total.matrix_flops,
             total.vector_flops, total.bytes);
  return 0;
}
}  // namespace

Runner add_graph_command(CLI::App& app) {
  auto args = std::make_shared<GraphArgs>();
  auto* sub = app.add_subcommand("graph", "Show a workload's graph IR with each op's FLOPs and bytes");
  sub->add_option("workload", args->workload, "Built-in workload id or a .toml/.json model file")->required();
  sub->add_option("--batch", args->batch, "Batch size")->capture_default_str();
  sub->add_option("--mode", args->mode, "train (forward, backward, Adam) or eval")->capture_default_str();
  sub->add_flag("--json", args->json, "JSON output");
  return [args] { return run_graph(*args); };
}

}  // namespace gpuvs::cli
