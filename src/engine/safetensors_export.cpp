// SPDX-License-Identifier: Apache-2.0
#include "engine/safetensors_export.hpp"

#include <fmt/format.h>

#include <cstring>
#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "core/strings.hpp"

namespace gpuvs::engine {

namespace {

struct Entry {
  std::string name;                   // PyTorch's
  std::vector<std::int64_t> shape;    // PyTorch's order
  std::vector<float> values;
};

std::string layer_name(int index) { return index == 0 ? std::string("dense") : fmt::format("dense_{}", index); }

std::string activation(const models::LayerSpec& l) {
  if (l.softmax) return "softmax";
  return l.act == ir::Act::none ? "linear" : std::string(ir::act_name(l.act));
}

}  // namespace

std::string export_safetensors(const models::ModelSpec& spec, const ParamStore& store) {
  std::vector<Entry> entries;
  std::vector<std::string> layers;
  std::int64_t in = spec.input_dim;
  int dense = 0;
  for (const auto& l : spec.layers) {
    if (l.kind == models::LayerSpec::Kind::dropout) {
      layers.push_back(fmt::format("dropout {}", l.rate));
      continue;
    }
    const std::string keras = layer_name(dense++), torch = keras;
    const HostTensor& kernel = store.get(keras + "/kernel");
    if (kernel.dtype != ir::DType::f32 || kernel.shape.size() != 2 || kernel.shape[0] != in || kernel.shape[1] != l.units)
      throw RuntimeFailure(fmt::format("{}/kernel is not the [{}, {}] f32 tensor the model makes", keras, in, l.units));
    // Keras keeps the kernel [in, out]; torch.nn.Linear keeps its weight [out, in].
    Entry w{torch + ".weight", {l.units, in}, std::vector<float>(static_cast<std::size_t>(in * l.units))};
    const float* k = kernel.as<float>();
    for (std::int64_t i = 0; i < in; ++i)
      for (std::int64_t o = 0; o < l.units; ++o) w.values[static_cast<std::size_t>(o * in + i)] = k[i * l.units + o];
    entries.push_back(std::move(w));
    if (l.use_bias) {
      const HostTensor& bias = store.get(keras + "/bias");
      if (bias.dtype != ir::DType::f32 || bias.shape.size() != 1 || bias.shape[0] != l.units)
        throw RuntimeFailure(fmt::format("{}/bias is not the [{}] f32 tensor the model makes", keras, l.units));
      const float* b = bias.as<float>();
      entries.push_back({torch + ".bias", {l.units}, std::vector<float>(b, b + l.units)});
    }
    layers.push_back(fmt::format("{}: Linear({} -> {}){}, {}", torch, in, l.units, l.use_bias ? "" : " without bias", activation(l)));
    in = l.units;
  }
  // The metadata first, so the signature sits at the file's start; then the tensors in buffer order.
  const nlohmann::json metadata = {{"format", "pt"}, {"gpuvs_weights", fmt::format("{} (input {}): {}", spec.name, spec.input_dim, strings::join(layers, "; "))}};
  // A model name from a file's stem need not be UTF-8: its bytes become U+FFFD rather than a failure after training.
  std::string header = fmt::format("{{\"__metadata__\":{}", metadata.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
  std::uint64_t offset = 0;
  for (const auto& e : entries) {
    const std::uint64_t bytes = e.values.size() * sizeof(float);
    header += fmt::format(",{}:{}", nlohmann::json(e.name).dump(),
                          nlohmann::json{{"dtype", "F32"}, {"shape", e.shape}, {"data_offsets", {offset, offset + bytes}}}.dump());
    offset += bytes;
  }
  header += "}";
  header.append((8 - header.size() % 8) % 8, ' ');  // the reference writer's padding: the buffer starts 8-byte aligned
  std::string out(8, '\0');
  const std::uint64_t n = header.size();
  std::memcpy(out.data(), &n, 8);
  out += header;
  for (const auto& e : entries) out.append(reinterpret_cast<const char*>(e.values.data()), e.values.size() * sizeof(float));
  return out;
}

}  // namespace gpuvs::engine
