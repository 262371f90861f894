// SPDX-License-Identifier: Apache-2.0
#include "import/gpuvs/model_file.hpp"

#include <fmt/format.h>

#include <cmath>
#include <iterator>
#include <nlohmann/json.hpp>
#include <toml++/toml.h>
#include <variant>

#include "core/error.hpp"
#include "core/files.hpp"
#include "core/json_input.hpp"
#include "core/strings.hpp"
#include "core/toml_input.hpp"
#include "import/keras/keras_model.hpp"

namespace gpuvs::import {

using namespace gpuvs::ir;
using namespace gpuvs::models;

namespace {

// A syntax-neutral document tree that remembers the line of every value, so TOML and JSON files get the
// same checks and the same "file:line" errors.
struct Member;
struct Val {
  enum class Type { null, boolean, integer, real, string, array, object } type = Type::null;
  bool b = false;
  std::int64_t i = 0;
  double d = 0;
  std::string s;
  std::vector<Val> arr;
  std::vector<Member> obj;  // vector of an incomplete type is allowed; std::pair of one is not
  int line = 0;
};
struct Member {
  std::string first;
  Val second;
};

std::string_view type_name(Val::Type t) {
  switch (t) {
    case Val::Type::null: return "null";
    case Val::Type::boolean: return "a boolean";
    case Val::Type::integer: return "an integer";
    case Val::Type::real: return "a number";
    case Val::Type::string: return "a string";
    case Val::Type::array: return "an array";
    case Val::Type::object: return "a table";
  }
  return "?";
}

// ---- TOML -> Val
Val from_toml(const toml::node& n) {
  Val v;
  v.line = static_cast<int>(n.source().begin.line);
  if (auto t = n.as_table()) {
    v.type = Val::Type::object;
    for (auto&& [k, child] : *t) v.obj.push_back(Member{std::string(k.str()), from_toml(child)});
  } else if (auto a = n.as_array()) {
    v.type = Val::Type::array;
    for (auto&& child : *a) v.arr.push_back(from_toml(child));
  } else if (auto s = n.as_string()) {
    v.type = Val::Type::string;
    v.s = s->get();
  } else if (auto i = n.as_integer()) {
    v.type = Val::Type::integer;
    v.i = i->get();
  } else if (auto f = n.as_floating_point()) {
    v.type = Val::Type::real;
    v.d = f->get();
  } else if (auto bb = n.as_boolean()) {
    v.type = Val::Type::boolean;
    v.b = bb->get();
  } else {
    v.type = Val::Type::string;  // dates and times: kept as text, rejected by the schema
    v.s = "<date/time>";
  }
  return v;
}

// ---- JSON -> Val, with line numbers: an input iterator that counts newlines as the lexer consumes them.
struct LineCountingIterator {
  using iterator_category = std::input_iterator_tag;
  using value_type = char;
  using difference_type = std::ptrdiff_t;
  using pointer = const char*;
  using reference = const char&;
  const char* p = nullptr;
  int* line = nullptr;
  reference operator*() const { return *p; }
  LineCountingIterator& operator++() {
    if (*p == '\n') ++*line;
    ++p;
    return *this;
  }
  LineCountingIterator operator++(int) {
    auto t = *this;
    ++*this;
    return t;
  }
  bool operator==(const LineCountingIterator& o) const { return p == o.p; }
  bool operator!=(const LineCountingIterator& o) const { return p != o.p; }
};

class JsonToVal : public nlohmann::json_sax<nlohmann::json> {
 public:
  explicit JsonToVal(const int* line) : line_(line) {}
  bool null() override { return put(Val{}); }
  bool boolean(bool b) override {
    Val v;
    v.type = Val::Type::boolean;
    v.b = b;
    return put(std::move(v));
  }
  bool number_integer(number_integer_t x) override {
    Val v;
    v.type = Val::Type::integer;
    v.i = x;
    return put(std::move(v));
  }
  bool number_unsigned(number_unsigned_t x) override {
    Val v;
    v.type = Val::Type::integer;
    v.i = static_cast<std::int64_t>(x);
    return put(std::move(v));
  }
  bool number_float(number_float_t x, const string_t&) override {
    Val v;
    v.type = Val::Type::real;
    v.d = x;
    return put(std::move(v));
  }
  bool string(string_t& s) override {
    Val v;
    v.type = Val::Type::string;
    v.s = s;
    return put(std::move(v));
  }
  bool binary(binary_t&) override { return false; }
  bool start_object(std::size_t) override {
    Val v;
    v.type = Val::Type::object;
    v.line = *line_;
    stack_.push_back(std::move(v));
    return true;
  }
  bool key(string_t& k) override {
    keys_.push_back(k);
    return true;
  }
  bool end_object() override { return close(); }
  bool start_array(std::size_t) override {
    Val v;
    v.type = Val::Type::array;
    v.line = *line_;
    stack_.push_back(std::move(v));
    return true;
  }
  bool end_array() override { return close(); }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& ex) override {
    error_ = ex.what();
    error_line_ = *line_;
    return false;
  }
  Val root;
  std::string error_;
  int error_line_ = 0;

 private:
  bool put(Val v) {
    if (v.line == 0) v.line = *line_;
    if (stack_.empty()) {
      root = std::move(v);
    } else if (stack_.back().type == Val::Type::object) {
      stack_.back().obj.push_back(Member{std::move(keys_.back()), std::move(v)});
      keys_.pop_back();
    } else {
      stack_.back().arr.push_back(std::move(v));
    }
    return true;
  }
  bool close() {
    Val v = std::move(stack_.back());
    stack_.pop_back();
    return put(std::move(v));
  }
  const int* line_;
  std::vector<Val> stack_;
  std::vector<std::string> keys_;
};

// ---- Val -> ModelSpec
class Reader {
 public:
  explicit Reader(std::string where) : where_(std::move(where)) {}

  [[noreturn]] void fail(const Val& v, const std::string& msg) const {
    throw InputError(fmt::format("{}:{}: {}", where_, v.line, msg));
  }
  const Val& need(const Val& v, Val::Type t, const std::string& key) const {
    const bool ok = v.type == t || (t == Val::Type::real && v.type == Val::Type::integer);
    if (!ok) fail(v, fmt::format("'{}' must be {}, got {}", key, type_name(t), type_name(v.type)));
    return v;
  }
  double number(const Val& v, const std::string& key) const {
    need(v, Val::Type::real, key);
    const double x = v.type == Val::Type::integer ? static_cast<double>(v.i) : v.d;
    if (!std::isfinite(x)) fail(v, fmt::format("'{}' must be finite", key));
    return x;
  }
  void only_keys(const Val& obj, const std::vector<std::string>& allowed, const std::string& what) const {
    for (const auto& [k, v] : obj.obj) {
      bool ok = false;
      for (const auto& a : allowed) ok = ok || a == k;
      if (!ok)
        fail(v, fmt::format("unknown key '{}' in {} (expected one of: {})", strings::printable(k), what,
                            strings::join(allowed, ", ")));
    }
  }
  static const Val* get(const Val& obj, std::string_view key) {
    for (const auto& [k, v] : obj.obj)
      if (k == key) return &v;
    return nullptr;
  }

  ModelSpec read(const Val& root) {
    if (root.type != Val::Type::object) fail(root, "a model file must be a table/object at the top level");
    only_keys(root, {"name", "input_shape", "input_dim", "layers", "compile"}, "the model");
    ModelSpec spec;
    spec.name = "model";
    if (const Val* n = get(root, "name")) spec.name = need(*n, Val::Type::string, "name").s;
    const Val* shape = get(root, "input_shape");
    const Val* dim = get(root, "input_dim");
    if (shape && dim) fail(*dim, "give input_shape or input_dim, not both");
    if (shape) {
      need(*shape, Val::Type::array, "input_shape");
      if (shape->arr.size() != 1 || shape->arr[0].type != Val::Type::integer)
        fail(*shape, "input_shape must hold one integer, e.g. [780] (only flat inputs are supported)");
      spec.input_dim = shape->arr[0].i;
    } else if (dim) {
      spec.input_dim = need(*dim, Val::Type::integer, "input_dim").i;
    } else {
      fail(root, "missing input_shape (e.g. input_shape = [780])");
    }
    if (spec.input_dim <= 0) fail(shape ? *shape : *dim, "the input size must be positive");
    const Val* layers = get(root, "layers");
    if (!layers) fail(root, "missing layers (one [[layers]] table per layer)");
    need(*layers, Val::Type::array, "layers");
    if (layers->arr.size() > kMaxLayers) fail(*layers, fmt::format("{} layers, more than the {} a model file may list", layers->arr.size(), kMaxLayers));
    for (const auto& l : layers->arr) spec.layers.push_back(layer(l));
    if (const Val* c = get(root, "compile")) compile(*c, spec);
    spec.validate(where_);
    return spec;
  }

 private:
  LayerSpec layer(const Val& l) {
    need(l, Val::Type::object, "layers[]");
    const Val* type = get(l, "type");
    if (!type) fail(l, "layer without 'type' (expected dense or dropout)");
    const std::string t = strings::lower(need(*type, Val::Type::string, "type").s);
    LayerSpec out;
    out.line = l.line;
    if (t == "dense") {
      only_keys(l, {"type", "units", "activation", "use_bias"}, "a dense layer");
      const Val* units = get(l, "units");
      if (!units) fail(l, "dense layer without 'units'");
      out.units = need(*units, Val::Type::integer, "units").i;
      if (out.units <= 0) fail(*units, fmt::format("units must be positive, got {}", out.units));
      if (const Val* b = get(l, "use_bias")) out.use_bias = need(*b, Val::Type::boolean, "use_bias").b;
      if (const Val* a = get(l, "activation")) {
        const std::string act = strings::lower(need(*a, Val::Type::string, "activation").s);
        if (act == "relu") out.act = Act::relu;
        else if (act == "gelu") out.act = Act::gelu;
        else if (act == "tanh") out.act = Act::tanh;
        else if (act == "sigmoid") out.act = Act::sigmoid;
        else if (act == "silu" || act == "swish") out.act = Act::silu;
        else if (act == "softmax") out.softmax = true;
        else if (act == "linear" || act == "none") out.act = Act::none;
        else fail(*a, fmt::format("unknown activation '{}' (expected relu, gelu, tanh, sigmoid, silu, softmax or linear)",
                             strings::printable(act)));
      }
    } else if (t == "dropout") {
      only_keys(l, {"type", "rate"}, "a dropout layer");
      out.kind = LayerSpec::Kind::dropout;
      const Val* r = get(l, "rate");
      if (!r) fail(l, "dropout layer without 'rate'");
      out.rate = number(*r, "rate");
      if (!(out.rate >= 0.0 && out.rate < 1.0)) fail(*r, fmt::format("dropout rate must be in [0, 1), got {}", out.rate));
    } else {
      fail(*type, fmt::format("unknown layer type '{}' (expected dense or dropout)", strings::printable(t)));
    }
    return out;
  }

  void compile(const Val& c, ModelSpec& spec) {
    need(c, Val::Type::object, "compile");
    only_keys(c, {"optimizer", "loss", "metrics"}, "compile");
    if (const Val* o = get(c, "optimizer")) {
      const Val* name = o;
      if (o->type == Val::Type::object) {
        only_keys(*o, {"name", "learning_rate", "beta_1", "beta_2", "epsilon"}, "the optimizer");
        name = get(*o, "name");
        if (!name) fail(*o, "optimizer without 'name'");
        if (const Val* v = get(*o, "learning_rate")) spec.adam.learning_rate = positive(*v, "learning_rate");
        if (const Val* v = get(*o, "beta_1")) spec.adam.beta_1 = unit_interval(*v, "beta_1");
        if (const Val* v = get(*o, "beta_2")) spec.adam.beta_2 = unit_interval(*v, "beta_2");
        if (const Val* v = get(*o, "epsilon")) spec.adam.epsilon = positive(*v, "epsilon");
      }
      const std::string opt = strings::lower(need(*name, Val::Type::string, "optimizer").s);
      if (opt != "adam") fail(*name, fmt::format("optimizer '{}' is not supported (expected adam)", strings::printable(opt)));
    }
    if (const Val* l = get(c, "loss")) {
      const Val* name = l;
      if (l->type == Val::Type::object) {
        only_keys(*l, {"name", "from_logits"}, "the loss");
        name = get(*l, "name");
        if (!name) fail(*l, "loss without 'name'");
        if (const Val* f = get(*l, "from_logits")) spec.from_logits = need(*f, Val::Type::boolean, "from_logits").b;
      }
      spec.loss = strings::lower(need(*name, Val::Type::string, "loss").s);
      if (spec.loss != "sparse_categorical_crossentropy")
        fail(*name, fmt::format("loss '{}' is not supported (expected sparse_categorical_crossentropy)",
                                strings::printable(spec.loss)));
    }
    if (const Val* m = get(c, "metrics")) {
      need(*m, Val::Type::array, "metrics");
      spec.metrics.clear();
      for (const auto& x : m->arr) {
        const std::string name = strings::lower(need(x, Val::Type::string, "metrics[]").s);
        if (name != "accuracy" && name != "acc" && name != "sparse_categorical_accuracy")
          fail(x, fmt::format("metric '{}' is not supported (expected accuracy)", strings::printable(name)));
        spec.metrics.push_back("accuracy");
      }
    }
  }
  double positive(const Val& v, const std::string& key) const {
    const double x = number(v, key);
    if (!(x > 0)) fail(v, fmt::format("'{}' must be positive, got {}", key, x));
    return x;
  }
  double unit_interval(const Val& v, const std::string& key) const {
    const double x = number(v, key);
    if (!(x >= 0 && x < 1)) fail(v, fmt::format("'{}' must be in [0, 1), got {}", key, x));
    return x;
  }
  std::string where_;
};

}  // namespace

ModelSpec parse_model_text(const std::string& text, const std::string& where, bool json) {
  Val root;
  if (json) {
    int line = 1;
    JsonToVal sax(&line);
    LineCountingIterator first{text.data(), &line}, last{text.data() + text.size(), &line};
    const bool ok = nlohmann::json::sax_parse(first, last, &sax);
    if (!ok) {
      std::string msg = sax.error_;
      // nlohmann's messages start with "[json.exception.parse_error.101] parse error at line 3, column 5: ".
      const auto colon = msg.find(": ");
      if (colon != std::string::npos && msg.rfind("[json.exception", 0) == 0) msg = msg.substr(colon + 2);
      throw InputError(fmt::format("{}:{}: malformed JSON: {}", where, sax.error_line_, strings::printable(msg, 200)));
    }
    root = std::move(sax.root);
  } else {
    const toml::table tbl = parse_toml(text, where);
    root = from_toml(tbl);
    root.line = 1;
  }
  return Reader(where).read(root);
}

ModelSpec load_model_file(const std::filesystem::path& path) {
  const std::string ext = strings::lower(path.extension().string());
  if (ext == ".onnx")
    throw InputError(fmt::format("model file {}: ONNX graphs are priced (gpuvs graph, predict, compare, advise), not trained here: the CPU "
                                 "engine trains dense Sequential models",
                                 path.string()));
  if (ext == ".keras") {
    ModelSpec spec = keras_model_spec(keras_archive_config(path.string()), path.string());
    if (spec.name == "model" || spec.name == "sequential") spec.name = path.stem().string();
    return spec;
  }
  const std::string text = files::read_all(path, "model file");
  if (ext != ".toml" && ext != ".json")
    throw InputError(fmt::format("model file {}: unknown extension '{}' (expected .toml, .json or .keras)", path.string(), ext));
  if (ext == ".json") return json_model_file_spec(text, parse_json_or_discarded(text, path.string()), path);
  ModelSpec spec = parse_model_text(text, path.string(), false);
  if (spec.name == "model") spec.name = path.stem().string();
  return spec;
}

ModelSpec json_model_file_spec(const std::string& text, const nlohmann::json& parsed, const std::filesystem::path& path) {
  // Keras's own JSON (model.to_json(), a .keras archive's config.json) or gpuvs's model file, whose reader
  // parses again to say on which line a malformed file goes wrong.
  ModelSpec spec = is_keras_json(parsed) ? keras_model_spec_parsed(parsed, path.string()) : parse_model_text(text, path.string(), true);
  if (spec.name == "model") spec.name = path.stem().string();
  return spec;
}

}  // namespace gpuvs::import
