// SPDX-License-Identifier: Apache-2.0
#include "import/onnx/onnx_model.hpp"

#include <fmt/format.h>
#include <fcntl.h>
#include <google/protobuf/io/zero_copy_stream_impl.h>
#include <onnx/onnx_pb.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <stdexcept>

#include "core/error.hpp"
#include "core/files.hpp"
#include "core/strings.hpp"
#include "import/held_models.hpp"
#include "import/onnx/onnx_convert.hpp"
#include "ir/autodiff.hpp"

namespace gpuvs::import {

using namespace gpuvs::ir;
using namespace gpuvs::models;

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
  std::set<std::string> missing_seen;  // a million symbolic dims were a million linear searches
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
    if (static_cast<std::size_t>(tt.shape().dim_size()) > onnx_detail::kMaxRank)
      throw InputError(fmt::format("{}: input '{}' has rank {}, more than {}", where, in_name, tt.shape().dim_size(), onnx_detail::kMaxRank));
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
        if (missing_seen.insert(p).second) {
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
    // The first few by name (a file may name thousands).
    constexpr std::size_t kNamed = 8;
    const std::size_t more = missing.size() > kNamed ? missing.size() - kNamed : 0;
    missing.resize(std::min(missing.size(), kNamed));
    std::vector<std::string> give;
    for (std::size_t k = 0; k < missing.size(); ++k) give.push_back(strings::printable(missing_names[k]) + "=N");
    throw InputError(fmt::format("{}: symbolic dimension{} {}{} need{} a size: --options '{}'{}", where, missing.size() + more > 1 ? "s" : "",
                                 strings::join(missing, ", "), more ? fmt::format(" and {} more", more) : "", missing.size() + more > 1 ? "" : "s",
                                 strings::join(give, ";"), more ? ";..." : ""));
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

namespace {

/// A parsed file: the model with large weights' payloads freed, checked once.
struct Parsed {
  std::shared_ptr<onnx::ModelProto> model;
  std::shared_ptr<std::set<std::string>> shape_only;
  std::set<std::string> initializers;
  int opset = 0;
};

/// The model in the file at `path`, or in `bytes` (a model held in memory, named `path`) when given.
Parsed parse_model(const std::string& path, std::uintmax_t size, const std::string* bytes) {
  const std::string& where = path;
  if (size > kMaxFileBytes)
    throw InputError(fmt::format("{}: {} bytes is past protobuf's 2 GiB limit (export large models with external data)", where, size));
  // Parsed straight from the file (one copy of the weights in memory, not two).
  Parsed p;
  p.model = std::make_shared<onnx::ModelProto>();
  if (bytes) {
    if (size == 0 || !p.model->ParseFromArray(bytes->data(), static_cast<int>(size)))
      throw InputError(fmt::format("{}: not an ONNX model (the protobuf does not parse)", where));
  } else {
    files::InputFile file(path, "model file");  // a regular file, opened without blocking
    google::protobuf::io::FileInputStream in(file.release());
    in.SetCloseOnDelete(true);
    if (size == 0 || !p.model->ParseFromZeroCopyStream(&in))
      throw InputError(fmt::format("{}: not an ONNX model (the protobuf does not parse)", where));
  }
  onnx::ModelProto& model = *p.model;
  if (!model.has_graph() || model.graph().node_size() == 0) throw InputError(fmt::format("{}: the model has no graph nodes", where));
  if (model.graph().output_size() == 0) throw InputError(fmt::format("{}: the graph has no outputs", where));
  std::int64_t opset = 0;
  bool any_opset = false;
  for (const auto& o : model.opset_import())
    if (o.domain().empty() || o.domain() == "ai.onnx") {
      opset = o.version();
      any_opset = true;
    }
  if (!any_opset) throw InputError(fmt::format("{}: no opset_import for the standard ONNX operators", where));
  if (opset < kMinOpset || opset > kMaxOpset)  // before narrowing: 2^32 + 13 is not opset 13
    throw InputError(fmt::format("{}: opset {} is outside the {}-{} gpuvs reads", where, opset, kMinOpset, kMaxOpset));
  p.opset = static_cast<int>(opset);
  const onnx::GraphProto& gp = model.graph();

  // ONNX graphs assign each name once: by an initializer, a graph input (which may repeat an initializer's
  // name, as files before IR 4 do) or one node output. A second definition would let lookups by name mix two
  // values, and lets a few nodes fan out into exponentially many paths for the walks below.
  std::map<std::string, std::string> made_by;
  for (const auto& t : gp.initializer())
    if (!made_by.emplace(t.name(), "an initializer").second)
      throw InputError(fmt::format("{}: initializer '{}' is defined twice", where, strings::printable(t.name())));
  std::set<std::string> inputs;
  for (const auto& vi : gp.input()) {
    if (!inputs.insert(vi.name()).second) throw InputError(fmt::format("{}: input '{}' is declared twice", where, strings::printable(vi.name())));
    made_by.emplace(vi.name(), "a graph input");
  }
  for (int i = 0; i < gp.node_size(); ++i) {
    const auto& n = gp.node(i);
    const std::string label = n.name().empty() ? fmt::format("node #{} ({})", i, strings::printable(n.op_type()))
                                               : fmt::format("node '{}' ({})", strings::printable(n.name()), strings::printable(n.op_type()));
    for (const auto& o : n.output()) {
      if (o.empty()) continue;  // an optional output left unnamed
      const auto [it, fresh] = made_by.emplace(o, label);
      if (!fresh)
        throw InputError(fmt::format("{}: value '{}' is made twice, by {} and by {} (ONNX names each value once)", where, strings::printable(o),
                                     it->second, label));
    }
  }

  // Every initializer's payload is checked against its dims now. Those too large to hold, and the weights only
  // matrix ops read (whose values pricing never needs), keep their shape only: their payload is freed.
  p.shape_only = std::make_shared<std::set<std::string>>();
  std::map<std::string, std::vector<std::pair<const onnx::NodeProto*, int>>> users;
  for (const auto& n : gp.node())
    for (int k = 0; k < n.input_size(); ++k) users[n.input(k)].emplace_back(&n, k);
  std::function<bool(const std::string&, int)> values_needed = [&](const std::string& name, int depth) {
    static const std::set<std::string> kViews = {"Identity", "Transpose", "Reshape", "Cast", "Unsqueeze", "Squeeze", "Flatten"};
    for (const auto& [u, k] : users[name]) {
      const std::string& op = u->op_type();
      const bool weight_slot = op == "MatMul" || (k >= 1 && (op == "Gemm" || op == "Conv" || op == "LayerNormalization" || op == "BatchNormalization" ||
                                                               op == "InstanceNormalization" || op == "GroupNormalization")) ||
                               (op == "Gather" && k == 0);
      if (!u->domain().empty() || (!weight_slot && !(kViews.count(op) && k == 0))) return true;
      if (kViews.count(op) && (depth > 4 || u->output_size() < 1 || values_needed(u->output(0), depth + 1))) return true;
    }
    return false;
  };
  for (auto& t : *model.mutable_graph()->mutable_initializer()) {
    p.initializers.insert(t.name());
    const std::int64_t n = onnx_detail::check_tensor(t, fmt::format("{}: initializer '{}'", where, strings::printable(t.name())));
    if (n > onnx_detail::kMaxKnownElements || t.data_location() == onnx::TensorProto::EXTERNAL ||
        (onnx_detail::is_float_type(t.data_type()) && !values_needed(t.name(), 0))) {
      p.shape_only->insert(t.name());
      std::string().swap(*t.mutable_raw_data());  // frees the payload (clear() keeps its capacity)
      t.clear_float_data();
      t.clear_int32_data();
      t.clear_int64_data();
      t.clear_double_data();
      t.clear_uint64_data();
    }
  }
  return p;
}

NetworkInfo make_network(const std::string& path, const Parsed& p, const std::map<std::string, std::string>& options) {
  const std::string& where = path;
  const onnx::GraphProto& gp = p.model->graph();
  std::vector<std::string> dim_names;
  std::string batch_said;
  auto binding = std::make_shared<Binding>(bind_dims(gp, p.initializers, options, where, dim_names, batch_said));
  auto forward = [model = p.model, opset = p.opset, where, binding, shape_only = p.shape_only](const NetworkOptions& o) {
    Converter c(model->graph(), opset, where, *binding, *shape_only, o);
    return c.build();
  };
  // Build once now, forward and with the training step, so what cannot be built fails here, naming its node.
  NetworkOptions trial;
  trial.batch = binding->fixed_batch > 0 ? binding->fixed_batch : 2;
  trial.training = false;
  Converter c(gp, p.opset, where, *binding, *p.shape_only, trial);
  try {
    (void)c.build();
  } catch (const std::invalid_argument& e) {  // the IR's own checks, past the nodes (the loss head)
    throw InputError(fmt::format("{}: {}", where, strings::printable(e.what())));
  }
  const Summary summary = c.summary();
  try {
    trial.training = true;
    Graph t = forward(trial);
    append_training_step(t, AdamConfig{});
  } catch (const std::invalid_argument& e) {
    throw InputError(fmt::format("{}: training cannot be priced: {}", where, strings::printable(e.what())));
  }
  NetworkInfo n;
  n.id = path;
  n.family = models::Family::onnx;
  n.sample_unit = "samples";
  n.description = describe(where, *p.model, p.opset, summary, batch_said, *binding);
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

/// Files read in this process, by path: compare, advise and the fitters price one model many times, and a
/// 650 MB file takes a second to parse. An entry holds while the file's size and modification time do, and
/// only when it was parsed well after that time (file clocks tick coarsely: a file rewritten within the same
/// tick would look unchanged); its networks are kept per binding of the symbolic dims.
struct CacheEntry {
  std::uintmax_t size = 0;
  std::filesystem::file_time_type mtime{};
  bool trusted = false;
  Parsed parsed;
  std::map<std::map<std::string, std::string>, NetworkInfo> networks;
};
constexpr std::size_t kCachedFiles = 4;

}  // namespace

NetworkInfo onnx_network(const std::string& path, const std::map<std::string, std::string>& options) {
  static std::mutex mutex;
  static std::map<std::string, CacheEntry> cache;
  static std::vector<std::string> order;  // least recently used first
  // A model held in memory is never cached: the same name may hold other bytes at the next call.
  const std::string* held = held_model(path);
  std::uintmax_t size = 0;
  std::filesystem::file_time_type mtime{};
  if (held) {
    size = held->size();
  } else {
    files::check_input(path, "model file");  // a FIFO or device is refused here, not waited on
    std::error_code ec;
    size = std::filesystem::file_size(path, ec);
    if (!ec) mtime = std::filesystem::last_write_time(path, ec);
    if (ec) throw InputError(fmt::format("{}: cannot be read ({})", path, ec.message()));
  }
  const std::lock_guard<std::mutex> lock(mutex);
  auto it = cache.find(path);
  if (held || it == cache.end() || !it->second.trusted || it->second.size != size || it->second.mtime != mtime) {
    const bool settled = !held && std::filesystem::file_time_type::clock::now() - mtime > std::chrono::seconds(2);
    CacheEntry e{size, mtime, settled, parse_model(path, size, held), {}};
    if (it != cache.end()) cache.erase(it);
    order.erase(std::remove(order.begin(), order.end(), path), order.end());
    while (cache.size() >= kCachedFiles) {
      cache.erase(order.front());
      order.erase(order.begin());
    }
    it = cache.emplace(path, std::move(e)).first;
  }
  order.erase(std::remove(order.begin(), order.end(), path), order.end());
  order.push_back(path);
  // The key: the options that name a symbolic dim of this file (others do not change the network).
  std::map<std::string, std::string> dims;
  for (const auto& vi : it->second.parsed.model->graph().input())
    if (vi.type().has_tensor_type())
      for (const auto& d : vi.type().tensor_type().shape().dim())
        if (d.has_dim_param() && options.count(d.dim_param())) dims[d.dim_param()] = options.at(d.dim_param());
  if (const auto n = it->second.networks.find(dims); n != it->second.networks.end()) return n->second;
  NetworkInfo n = make_network(path, it->second.parsed, options);
  it->second.networks.emplace(dims, n);
  return n;
}

}  // namespace gpuvs::import
