#include "graph/onnx_model.hpp"

#include <fmt/format.h>
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <memory>
#include <stdexcept>

#include "core/error.hpp"
#include "core/files.hpp"
#include "core/strings.hpp"
#include "graph/autodiff.hpp"
#include "graph/onnx_convert.hpp"

namespace gpuvs::graph {

namespace {

using onnx_detail::Binding;
using onnx_detail::Converter;
using onnx_detail::Summary;

// Operator sets whose semantics the converter follows (attributes that became inputs are read either way).
constexpr int kMinOpset = 7, kMaxOpset = 21;
constexpr std::uintmax_t kMaxFileBytes = std::uintmax_t{2} << 30;  // protobuf's own limit: larger models keep weights outside

std::int64_t dim_option(const std::map<std::string, std::string>& options, const std::string& key, const std::string& where) {
  const std::string& text = options.at(key);
  std::int64_t v = 0;
  const auto r = std::from_chars(text.data(), text.data() + text.size(), v);
  if (r.ec != std::errc() || r.ptr != text.data() + text.size() || v < 1 || v > (std::int64_t{1} << 31))
    throw InputError(fmt::format("{}: option {}={}: a dimension needs a whole number in [1, 2^31]", where, strings::printable(key),
                                 strings::printable(text)));
  return v;
}

/// Sizes for the inputs' symbolic dims: axis 0 is the batch; the others come from options named after them.
Binding bind_dims(const onnx::GraphProto& gp, const std::set<std::string>& initializers, const std::map<std::string, std::string>& options,
             const std::string& where, std::vector<std::string>& names, std::string& batch_said) {
  Binding b;
  std::vector<std::string> missing, missing_names;
  std::int64_t fixed = -1;
  bool any_symbolic_batch = false;
  for (const auto& vi : gp.input()) {
    if (initializers.count(vi.name())) continue;
    const std::string in_name = strings::printable(vi.name());
    if (!vi.type().has_tensor_type()) throw InputError(fmt::format("{}: input '{}' is not a tensor", where, in_name));
    const auto& tt = vi.type().tensor_type();
    if (!onnx_detail::is_float_type(tt.elem_type()) && !onnx_detail::is_int_type(tt.elem_type()))
      throw InputError(fmt::format("{}: input '{}' has element type {}", where, in_name, onnx_detail::elem_name(tt.elem_type())));
    if (!tt.has_shape()) throw InputError(fmt::format("{}: input '{}' has no shape", where, in_name));
    for (int d = 0; d < tt.shape().dim_size(); ++d) {
      const auto& dim = tt.shape().dim(d);
      if (dim.has_dim_value() && dim.dim_value() > 0) {
        if (dim.dim_value() > onnx_detail::kMaxDim) throw InputError(fmt::format("{}: input '{}' dimension {} is {}", where, in_name, d, dim.dim_value()));
        if (d == 0 && fixed < 0) fixed = dim.dim_value();
        continue;
      }
      const std::string& p = dim.dim_param();
      if (p.empty() && d != 0)
        throw InputError(fmt::format("{}: input '{}' dimension {} has neither a size nor a name", where, in_name, d));
      if (d == 0) {
        b.batch_dims.insert(p);
        any_symbolic_batch = true;
        if (batch_said.empty()) batch_said = p.empty() ? fmt::format("axis 0 of input '{}'", in_name) : fmt::format("dim '{}' of input '{}'", strings::printable(p), in_name);
        continue;
      }
      if (b.dims.count(p)) continue;
      if (!options.count(p)) {
        if (std::find(missing_names.begin(), missing_names.end(), p) == missing_names.end()) {
          missing.push_back(fmt::format("'{}' (input '{}' dimension {})", strings::printable(p), in_name, d));
          missing_names.push_back(p);
        }
        continue;
      }
      b.dims[p] = dim_option(options, p, where);
      names.push_back(p);
    }
  }
  for (const auto& p : b.batch_dims)
    if (!p.empty() && options.count(p))
      throw InputError(fmt::format("{}: dimension '{}' is the batch (axis 0 of an input): give it with --batch", where, strings::printable(p)));
  if (!missing.empty()) {
    std::vector<std::string> give;
    for (const auto& name : missing_names) give.push_back(strings::printable(name) + "=N");
    throw InputError(fmt::format("{}: symbolic dimension{} {} need{} a size: --options '{}'", where, missing.size() > 1 ? "s" : "",
                                 strings::join(missing, ", "), missing.size() > 1 ? "" : "s", strings::join(give, ";")));
  }
  if (!any_symbolic_batch && fixed > 0) {
    b.fixed_batch = fixed;
    batch_said = fmt::format("fixed at {} by the file", fixed);
  }
  return b;
}

std::string describe(const std::string& where, const onnx::ModelProto& m, int opset, const Summary& s, const std::string& batch_said,
                     const Binding& b) {
  std::vector<std::pair<int, std::string>> ops;
  int nodes = 0;
  for (const auto& [op, count] : s.ops) {
    ops.emplace_back(count, op);
    nodes += count;
  }
  std::sort(ops.begin(), ops.end(), [](const auto& x, const auto& y) { return x.first != y.first ? x.first > y.first : x.second < y.second; });
  std::vector<std::string> parts;
  for (const auto& [count, op] : ops) parts.push_back(fmt::format("{} {}", count, strings::printable(op)));
  std::string producer = strings::printable(m.producer_name());
  if (!m.producer_version().empty()) producer += " " + strings::printable(m.producer_version());
  std::string d = fmt::format("ONNX model {} ({}opset {}; {} nodes: {})", where, producer.empty() ? "" : "from " + producer + ", ", opset, nodes,
                              strings::join(parts, ", "));
  d += fmt::format("; batch: {}", batch_said.empty() ? "none (no input has an axis 0)" : batch_said);
  for (const auto& [name, v] : b.dims) d += fmt::format("; dim '{}' = {}", strings::printable(name), v);
  d += fmt::format("; {} nodes of constants and shape arithmetic folded", s.folded);
  if (s.weight_views) d += fmt::format(", {} views of weights", s.weight_views);
  std::vector<std::string> fused;
  for (const auto& [what, count] : s.fused) fused.push_back(fmt::format("{} {}", count, what));
  if (!fused.empty()) d += "; fused: " + strings::join(fused, ", ");
  if (!s.notes.empty()) d += "; approximated: " + strings::join(std::vector<std::string>(s.notes.begin(), s.notes.end()), "; ");
  return d;
}

}  // namespace

bool is_onnx_path(const std::string& path) { return strings::lower(std::filesystem::path(path).extension().string()) == ".onnx"; }

NetworkInfo onnx_network(const std::string& path, const std::map<std::string, std::string>& options) {
  const std::string where = path;
  std::error_code ec;
  const auto size = std::filesystem::file_size(path, ec);
  if (!ec && size > kMaxFileBytes)
    throw InputError(fmt::format("{}: {} bytes is past protobuf's 2 GiB limit (export large models with external data)", where, size));
  const std::string bytes = files::read_all(path, "ONNX model");
  auto model = std::make_shared<onnx::ModelProto>();
  if (bytes.empty() || !model->ParseFromString(bytes)) throw InputError(fmt::format("{}: not an ONNX model (the protobuf does not parse)", where));
  if (!model->has_graph() || model->graph().node_size() == 0) throw InputError(fmt::format("{}: the model has no graph nodes", where));
  if (model->graph().output_size() == 0) throw InputError(fmt::format("{}: the graph has no outputs", where));
  int opset = 0;
  for (const auto& o : model->opset_import())
    if (o.domain().empty() || o.domain() == "ai.onnx") opset = static_cast<int>(o.version());
  if (opset == 0) throw InputError(fmt::format("{}: no opset_import for the standard ONNX operators", where));
  if (opset < kMinOpset || opset > kMaxOpset)
    throw InputError(fmt::format("{}: opset {} is outside the {}-{} gpuvs reads", where, opset, kMinOpset, kMaxOpset));
  const onnx::GraphProto& gp = model->graph();

  // Every initializer's payload is checked against its dims now; large ones keep their shape only.
  auto shape_only = std::make_shared<std::set<std::string>>();
  std::set<std::string> initializers;
  for (auto& t : *model->mutable_graph()->mutable_initializer()) {
    if (!initializers.insert(t.name()).second) throw InputError(fmt::format("{}: initializer '{}' is defined twice", where, strings::printable(t.name())));
    if (!onnx_detail::decode_tensor(t, fmt::format("{}: initializer '{}'", where, strings::printable(t.name())))) {
      shape_only->insert(t.name());
      t.clear_raw_data();
      t.clear_float_data();
      t.clear_int32_data();
      t.clear_int64_data();
      t.clear_double_data();
      t.clear_uint64_data();
    }
  }
  std::vector<std::string> dim_names;
  std::string batch_said;
  auto binding = std::make_shared<Binding>(bind_dims(gp, initializers, options, where, dim_names, batch_said));

  auto forward = [model, opset, where, binding, shape_only](const NetworkOptions& o) {
    Converter c(model->graph(), opset, where, *binding, *shape_only, o);
    return c.build();
  };
  // Build once now, forward and with the training step, so what cannot be built fails here, naming its node.
  NetworkOptions trial;
  trial.batch = binding->fixed_batch > 0 ? binding->fixed_batch : 2;
  trial.training = false;
  Converter c(gp, opset, where, *binding, *shape_only, trial);
  Graph g = c.build();
  const Summary summary = c.summary();
  try {
    trial.training = true;
    Graph t = forward(trial);
    append_training_step(t, AdamConfig{});
  } catch (const std::invalid_argument& e) {
    throw InputError(fmt::format("{}: training cannot be priced: {}", where, strings::printable(e.what())));
  }
  (void)g;

  NetworkInfo n;
  n.id = path;
  n.family = "onnx";
  n.sample_unit = "samples";
  n.description = describe(where, *model, opset, summary, batch_said, *binding);
  n.params_source = "the ONNX file's initializers";
  n.forward = [forward](const NetworkOptions& o) {
    try {
      return forward(o);
    } catch (const std::invalid_argument& e) {
      throw InputError(strings::printable(e.what()));
    }
  };
  n.shape_options = dim_names;
  n.fixed_batch = binding->fixed_batch;
  return n;
}

}  // namespace gpuvs::graph
