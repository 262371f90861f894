// SPDX-License-Identifier: Apache-2.0
#include "import/keras/keras_model.hpp"

#include <fmt/format.h>

#include <nlohmann/json.hpp>
#include <zip.h>

#include <algorithm>
#include <cmath>

#include "core/error.hpp"
#include "core/files.hpp"
#include "core/json_input.hpp"
#include "core/strings.hpp"

namespace gpuvs::import {

using namespace gpuvs::ir;
using namespace gpuvs::models;

namespace {

using json = nlohmann::json;


/// Settings that change what training does; the engine has none of them, so a non-default value is refused.
const std::vector<std::string> kRefusedIfSet = {"kernel_regularizer", "bias_regularizer", "activity_regularizer",
                                                "kernel_constraint", "bias_constraint", "noise_shape", "lora_rank", "dora_rank"};

struct Where {
  const std::string& file;
  [[noreturn]] void path(const std::string& p, const std::string& what) const { throw InputError(fmt::format("{}: $.{}: {}", file, p, what)); }
  [[noreturn]] void layer(const std::string& name, const std::string& cls, const std::string& what) const {
    throw InputError(fmt::format("{}: layer '{}' ({}): {}", file, strings::printable(name), strings::printable(cls), what));
  }
};

/// The layer's activation, or the refusal naming it.
Act activation(const std::string& a, bool& softmax, const Where& w, const std::string& name, const std::string& cls) {
  if (const auto act = keras_activation(a, softmax)) return *act;
  w.layer(name, cls, fmt::format("activation '{}' is not built (linear, relu, gelu, tanh, sigmoid, silu, softmax)", strings::printable(a)));
}

/// Keras 3 writes an activation as a string; Keras 2 as well (a serialized object is refused).
std::string activation_name(const json& cfg, const Where& w, const std::string& name, const std::string& cls) {
  if (!cfg.contains("activation")) return "linear";
  const json& a = cfg["activation"];
  if (a.is_string()) return a.get<std::string>();
  w.layer(name, cls, "activation must be a name (custom activation objects are not built)");
}

/// The feature count of a [null, N] shape (batch_input_shape in Keras 2, batch_shape in Keras 3).
std::int64_t features_of(const json& shape, const Where& w, const std::string& name, const std::string& cls) {
  if (!shape.is_array() || shape.size() < 2) w.layer(name, cls, "input shape must be [batch, features...]");
  std::int64_t n = 1;
  for (std::size_t i = 1; i < shape.size(); ++i) {
    if (!shape[i].is_number_integer() || shape[i].get<std::int64_t>() < 1 || shape[i].get<std::int64_t>() > (1 << 24))
      w.layer(name, cls, fmt::format("input shape {} needs whole positive sizes", strings::printable(shape.dump())));
    n *= shape[i].get<std::int64_t>();
    if (n > (std::int64_t{1} << 31)) w.layer(name, cls, "input of more than 2^31 features");
  }
  return n;
}

const json* input_shape_in(const json& cfg) {
  for (const char* k : {"batch_input_shape", "batch_shape"})
    if (cfg.contains(k) && !cfg[k].is_null()) return &cfg[k];
  return nullptr;
}

/// A Functional model's layers in order, when they form one chain (each layer fed by the one before).
std::vector<const json*> chain_of(const json& layers, const Where& w) {
  std::vector<const json*> out;
  std::string previous;
  for (const auto& l : layers) {
    const std::string name = l.contains("name") && l["name"].is_string() ? l["name"].get<std::string>()
                             : l.contains("config") && l["config"].contains("name") && l["config"]["name"].is_string()
                                 ? l["config"]["name"].get<std::string>()
                                 : "?";
    const std::string cls = l.value("class_name", "?");
    const json inbound = l.contains("inbound_nodes") ? l["inbound_nodes"] : json::array();
    const std::string dumped = inbound.dump();
    if (!previous.empty()) {
      // Keras 2 ([[["prev", 0, 0, {}]]]) and Keras 3 ([{"args": [{"config": {"keras_history": ["prev", 0, 0]}}]}]):
      // exactly one inbound tensor, from the previous layer.
      const std::size_t refs = std::count(dumped.begin(), dumped.end(), '[');
      if (dumped.find("\"" + previous + "\"") == std::string::npos || (cls == "Add" || cls == "Concatenate" || refs > 8))
        w.layer(name, cls, "the engine builds chains of layers; this Functional graph branches or merges (not built yet)");
    }
    previous = name;
    out.push_back(&l);
  }
  return out;
}

}  // namespace

const std::vector<std::string>& keras_sequential_layers() {
  static const std::vector<std::string> layers = {"InputLayer", "Dense", "Dropout", "Activation", "Flatten"};
  return layers;
}

std::optional<Act> keras_activation(const std::string& a, bool& softmax) {
  softmax = false;
  if (a == "linear" || a.empty()) return Act::none;
  if (a == "relu") return Act::relu;
  if (a == "gelu") return Act::gelu;
  if (a == "tanh") return Act::tanh;
  if (a == "sigmoid") return Act::sigmoid;
  if (a == "silu" || a == "swish") return Act::silu;
  if (a == "softmax") {
    softmax = true;
    return Act::none;
  }
  return std::nullopt;
}

std::string keras_archive_config(const std::string& path) {
  // Opened under the input policy (a regular file, without blocking), then handed to libzip.
  files::InputFile file(path, "model file");
  int err = 0;
  zip_t* z = zip_fdopen(file.fd(), ZIP_RDONLY, &err);
  if (!z) throw InputError(fmt::format("{}: not a zip archive (a .keras file is one)", path));
  file.release();  // libzip owns the descriptor now
  struct Closer {
    zip_t* z;
    ~Closer() { zip_discard(z); }
  } closer{z};
  zip_stat_t st;
  zip_stat_init(&st);
  if (zip_stat(z, "config.json", 0, &st) != 0 || !(st.valid & ZIP_STAT_SIZE))
    throw InputError(fmt::format("{}: no config.json inside (not a Keras 3 .keras archive)", path));
  constexpr zip_uint64_t kMaxConfig = 64ull << 20;
  if (st.size > kMaxConfig) throw InputError(fmt::format("{}: config.json of {} bytes (more than 64 MiB)", path, st.size));
  zip_file_t* f = zip_fopen(z, "config.json", 0);
  if (!f) throw InputError(fmt::format("{}: config.json cannot be read ({})", path, zip_strerror(z)));
  std::string text(static_cast<std::size_t>(st.size), '\0');
  const zip_int64_t n = zip_fread(f, text.data(), st.size);
  zip_fclose(f);
  if (n < 0 || static_cast<zip_uint64_t>(n) != st.size) throw InputError(fmt::format("{}: config.json is truncated or corrupt", path));
  return text;
}

bool is_keras_json(const json& j) {
  if (!j.is_object() || !j.contains("class_name") || !j["class_name"].is_string() || !j.contains("config")) return false;
  const std::string c = j["class_name"].get<std::string>();
  return c == "Sequential" || c == "Functional" || c == "Model";
}

void keras_compile_config(const json& j, const std::string& where, ModelSpec& spec) {
  const Where w{where};
  if (j.contains("compile_config") && j["compile_config"].is_object()) {
    const json& cc = j["compile_config"];
    if (cc.contains("optimizer") && !cc["optimizer"].is_null()) {
      const json& o = cc["optimizer"];
      const std::string oname = o.is_string() ? o.get<std::string>() : o.value("class_name", "?");
      if (strings::lower(oname) != "adam") w.path("compile_config.optimizer", fmt::format("'{}' is not built (Adam is)", strings::printable(oname)));
      if (o.is_object() && o.contains("config") && o["config"].is_object()) {
        const json& oc = o["config"];
        for (auto [key, out] : {std::pair<const char*, double*>{"learning_rate", &spec.adam.learning_rate}, {"beta_1", &spec.adam.beta_1},
                                {"beta_2", &spec.adam.beta_2}, {"epsilon", &spec.adam.epsilon}})
          if (oc.contains(key)) {
            if (!oc[key].is_number() || !std::isfinite(oc[key].get<double>()) || oc[key].get<double>() <= 0)
              w.path(fmt::format("compile_config.optimizer.config.{}", key), "must be a positive number (a schedule is not built)");
            *out = oc[key].get<double>();
          }
        if (oc.contains("amsgrad") && oc["amsgrad"].is_boolean() && oc["amsgrad"].get<bool>())
          w.path("compile_config.optimizer.config.amsgrad", "AMSGrad is not built");
        // What Keras 3's base optimizer adds to every step, none of which training here does: weight decay,
        // gradient clipping, loss scaling, accumulation over steps, and an average of the weights (one more copy).
        for (const char* key : {"weight_decay", "clipnorm", "global_clipnorm", "clipvalue", "loss_scale_factor", "gradient_accumulation_steps"})
          if (oc.contains(key) && !oc[key].is_null() && oc[key] != 0)
            w.path(fmt::format("compile_config.optimizer.config.{}", key), fmt::format("{} is not built", strings::printable(oc[key].dump())));
        if (oc.contains("use_ema") && oc["use_ema"].is_boolean() && oc["use_ema"].get<bool>())
          w.path("compile_config.optimizer.config.use_ema", "a moving average of the weights is not built");
      }
    }
    if (cc.contains("loss") && !cc["loss"].is_null()) {
      const json& lo = cc["loss"];
      const std::string lname = lo.is_string() ? lo.get<std::string>() : lo.value("class_name", "?");
      const std::string l = strings::lower(lname);
      if (l != "sparse_categorical_crossentropy" && l != "sparsecategoricalcrossentropy")
        w.path("compile_config.loss", fmt::format("'{}' is not built (sparse_categorical_crossentropy is)", strings::printable(lname)));
      if (lo.is_object() && lo.contains("config") && lo["config"].is_object() && lo["config"].contains("from_logits"))
        spec.from_logits = lo["config"]["from_logits"].is_boolean() && lo["config"]["from_logits"].get<bool>();
    }
    if (cc.contains("metrics") && cc["metrics"].is_array()) {
      spec.metrics.clear();
      for (const auto& m : cc["metrics"]) {
        const std::string mname = m.is_string() ? m.get<std::string>() : m.is_object() ? m.value("class_name", "?") : "?";
        if (strings::lower(mname) != "accuracy" && strings::lower(mname) != "sparse_categorical_accuracy")
          w.path("compile_config.metrics", fmt::format("metric '{}' is not built (accuracy is)", strings::printable(mname)));
        spec.metrics.push_back("accuracy");
      }
    }
  }
}

ModelSpec keras_model_spec_json(const json& j, const std::string& where);

ModelSpec keras_model_spec(const std::string& text, const std::string& where) { return keras_model_spec_parsed(parse_json(text, where), where); }

ModelSpec keras_model_spec_parsed(const json& j, const std::string& where) {
  try {
    return keras_model_spec_json(j, where);
  } catch (const json::exception& e) {
    throw InputError(fmt::format("{}: a setting has the wrong type ({})", where, strings::printable(e.what())));
  }
}

ModelSpec keras_model_spec_json(const json& j, const std::string& where) {
  const Where w{where};
  if (!j.is_object() || !j.contains("class_name") || !j["class_name"].is_string()) w.path("class_name", "missing: not a Keras model");
  const std::string model_class = j["class_name"].get<std::string>();
  if (model_class != "Sequential" && model_class != "Functional" && model_class != "Model")
    w.path("class_name", fmt::format("'{}' is not a Keras model class (Sequential, Functional)", strings::printable(model_class)));
  if (!j.contains("config") || !j["config"].is_object()) w.path("config", "missing");
  const json& cfg = j["config"];
  if (!cfg.contains("layers") || !cfg["layers"].is_array() || cfg["layers"].empty()) w.path("config.layers", "missing or empty");
  if (cfg["layers"].size() > kMaxLayers) w.path("config.layers", fmt::format("{} layers, more than the {} a model file may list", cfg["layers"].size(), kMaxLayers));
  ModelSpec spec;
  bool flat = true;  // the features so far are one row a sample (no [steps, features] input left unflattened)
  spec.name = cfg.contains("name") && cfg["name"].is_string() ? cfg["name"].get<std::string>() : "keras-model";
  std::vector<const json*> layers;
  if (model_class == "Sequential") {
    for (const auto& l : cfg["layers"]) layers.push_back(&l);
  } else {
    layers = chain_of(cfg["layers"], w);
  }
  int index = 0;
  for (const json* lp : layers) {
    const json& l = *lp;
    ++index;
    if (!l.is_object() || !l.contains("class_name") || !l["class_name"].is_string() || !l.contains("config") || !l["config"].is_object())
      w.path(fmt::format("config.layers[{}]", index - 1), "a layer needs class_name and config");
    const std::string cls = l["class_name"].get<std::string>();
    const json& c = l["config"];
    const std::string name = c.contains("name") && c["name"].is_string() ? c["name"].get<std::string>() : fmt::format("layer {}", index);
    if (const auto& built = keras_sequential_layers(); std::find(built.begin(), built.end(), cls) == built.end())
      w.layer(name, cls, fmt::format("the engine trains models of {} only (gpuvs graph, predict, compare and advise price this one)",
                                     strings::join(keras_sequential_layers(), ", ")));
    for (const auto& key : kRefusedIfSet)
      if (c.contains(key) && !c[key].is_null())
        w.layer(name, cls, fmt::format("{} is set; the engine has no such thing, so it would be dropped", key));
    if (const json* shape = input_shape_in(c)) {
      // Keras 2 repeats the InputLayer's shape on the first layer: the same shape again is no news.
      const std::int64_t n = features_of(*shape, w, name, cls);
      if (!spec.layers.empty() || (spec.input_dim != 0 && spec.input_dim != n))
        w.layer(name, cls, "an input shape after the model's first layer");
      spec.input_dim = n;
      flat = shape->size() <= 2;
    }
    if (cls == "InputLayer" || cls == "Flatten") {
      if (cls == "Flatten" && !spec.layers.empty()) w.layer(name, cls, "Flatten after a Dense layer changes nothing only on 2-D data; not built here");
      flat = flat || cls == "Flatten";
      continue;
    }
    // Keras applies a Dense over [steps, features] to each step's features; the engine trains one row of
    // features a sample (gpuvs graph, predict and the rest price the model as Keras builds it).
    if (cls == "Dense" && !flat) w.layer(name, cls, "a Dense over a multi-axis input acts on its last axis: Flatten it first to train it here");
    if (spec.input_dim == 0) w.layer(name, cls, "the model's input shape is unknown (no InputLayer or input_shape before it)");
    if (cls == "Dense") {
      LayerSpec d;
      d.kind = LayerSpec::Kind::dense;
      if (!c.contains("units") || !c["units"].is_number_integer() || c["units"].get<std::int64_t>() < 1 || c["units"].get<std::int64_t>() > (1 << 24))
        w.layer(name, cls, "units must be a whole number from 1 to 2^24");
      d.units = c["units"].get<std::int64_t>();
      d.act = activation(activation_name(c, w, name, cls), d.softmax, w, name, cls);
      d.use_bias = !c.contains("use_bias") || !c["use_bias"].is_boolean() || c["use_bias"].get<bool>();
      spec.layers.push_back(d);
    } else if (cls == "Dropout") {
      if (!c.contains("rate") || !c["rate"].is_number() || c["rate"].get<double>() < 0 || c["rate"].get<double>() >= 1)
        w.layer(name, cls, "rate must be a number in [0, 1)");
      LayerSpec d;
      d.kind = LayerSpec::Kind::dropout;
      d.rate = c["rate"].get<double>();
      spec.layers.push_back(d);
    } else if (cls == "Activation") {
      // The engine fuses an activation into the Dense before it: allowed right after a linear Dense.
      if (spec.layers.empty() || spec.layers.back().kind != LayerSpec::Kind::dense || spec.layers.back().act != Act::none ||
          spec.layers.back().softmax)
        w.layer(name, cls, "an Activation is built only right after a Dense layer without one");
      bool softmax = false;
      const Act a = activation(activation_name(c, w, name, cls), softmax, w, name, cls);
      spec.layers.back().act = a;
      spec.layers.back().softmax = softmax;
    }
  }
  keras_compile_config(j, where, spec);
  spec.validate(where);
  return spec;
}

}  // namespace gpuvs::import
