// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <random>
#include <tuple>

#include "core/error.hpp"
#include "core/files.hpp"
#include "core/rng.hpp"
#include "import/gpuvs/model_file.hpp"
#include "import/hf/hf_config.hpp"
#include "import/keras/keras_graph.hpp"
#include "import/keras/keras_model.hpp"
#include "ir/cost.hpp"
#include "models/builder.hpp"
#include "models/networks.hpp"
#include "models/sequential_presets.hpp"
#include "test_util.hpp"
#include "workload/resolve.hpp"

using namespace gpuvs;
using namespace gpuvs::ir;
using namespace gpuvs::models;
using namespace gpuvs::import;
using namespace gpuvs::workload;

namespace {
const char* kSeedToml = R"(name = "seed-copy"
input_shape = [780]

[[layers]]
type = "dense"
units = 128
activation = "relu"

[[layers]]
type = "dropout"
rate = 0.2

[[layers]]
type = "dense"
units = 10
activation = "softmax"

[compile]
optimizer = "adam"
loss = "sparse_categorical_crossentropy"
metrics = ["accuracy"]
)";

const char* kSeedJson = R"({
  "name": "seed-copy",
  "input_shape": [780],
  "layers": [
    {"type": "dense", "units": 128, "activation": "relu"},
    {"type": "dropout", "rate": 0.2},
    {"type": "dense", "units": 10, "activation": "softmax"}
  ],
  "compile": {"optimizer": {"name": "adam", "learning_rate": 0.002},
              "loss": "sparse_categorical_crossentropy", "metrics": ["accuracy"]}
})";

std::string error_of(const std::string& text, bool json) {
  return test::input_error_of([&] { parse_model_text(text, "m", json); });
}
}  // namespace

TEST(ModelFile, TomlDescribesTheSeedModel) {
  const ModelSpec s = parse_model_text(kSeedToml, "m.toml", false);
  EXPECT_EQ(s.fingerprint(), sequential_preset("seed-mlp").fingerprint());
  EXPECT_EQ(s.name, "seed-copy");
  EXPECT_EQ(s.layers[0].line, 4);
}

TEST(ModelFile, JsonMirrorsToml) {
  const ModelSpec s = parse_model_text(kSeedJson, "m.json", true);
  EXPECT_EQ(s.fingerprint(), sequential_preset("seed-mlp").fingerprint());
  EXPECT_DOUBLE_EQ(s.adam.learning_rate, 0.002);
}

TEST(ModelFile, FromLogitsAndOtherActivations) {
  const ModelSpec s = parse_model_text(R"(input_dim = 4
[[layers]]
type = "dense"
units = 8
activation = "gelu"
[[layers]]
type = "dense"
units = 8
activation = "tanh"
[[layers]]
type = "dense"
units = 3
[compile]
loss = { name = "sparse_categorical_crossentropy", from_logits = true }
)", "m", false);
  EXPECT_TRUE(s.from_logits);
  EXPECT_EQ(s.layers[0].act, Act::gelu);
  EXPECT_EQ(s.num_classes(), 3);
}

TEST(ModelFile, ErrorsNameTheLine) {
  std::string t = kSeedToml;
  t = test::replaced(t, "\"relu\"", "\"rleu\"");
  EXPECT_EQ(error_of(t, false), "m:7: unknown activation 'rleu' (expected relu, gelu, tanh, sigmoid, silu, softmax or linear)");
  std::string j = kSeedJson;
  j = test::replaced(j, "\"dropout\"", "\"dropot\"");
  EXPECT_EQ(error_of(j, true), "m:6: unknown layer type 'dropot' (expected dense or dropout)");
  EXPECT_NE(error_of("input_shape = [780\n", false).find("m:1: malformed TOML"), std::string::npos);
  EXPECT_NE(error_of("{\n \"input_shape\": [780],\n \"layers\": [ }", true).find("m:3: malformed JSON"),
            std::string::npos);
  std::string u = kSeedToml;
  u = test::replaced(u, "units = 10", "units = -3");
  EXPECT_NE(error_of(u, false).find("m:15: units must be positive"), std::string::npos);
  // Sizes past 2^31 and totals past 2^48 parameters are refused before any product is taken (units = 2^63 - 1
  // overflowed the parameter count; UBSan, found by fuzz_model_toml's tree mutator).
  std::string huge = kSeedToml;
  huge = test::replaced(huge, "units = 128", "units = 9223372036854775807");
  EXPECT_NE(error_of(huge, false).find("m:4: dense units 9223372036854775807 is larger than 2^31"), std::string::npos) << error_of(huge, false);
  std::string wide = kSeedToml;
  wide = test::replaced(wide, "input_shape = [780]", "input_shape = [2147483648]");
  wide = test::replaced(wide, "units = 128", "units = 2147483648");
  EXPECT_NE(error_of(wide, false).find("m:4: the model has more than 2^48 parameters"), std::string::npos) << error_of(wide, false);
  std::string k = kSeedToml;
  k = test::replaced(k, "rate = 0.2", "rate = 0.2\nratio = 1");
  EXPECT_NE(error_of(k, false).find("unknown key 'ratio' in a dropout layer"), std::string::npos);
  std::string sm = kSeedToml;
  sm = test::replaced(sm, "\"relu\"", "\"softmax\"");
  EXPECT_NE(error_of(sm, false).find("m:4: softmax is supported only on the output layer"), std::string::npos);
  std::string lg = kSeedToml;
  lg = test::replaced(lg, "\"softmax\"", "\"linear\"");
  EXPECT_NE(error_of(lg, false).find("needs from_logits = true"), std::string::npos);
  std::string opt = kSeedToml;
  opt = test::replaced(opt, "\"adam\"", "\"sgd\"");
  EXPECT_NE(error_of(opt, false).find("optimizer 'sgd' is not supported"), std::string::npos);
  EXPECT_NE(error_of("[[layers]]\ntype='dense'\nunits=2\n", false).find("missing input_shape"), std::string::npos);
}

TEST(ModelFile, LoadByExtensionAndUnknownExtension) {
  test::TempDir dir;
  test::write_text(dir / "mine.toml", kSeedToml);
  EXPECT_EQ(load_model_file(dir / "mine.toml").name, "seed-copy");
  test::write_text(dir / "mine.yaml", kSeedToml);
  EXPECT_THROW(load_model_file(dir / "mine.yaml"), InputError);
  EXPECT_THROW(load_model_file(dir / "absent.toml"), InputError);
  EXPECT_EQ(resolve_sequential((dir / "mine.toml").string()).name, "seed-copy");
}

// Fuzz-style: random byte edits of valid files either parse or raise InputError; never crash or throw
// anything else, and every error names the file.
TEST(ModelFile, FuzzedInputsFailCleanly) {
  const CounterRng rng(99, 5);
  std::uint64_t draw = 0;
  const std::string alphabet = "[]{}\"'=,:.#\n 0123456789-abcdefxyz_\\\t";
  for (const bool json : {false, true}) {
    const std::string base = json ? kSeedJson : kSeedToml;
    for (int round = 0; round < 1500; ++round) {
      std::string t = base;
      const int edits = 1 + static_cast<int>(rng.uniform(draw++) * 4);
      for (int e = 0; e < edits; ++e) {
        const auto pos = static_cast<std::size_t>(rng.uniform(draw++) * static_cast<double>(t.size()));
        const double kind = rng.uniform(draw++);
        const char c = alphabet[static_cast<std::size_t>(rng.uniform(draw++) * static_cast<double>(alphabet.size()))];
        if (kind < 0.4) t[pos] = c;
        else if (kind < 0.7) t.erase(pos, 1 + static_cast<std::size_t>(rng.uniform(draw++) * 8));
        else t.insert(pos, 1, c);
      }
      if (round % 50 == 0) t.resize(static_cast<std::size_t>(rng.uniform(draw++) * static_cast<double>(t.size())));
      try {
        const ModelSpec s = parse_model_text(t, "fuzz", json);
        EXPECT_GT(s.input_dim, 0);
      } catch (const InputError& e) {
        EXPECT_EQ(std::string(e.what()).rfind("fuzz", 0), 0u) << e.what();
        EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << e.what();
      }
    }
  }
}

// Keras's own files (tests/data/keras: the seed model as model.to_json() writes it in Keras 2.13 and in
// Keras 3, the latter with the compile config a .keras archive's config.json carries).
TEST(KerasModel, TheSeedModelAsKerasWritesItIsTheSeedModel) {
  const ModelSpec seed = sequential_preset("seed-mlp");
  for (const char* file : {"seed_keras2.json", "seed_keras3.json"}) {
    const std::string path = std::string(GPUVS_SOURCE_DIR) + "/tests/data/keras/" + file;
    ModelSpec k = load_model_file(path);
    EXPECT_EQ(k.param_count(), seed.param_count()) << file;
    k.name = seed.name;
    EXPECT_EQ(k.fingerprint(), seed.fingerprint()) << file;
    // The same graph, node for node.
    const Graph a = build_graph(k, {32, DType::f32, Mode::train, false});
    const Graph b = build_graph(seed, {32, DType::f32, Mode::train, false});
    ASSERT_EQ(a.size(), b.size()) << file;
    for (std::size_t i = 0; i < a.size(); ++i) {
      EXPECT_EQ(a.node(static_cast<NodeId>(i)).op, b.node(static_cast<NodeId>(i)).op) << file << " node " << i;
      EXPECT_EQ(a.node(static_cast<NodeId>(i)).shape, b.node(static_cast<NodeId>(i)).shape) << file << " node " << i;
    }
  }
  // Keras 3's compile config: Adam's settings, the loss and the metric.
  const ModelSpec k3 = load_model_file(std::string(GPUVS_SOURCE_DIR) + "/tests/data/keras/seed_keras3.json");
  EXPECT_NEAR(k3.adam.learning_rate, 1e-3, 1e-9);
  EXPECT_DOUBLE_EQ(k3.adam.epsilon, 1e-7);
  EXPECT_EQ(k3.metrics, std::vector<std::string>{"accuracy"});
}

TEST(KerasModel, ChainsOfFunctionalLayersAndActivationLayersBuild) {
  // Keras 3 Functional, one chain: Input -> Dense(64) -> Activation(tanh) -> Dense(3, softmax).
  const std::string functional = R"({"class_name": "Functional", "config": {"name": "f", "layers": [
    {"class_name": "InputLayer", "name": "in", "config": {"batch_shape": [null, 20], "name": "in"}, "inbound_nodes": []},
    {"class_name": "Dense", "name": "d1", "config": {"name": "d1", "units": 64, "activation": "linear"},
     "inbound_nodes": [{"args": [{"class_name": "__keras_tensor__", "config": {"keras_history": ["in", 0, 0]}}], "kwargs": {}}]},
    {"class_name": "Activation", "name": "act", "config": {"name": "act", "activation": "tanh"},
     "inbound_nodes": [{"args": [{"class_name": "__keras_tensor__", "config": {"keras_history": ["d1", 0, 0]}}], "kwargs": {}}]},
    {"class_name": "Dense", "name": "out", "config": {"name": "out", "units": 3, "activation": "softmax"},
     "inbound_nodes": [{"args": [{"class_name": "__keras_tensor__", "config": {"keras_history": ["act", 0, 0]}}], "kwargs": {}}]}]}})";
  const ModelSpec f = keras_model_spec(functional, "f.json");
  ASSERT_EQ(f.layers.size(), 2u);
  EXPECT_EQ(f.input_dim, 20);
  EXPECT_EQ(f.layers[0].act, Act::tanh);
  EXPECT_EQ(f.param_count(), 20 * 64 + 64 + 64 * 3 + 3);
}

TEST(KerasModel, WhatCannotBeBuiltIsRefusedByLayerNameAndClass) {
  const std::string seed = files::read_all(std::string(GPUVS_SOURCE_DIR) + "/tests/data/keras/seed_keras2.json", "data");
  auto with = [&](const std::string& from, const std::string& to) { return test::replaced(seed, from, to); };
  for (const auto& [text, expect] : std::vector<std::pair<std::string, std::string>>{
           {with("\"class_name\": \"Dropout\"", "\"class_name\": \"Conv2D\""), "k.json: layer 'dropout' (Conv2D): the engine trains models of InputLayer, Dense"},
           {with("\"kernel_regularizer\": null", "\"kernel_regularizer\": {\"class_name\": \"L2\"}"), "layer 'dense' (Dense): kernel_regularizer is set"},
           {with("\"activation\": \"relu\"", "\"activation\": \"elu\""), "layer 'dense' (Dense): activation 'elu' is not built"},
           {with("\"units\": 128", "\"units\": 0"), "layer 'dense' (Dense): units must be a whole number"},
           {with("\"rate\": 0.2", "\"rate\": 1.5"), "layer 'dropout' (Dropout): rate must be a number in [0, 1)"},
           {with("\"class_name\": \"Sequential\"", "\"class_name\": \"Sequentail\""), "$.class_name: 'Sequentail' is not a Keras model class"},
           {"{\"class_name\": \"Sequential\", \"config\": {\"layers\": []}}", "k.json: $.config.layers: missing or empty"},
           {"{\"class_name\": \"Sequential\", \"config\": {\"layers\": [", "k.json: malformed JSON"}}) {
    try {
      keras_model_spec(text, "k.json");
      ADD_FAILURE() << expect;
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find(expect), std::string::npos) << e.what();
      EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << e.what();
    }
  }
  // A Functional graph that merges is not a chain.
  const std::string merge = R"({"class_name": "Functional", "config": {"name": "m", "layers": [
    {"class_name": "InputLayer", "name": "in", "config": {"batch_shape": [null, 8], "name": "in"}, "inbound_nodes": []},
    {"class_name": "Dense", "name": "a", "config": {"name": "a", "units": 8}, "inbound_nodes": [[["in", 0, 0, {}]]]},
    {"class_name": "Add", "name": "sum", "config": {"name": "sum"}, "inbound_nodes": [[["a", 0, 0, {}], ["in", 0, 0, {}]]]}]}})";
  EXPECT_THROW(keras_model_spec(merge, "m.json"), InputError);
  // Thousands of mutated Keras files: a model or one clean line naming the file.
  for (const char* file : {"seed_keras2.json", "seed_keras3.json"}) {
    const std::string text = files::read_all(std::string(GPUVS_SOURCE_DIR) + "/tests/data/keras/" + file, "data");
    EXPECT_GT(test::fuzz_parser(text, "{}[]\":,.-0123456789eEtruefalsnl _abcdDimorsuy", 1000, 53,
                                [](const std::string& t, const std::string& w) { (void)keras_model_spec(t, w); }),
              0)
        << file;
  }
}

// Keras models the engine does not run, priced through the graph IR: Keras's "Simple MNIST convnet" example
// (its summary: 34,826 parameters) and a small text-classification transformer (Embedding,
// MultiHeadAttention, Add, LayerNormalization, GlobalAveragePooling1D: 40,610 by Keras's layer formulas).
TEST(KerasGraph, ConvnetsAndTransformersBuildWithKerasParameterCountsAndFlops) {
  const std::string dir = std::string(GPUVS_SOURCE_DIR) + "/tests/data/keras/";
  const NetworkInfo cnn = resolve_network(dir + "mnist_convnet.json");
  EXPECT_EQ(cnn.family, models::Family::keras);
  const Graph g = build_network(cnn, {32, DType::f32, 0, false, false});
  EXPECT_EQ(param_count(g), 34826);
  // Forward FLOPs = 2 x multiply-adds: 26x26x32x9 + 11x11x64x288 + 1600x10 per image.
  const double macs = 26.0 * 26 * 32 * 9 + 11.0 * 11 * 64 * 288 + 1600.0 * 10;
  EXPECT_NEAR(graph_cost(g).matrix_flops, 2 * macs * 32, 2 * macs * 32 * 1e-9);
  const NetworkInfo tr = resolve_network(dir + "tiny_transformer.json");
  EXPECT_EQ(param_count(build_network(tr, {8, DType::f32, 0, false, false})), 40610);
  // The training step builds (autodiff reaches every trainable parameter).
  EXPECT_GT(build_network(tr, {8, DType::f32, 0, false, true}).size(), build_network(tr, {8, DType::f32, 0, false, false}).size());
  EXPECT_GT(build_network(cnn, {8, DType::f32, 0, false, true}).size(), g.size());
  // The engine cannot train them, and says what gpuvs does with them instead.
  try {
    load_model_file(dir + "mnist_convnet.json");
    ADD_FAILURE();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("layer 'conv2d' (Conv2D): the engine trains models of"), std::string::npos) << e.what();
  }
}

TEST(KerasGraph, OneDimensionalConvolutionsOverSequences) {
  // Embedding(5000, 64) -> Conv1D(128, 5, relu) -> MaxPooling1D(2) -> Conv1D(32, 3, same) ->
  // GlobalMaxPooling1D -> Dense(2, softmax): 320,000 + 41,088 + 12,320 + 66 parameters.
  const std::string text = R"({"class_name": "Sequential", "config": {"name": "textcnn", "layers": [
    {"class_name": "InputLayer", "config": {"batch_shape": [null, 100], "dtype": "int32", "name": "ids"}},
    {"class_name": "Embedding", "config": {"name": "emb", "input_dim": 5000, "output_dim": 64}},
    {"class_name": "Conv1D", "config": {"name": "c1", "filters": 128, "kernel_size": [5], "strides": [1], "padding": "valid", "activation": "relu"}},
    {"class_name": "MaxPooling1D", "config": {"name": "p1", "pool_size": [2], "strides": [2], "padding": "valid"}},
    {"class_name": "Conv1D", "config": {"name": "c2", "filters": 32, "kernel_size": [3], "padding": "same", "activation": "relu"}},
    {"class_name": "GlobalMaxPooling1D", "config": {"name": "gp"}},
    {"class_name": "Dense", "config": {"name": "out", "units": 2, "activation": "softmax"}}]}})";
  ASSERT_TRUE(keras_needs_graph(nlohmann::json::parse(text)));
  const NetworkInfo n = keras_network(text, "t.json");
  const Graph g = build_network(n, {8, DType::f32, 0, false, false});
  EXPECT_EQ(param_count(g), 320000 + 41088 + 12320 + 66);
  // Multiply-adds per sequence: 96 steps x 128 x 5 x 64, then 48 steps ('same' keeps them) x 32 x 3 x 128, then 32 x 2.
  const double macs = 96.0 * 128 * 5 * 64 + 48.0 * 32 * 3 * 128 + 32.0 * 2;
  EXPECT_NEAR(graph_cost(g).matrix_flops, 2 * macs * 8, 2 * macs * 8 * 1e-9);
  EXPECT_GT(build_network(n, {8, DType::f32, 0, false, true}).size(), g.size());  // trains through the convolutions
}

TEST(KerasGraph, WindowsPerAxisDilatedSeparableDepthwiseAndCausal) {
  // 32x32x3 -> SeparableConv2D(16, 3, same, depth_multiplier 2) -> DepthwiseConv2D(3, strides 2) ->
  // Conv2D(8, (3, 5), dilation (2, 1)) -> GlobalAveragePooling2D -> Dense(4). Keras's counts: 3*3*3*2 + 6*16 + 16,
  // 3*3*16 + 16, 3*5*16*8 + 8, 8*4 + 4.
  const std::string text = R"({"class_name": "Sequential", "config": {"name": "windows", "layers": [
    {"class_name": "InputLayer", "config": {"batch_shape": [null, 32, 32, 3], "name": "img"}},
    {"class_name": "SeparableConv2D", "config": {"name": "sep", "filters": 16, "kernel_size": [3, 3], "padding": "same", "depth_multiplier": 2}},
    {"class_name": "DepthwiseConv2D", "config": {"name": "dw", "kernel_size": 3, "strides": [2, 2], "padding": "valid", "activation": "relu"}},
    {"class_name": "Conv2D", "config": {"name": "c", "filters": 8, "kernel_size": [3, 5], "dilation_rate": [2, 1], "padding": "valid"}},
    {"class_name": "GlobalAveragePooling2D", "config": {"name": "gap"}},
    {"class_name": "Dense", "config": {"name": "out", "units": 4, "activation": "softmax"}}]}})";
  const NetworkInfo n = keras_network(text, "w.json");
  const Graph g = build_network(n, {2, DType::f32, 0, false, false});
  EXPECT_EQ(param_count(g), 166 + 160 + 1928 + 36);
  // Outputs: 32x32 ('same'), floor((32 - 3) / 2) + 1 = 15, then (15 - (2*2 + 1) + 1) x (15 - 5 + 1) = 11 x 11.
  const double macs = 32.0 * 32 * 6 * 9 + 32.0 * 32 * 16 * 6 + 15.0 * 15 * 16 * 9 + 11.0 * 11 * 8 * 16 * 15 + 8.0 * 4;
  EXPECT_NEAR(graph_cost(g).matrix_flops, 2 * macs * 2, 1e-6 * macs);
  EXPECT_GT(build_network(n, {2, DType::f32, 0, false, true}).size(), g.size());
  // Causal Conv1D keeps the length (100 steps x 4 filters x 3 taps x 8 channels), dilated or not.
  const std::string causal = R"({"class_name": "Sequential", "config": {"name": "tcn", "layers": [
    {"class_name": "InputLayer", "config": {"batch_shape": [null, 100, 8], "name": "x"}},
    {"class_name": "Conv1D", "config": {"name": "c", "filters": 4, "kernel_size": 3, "dilation_rate": 2, "padding": "causal"}},
    {"class_name": "GlobalAveragePooling1D", "config": {"name": "gap"}},
    {"class_name": "Dense", "config": {"name": "out", "units": 2}}]}})";
  const Graph t = build_network(keras_network(causal, "t.json"), {1, DType::f32, 0, false, false});
  EXPECT_NEAR(graph_cost(t).matrix_flops, 2.0 * (100 * 4 * 3 * 8 + 4 * 2), 1e-6);
}

TEST(KerasGraph, LayerNamesThatLookLikeGradientNamesStillTrain) {
  // An input layer named "flatten/grad" beside the Flatten named "flatten": the training step's names for
  // the Flatten's gradient were taken, and building it threw (found by fuzz_model_json).
  const std::string dir = std::string(GPUVS_SOURCE_DIR) + "/tests/data/keras/";
  std::string text = files::read_all(dir + "mnist_convnet.json", "data");
  const std::string from = "\"name\": \"input_layer\"";
  ASSERT_NE(text.find(from), std::string::npos);
  text.replace(text.find(from), from.size(), "\"name\": \"flatten/grad\"");
  const NetworkInfo n = keras_network(text, "k.json");
  EXPECT_GT(build_network(n, {8, DType::f32, 0, false, true}).size(), build_network(n, {8, DType::f32, 0, false, false}).size());
}

TEST(KerasGraph, LayersItCannotBuildAreNamedAndMutatedFilesFailCleanly) {
  const std::string dir = std::string(GPUVS_SOURCE_DIR) + "/tests/data/keras/";
  const std::string cnn = files::read_all(dir + "mnist_convnet.json", "data");
  auto with = [&](const std::string& from, const std::string& to) { return test::replaced(cnn, from, to); };
  for (const auto& [text, expect] : std::vector<std::pair<std::string, std::string>>{
           {with("\"MaxPooling2D\"", "\"Conv3D\""), "layer 'max_pooling2d' (Conv3D): not built by gpuvs's Keras reader yet"},
           {with("\"padding\": \"valid\"", "\"padding\": \"reflect\""), "layer 'conv2d' (Conv2D): padding 'reflect' is not built"},
           {with("\"kernel_size\": [3, 3]", "\"kernel_size\": [3, 3, 3]"), "layer 'conv2d' (Conv2D): kernel_size needs 1 or 2 values"},
           {with("\"activation\": \"relu\"", "\"activation\": \"mish\""), "layer 'conv2d' (Conv2D): activation 'mish' is not built"},
           {with("\"units\": 10", "\"units\": 0"), "layer 'dense' (Dense): units must be a whole number in [1, 2^31]"}}) {
    try {
      keras_network(text, "k.json");
      ADD_FAILURE() << expect;
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find(expect), std::string::npos) << e.what();
      EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << e.what();
    }
  }
  // Found by fuzzing: a model with no class_name (an unchecked lookup was undefined behaviour), a number past
  // double's range, a kernel larger than its input (the IR's own check): each one line, no crash.
  EXPECT_THROW(keras_network("{\"config\": {\"layers\": [{\"class_name\": \"InputLayer\", \"config\": {\"batch_shape\": [null, 4]}}]}}", "k.json"),
               InputError);
  EXPECT_THROW(keras_network("{\"class_name\": \"Sequential\", \"config\": {\"layers\": [1e406]}}", "k.json"), InputError);
  EXPECT_THROW(keras_model_spec("{\"class_name\": \"Sequential\", \"config\": {\"layers\": [1e406]}}", "k.json"), InputError);
  EXPECT_THROW(hf_network("{\"architectures\": [\"LlamaForCausalLM\"], \"hidden_size\": 1e406}", "c.json"), InputError);
  EXPECT_THROW(keras_network(with("\"kernel_size\": [3, 3]", "\"kernel_size\": [33, 33]"), "k.json"), InputError);
  // An Embedding of no features fed a Dense that divided by its empty last axis (UBSan; found by
  // fuzz_model_json's tree mutator).
  {
    std::string t = files::read_all(dir + "tiny_transformer.json", "data");
    t = test::replaced(t, "\"output_dim\": 32", "\"output_dim\": 0");
    std::string e = "(no error)";
    try {
      build_network(keras_network(t, "k.json"), {8, DType::f32, 0, false, true});
    } catch (const InputError& x) {
      e = x.what();
    }
    EXPECT_NE(e.find("layer 'embedding' (Embedding): output_dim must be a whole number in [1, 1048576]"), std::string::npos) << e;
  }
  for (const char* file : {"mnist_convnet.json", "tiny_transformer.json"}) {
    const std::string text = files::read_all(dir + file, "data");
    EXPECT_GT(test::fuzz_parser(text, "{}[]\":,.-0123456789eEtruefalsnl _abcdDimorsuy", 800, 61,
                                [](const std::string& t, const std::string& w) {
                                  const NetworkInfo n = keras_network(t, w);
                                  (void)build_network(n, {2, DType::f32, 0, false, true});
                                }),
              0)
        << file;
  }
}

TEST(KerasGraph, HostileLayerSettingsAreRefusedOrBuiltAsKerasDoes) {
  // Found reading the Keras readers (2026-12-02).
  auto sequential = [](const std::string& input, const std::string& layers) {
    return R"({"class_name": "Sequential", "config": {"name": "s", "layers": [{"class_name": "InputLayer", "config": {"name": "in", "batch_shape": )" +
           input + "}}, " + layers + "]}}";
  };
  auto error = [](const std::string& text) {
    try {
      const NetworkInfo n = keras_network(text, "k.json");
      (void)build_network(n, {2, DType::f32, 0, false, true});
    } catch (const InputError& e) {
      EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << e.what();
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  const std::string gap = R"({"class_name": "GlobalAveragePooling2D", "config": {"name": "gap"}}, {"class_name": "Dense", "config": {"name": "out", "units": 10}})";
  for (const auto& [text, expect] : std::vector<std::pair<std::string, std::string>>{
           // A softmax over a feature map flattened it, and the next Conv2D read an image's axes past the rows' two.
           {sequential("[null, 8, 8, 3]", R"({"class_name": "Activation", "config": {"name": "act", "activation": "softmax"}},
              {"class_name": "Conv2D", "config": {"name": "c", "filters": 1, "kernel_size": 1}})"),
            "layer 'act' (Activation): softmax over a feature map is not built"},
           // Dense units had no upper bound: 256 layers of 2^55 summed past 2^63 parameters.
           {sequential("[null, 1]", R"({"class_name": "Dense", "config": {"name": "d", "units": 36028797018963968}})"),
            "layer 'd' (Dense): units must be a whole number in [1, 2^31]"},
           // Reshape's target sizes multiplied unchecked (UBSan).
           {sequential("[null, 4]", R"({"class_name": "Reshape", "config": {"name": "r", "target_shape": [1099511627776, 1099511627776]}})"),
            "layer 'r' (Reshape): target_shape: 2199023255552 x 1099511627776 overflows 64-bit sizes"},  // [batch 2, ...] as built
           // channels_first was read as channels_last: H and C swapped.
           {sequential("[null, 3, 32, 32]", R"({"class_name": "Conv2D", "config": {"name": "c", "filters": 4, "kernel_size": 3, "data_format": "channels_first"}}, )" + gap),
            "layer 'c' (Conv2D): data_format \"channels_first\" is not built"}})
    EXPECT_NE(error(text).find(expect), std::string::npos) << error(text);
  {
    // Found in review (2026-12-02), both aborts under the sanitizers: a Reshape to [] left BatchNormalization
    // reading the channel axis past the shape's end; a key shorter than the value made the key's heads a reshape
    // whose element count overflowed 64 bits. And a class_name that is no string escaped as json's type_error.
    EXPECT_NE(error(sequential("[null, 1]", R"({"class_name": "Reshape", "config": {"name": "r", "target_shape": []}},
                {"class_name": "BatchNormalization", "config": {"name": "bn"}})")).find("layer 'bn' (BatchNormalization): needs an input with features, not a batch of scalars"),
              std::string::npos);
    EXPECT_NE(error(sequential("[null, 1]", R"({"class_name": "Reshape", "config": {"name": "r", "target_shape": []}},
                {"class_name": "Dense", "config": {"name": "d", "units": 3}})")).find("layer 'd' (Dense): needs an input [batch, ..., features] with features, got [2]"),
              std::string::npos);  // Keras too: a Dense needs an input of two axes or more (it had taken the batch for features)
    const std::string mha = R"({"class_name": "Functional", "config": {"name": "f", "layers": [
        {"class_name": "InputLayer", "name": "q", "config": {"batch_shape": [null, 1, 1]}},
        {"class_name": "InputLayer", "name": "v", "config": {"batch_shape": [null, 1048576, 1024]}},
        {"class_name": "Reshape", "name": "r", "config": {"target_shape": [1073741824, 1]}, "inbound_nodes": [[["v", 0, 0, {}]]]},
        {"class_name": "MultiHeadAttention", "name": "m", "config": {"num_heads": 1048576, "key_dim": 1048576},
         "inbound_nodes": [[["q", 0, 0, {}], ["r", 0, 0, {}], ["q", 0, 0, {}]]]}]}})";
    EXPECT_NE(error(mha).find("layer 'm' (MultiHeadAttention): the key must be a sequence of the value's 1073741824 steps, not of shape [2,1,1]"),
              std::string::npos) << error(mha);
    const std::string unnamed = R"({"class_name": 0, "config": {"name": "f", "layers": [
        {"class_name": "InputLayer", "name": "i", "config": {"batch_shape": [null, 4]}},
        {"class_name": "LayerNormalization", "name": "n", "config": {}, "inbound_nodes": [[["i", 0, 0, {}]]]}]}})";
    EXPECT_EQ(keras_network(unnamed, "k.json").description, "Keras model from k.json (2 layers)");
  }
  {
    // A packed attention gradient past 2^56 elements: the IR's std::invalid_argument escaped the training step.
    const std::string mha = R"({"class_name": "Functional", "config": {"name": "f", "layers": [
        {"class_name": "InputLayer", "name": "in", "config": {"name": "in", "batch_shape": [null, 32768, 1]}, "inbound_nodes": []},
        {"class_name": "MultiHeadAttention", "name": "mha", "config": {"name": "mha", "num_heads": 1048576, "key_dim": 1048576},
         "inbound_nodes": [[["in", 0, 0, {}], ["in", 0, 0, {}]]]}]}})";
    EXPECT_NE(error(mha).find("k.json: training cannot be priced"), std::string::npos) << error(mha);
  }
  {
    // Concatenate's axis: Keras's [N, H, W, C] axes, -3 is H (it was W, as was every axis but -1, 3 and 1); a
    // 64-bit axis was cut to int (2^32 + 1 read as 1) and a non-integer one read as -1.
    auto concat = [](const std::string& axis) {
      return R"({"class_name": "Functional", "config": {"name": "f", "layers": [
        {"class_name": "InputLayer", "name": "in", "config": {"name": "in", "batch_shape": [null, 8, 6, 3]}, "inbound_nodes": []},
        {"class_name": "Concatenate", "name": "cat", "config": {"name": "cat", "axis": )" + axis + R"(}, "inbound_nodes": [[["in", 0, 0, {}], ["in", 0, 0, {}]]]},
        {"class_name": "GlobalAveragePooling2D", "name": "gap", "config": {"name": "gap"}, "inbound_nodes": [[["cat", 0, 0, {}]]]},
        {"class_name": "Dense", "name": "out", "config": {"name": "out", "units": 10}, "inbound_nodes": [[["gap", 0, 0, {}]]]}]}})";
    };
    for (const auto& [axis, nchw] : std::vector<std::pair<std::string, Shape>>{{"-3", {2, 3, 16, 6}}, {"1", {2, 3, 16, 6}}, {"-2", {2, 3, 8, 12}}, {"-1", {2, 6, 8, 6}}}) {
      const Graph g = build_network(keras_network(concat(axis), "k.json"), {2, DType::f32, 0, false, false});
      EXPECT_EQ(g.node(g.find("cat")).shape, nchw) << axis;
    }
    EXPECT_NE(error(concat("4294967297")).find("layer 'cat' (Concatenate): axis 4294967297 is outside rank 4"), std::string::npos) << error(concat("4294967297"));
    EXPECT_NE(error(concat("1.0")).find("layer 'cat' (Concatenate): axis must be a whole number"), std::string::npos);
    EXPECT_NE(error(concat("0")).find("layer 'cat' (Concatenate): a concatenation along the batch is not built"), std::string::npos);
  }
  {
    // A Dense over [steps, features] acts per step (Keras: 20 x 5 + 5 = 105 parameters); the dense engine had
    // flattened the input (1,005). Priced as a graph; the engine refuses it.
    const std::string text = sequential("[null, 10, 20]", R"({"class_name": "Dense", "config": {"name": "d", "units": 5, "activation": "softmax"}})");
    EXPECT_TRUE(keras_needs_graph(nlohmann::json::parse(text)));
    EXPECT_EQ(param_count(build_network(keras_network(text, "k.json"), {2, DType::f32, 0, false, false})), 105);
    std::string refused = "(no error)";
    try {
      keras_model_spec(text, "k.json");
    } catch (const InputError& e) {
      refused = e.what();
    }
    EXPECT_NE(refused.find("layer 'd' (Dense): a Dense over a multi-axis input acts on its last axis"), std::string::npos) << refused;
    const std::string flattened = sequential("[null, 10, 20]", R"({"class_name": "Flatten", "config": {"name": "f"}}, {"class_name": "Dense", "config": {"name": "d", "units": 5, "activation": "softmax"}})");
    EXPECT_FALSE(keras_needs_graph(nlohmann::json::parse(flattened)));
    EXPECT_EQ(keras_model_spec(flattened, "k.json").param_count(), 1005);
  }
  {
    // JSON nested a million deep: the readers' recursive copies overflowed the stack. Refused as it is parsed.
    const std::string deep = std::string(1000000, '[') + std::string(1000000, ']');
    EXPECT_NE(error(deep).find("k.json: JSON nested more than 256 deep"), std::string::npos);
    test::TempDir dir;
    test::write_text(dir / "deep.json", deep);
    std::string e = "(no error)";
    try {
      resolve_network((dir / "deep.json").string());
    } catch (const InputError& x) {
      e = x.what();
    }
    EXPECT_NE(e.find("deep.json: JSON nested more than 256 deep"), std::string::npos) << e;
  }
  {
    // A Keras 3 call mha(query=q, value=v, key=v, use_causal_mask=True, attention_mask=m): its keyword tensors came
    // back in key order (key first: taken for the query), the mask counted as an input, the causal flag ignored.
    auto hist = [](const char* name) { return fmt::format(R"({{"class_name": "__keras_tensor__", "config": {{"keras_history": ["{}", 0, 0]}}}})", name); };
    const std::string text = R"({"class_name": "Functional", "config": {"name": "f", "layers": [
        {"class_name": "InputLayer", "name": "q", "config": {"name": "q", "batch_shape": [null, 4, 8]}, "inbound_nodes": []},
        {"class_name": "InputLayer", "name": "v", "config": {"name": "v", "batch_shape": [null, 6, 8]}, "inbound_nodes": []},
        {"class_name": "InputLayer", "name": "m", "config": {"name": "m", "batch_shape": [null, 4, 6]}, "inbound_nodes": []},
        {"class_name": "MultiHeadAttention", "name": "mha", "config": {"name": "mha", "num_heads": 2, "key_dim": 4},
         "inbound_nodes": [{"args": [], "kwargs": {"query": )" + hist("q") + R"(, "value": )" + hist("v") + R"(, "key": )" + hist("v") +
                             R"(, "attention_mask": )" + hist("m") + R"(, "use_causal_mask": true}}]},
        {"class_name": "GlobalAveragePooling1D", "name": "gap", "config": {"name": "gap"}, "inbound_nodes": [{"args": [)" + hist("mha") + R"(], "kwargs": {}}]},
        {"class_name": "Dense", "name": "out", "config": {"name": "out", "units": 3}, "inbound_nodes": [{"args": [)" + hist("gap") + R"(], "kwargs": {}}]}]}})";
    const Graph g = build_network(keras_network(text, "k.json"), {2, DType::f32, 0, false, false});
    const Node& att = g.node(g.find("mha/attention"));
    EXPECT_EQ(att.shape, (Shape{4, 4, 4}));  // [batch x heads, the query's 4 steps, key_dim]
    EXPECT_TRUE(att.causal);
  }
  {
    // Settings the builders do not read change the model: refused, not dropped (found in review). A shared
    // layer (called twice) had its calls' inputs merged into one op.
    const std::string dir = std::string(GPUVS_SOURCE_DIR) + "/tests/data/keras/";
    const std::string t = files::read_all(dir + "tiny_transformer.json", "data");
    auto with = [&](const std::string& from, const std::string& to) { return test::replaced(t, from, to); };
    for (const auto& [text, expect] : std::vector<std::pair<std::string, std::string>>{
             {with("\"output_shape\": null", "\"output_shape\": 48"), "layer 'mha' (MultiHeadAttention): output_shape 48 is not built"},
             {with("\"keepdims\": false", "\"keepdims\": true"), "layer 'pool' (GlobalAveragePooling1D): keepdims true is not built"},
             {with("\"axis\": -1, \"epsilon\"", "\"axis\": 1, \"epsilon\""), "layer 'ln1' (LayerNormalization): axis 1 is not built"},
             {with("\"output_layers\": [[\"classifier\", 0, 0]]", "\"output_layers\": [[\"classifier\", 0, 0], [\"pool\", 0, 0]]"),
              "$.config.output_layers: a model of 2 outputs is not built"},
             {with("\"name\": \"ln1\"}, \"registered_name\": null, \"name\": \"ln1\", \"inbound_nodes\": [",
                   "\"name\": \"ln1\"}, \"registered_name\": null, \"name\": \"ln1\", \"inbound_nodes\": [{\"args\": [], \"kwargs\": {}}, "),
              "layer 'ln1' (LayerNormalization): a layer called 2 times (shared weights) is not built"}})
      EXPECT_NE(error(text).find(expect), std::string::npos) << error(text);
  }
  {
    // Layers named after the loss head's nodes: the same model, trained the same.
    const std::string dir = std::string(GPUVS_SOURCE_DIR) + "/tests/data/keras/";
    std::string text = files::read_all(dir + "mnist_convnet.json", "data");
    const std::int64_t params = param_count(build_network(keras_network(text, "k.json"), {4, DType::f32, 0, false, true}));
    for (const auto& [from, to] : std::vector<std::pair<std::string, std::string>>{{"\"name\": \"input_layer\"", "\"name\": \"labels\""}, {"\"name\": \"dense\"", "\"name\": \"loss\""}}) {
      ASSERT_NE(text.find(from), std::string::npos) << from;
      while (text.find(from) != std::string::npos) text.replace(text.find(from), from.size(), to);
    }
    for (const std::string& ref : {std::string("\"input_layer\""), std::string("\"dense\"")})
      while (text.find(ref) != std::string::npos) text.replace(text.find(ref), ref.size(), ref == "\"dense\"" ? "\"loss\"" : "\"labels\"");
    EXPECT_EQ(param_count(build_network(keras_network(text, "k.json"), {4, DType::f32, 0, false, true})), params);
  }
  {
    // Files Keras itself does not load were priced (found in review): causal padding outside Conv1D, and a
    // dilated window that strides (base_conv.py refuses both). A dilated causal Conv1D of stride 1 is Keras's.
    const std::string conv2d = R"({"class_name": "Conv2D", "config": {"name": "c", "filters": 4, "kernel_size": 3, )";
    for (const auto& [text, expect] : std::vector<std::pair<std::string, std::string>>{
             {sequential("[null, 8, 8, 3]", conv2d + R"("padding": "causal"}}, )" + gap), "layer 'c' (Conv2D): causal padding is for Conv1D"},
             {sequential("[null, 8, 8, 3]", R"({"class_name": "MaxPooling2D", "config": {"name": "p", "padding": "causal"}}, )" + gap),
              "layer 'p' (MaxPooling2D): causal padding is for Conv1D"},
             {sequential("[null, 16, 8]", R"({"class_name": "MaxPooling1D", "config": {"name": "p", "padding": "causal"}}, {"class_name": "Flatten", "config": {"name": "f"}}, {"class_name": "Dense", "config": {"name": "out", "units": 2}})"),
              "layer 'p' (MaxPooling1D): causal padding is for Conv1D"},
             {sequential("[null, 16, 16, 3]", conv2d + R"("strides": 2, "dilation_rate": [1, 2], "padding": "same"}}, )" + gap),
              "layer 'c' (Conv2D): strides 2x2 with dilation_rate 1x2: Keras does not stride a dilated window"},
             {sequential("[null, 16, 8]", R"({"class_name": "Conv1D", "config": {"name": "c", "filters": 4, "kernel_size": 3, "strides": 2, "dilation_rate": 2}}, {"class_name": "Flatten", "config": {"name": "f"}}, {"class_name": "Dense", "config": {"name": "out", "units": 2}})"),
              "layer 'c' (Conv1D): strides 2 with dilation_rate 2: Keras does not stride a dilated window"},
             // Keras 3's LoRA freezes the kernel and trains two low-rank factors: other weights, other work.
             {sequential("[null, 8, 8, 3]", conv2d + R"("lora_rank": 4}}, )" + gap), "layer 'c' (Conv2D): lora_rank 4 is not built"}})
      EXPECT_NE(error(text).find(expect), std::string::npos) << error(text);
    EXPECT_EQ(error(sequential("[null, 16, 8]", R"({"class_name": "Conv1D", "config": {"name": "c", "filters": 4, "kernel_size": 3, "dilation_rate": 4, "padding": "causal", "lora_rank": null}}, {"class_name": "Flatten", "config": {"name": "f"}}, {"class_name": "Dense", "config": {"name": "out", "units": 2}})")),
              "(no error)");
  }
  {
    // The compile config was read only where the engine trains (Dense chains): a graph model compiled with SGD,
    // a mean squared error or Adam's weight decay was priced as plain Adam on cross-entropy (found in review).
    const std::string dir = std::string(GPUVS_SOURCE_DIR) + "/tests/data/keras/";
    const nlohmann::json model = nlohmann::json::parse(files::read_all(dir + "tiny_transformer.json", "data"));
    const nlohmann::json seed = nlohmann::json::parse(files::read_all(dir + "seed_keras3.json", "data"));
    auto compiled = [&](const std::string& pointer, const nlohmann::json& value) {
      nlohmann::json j = model;
      j["compile_config"] = seed["compile_config"];
      if (!pointer.empty()) j["compile_config"][nlohmann::json::json_pointer(pointer)] = value;
      return j.dump();
    };
    EXPECT_EQ(error(compiled("", nullptr)), "(no error)");
    for (const auto& [pointer, value, expect] : std::vector<std::tuple<std::string, nlohmann::json, std::string>>{
             {"/optimizer/class_name", "SGD", "k.json: $.compile_config.optimizer: 'SGD' is not built (Adam is)"},
             {"/loss", "mean_squared_error", "k.json: $.compile_config.loss: 'mean_squared_error' is not built"},
             {"/optimizer/config/weight_decay", 0.004, "k.json: $.compile_config.optimizer.config.weight_decay: 0.004 is not built"},
             {"/optimizer/config/use_ema", true, "k.json: $.compile_config.optimizer.config.use_ema: a moving average of the weights is not built"},
             {"/optimizer/class_name", 7, "k.json: $.compile_config: a setting has the wrong type"}})
      EXPECT_NE(error(compiled(pointer, value)).find(expect), std::string::npos) << error(compiled(pointer, value));
    // The engine's path reads the same: a Dense chain compiled with clipping is refused there too.
    nlohmann::json clipped = seed;
    clipped["compile_config"]["optimizer"]["config"]["clipnorm"] = 1.0;
    std::string refused = "(no error)";
    try {
      keras_model_spec(clipped.dump(), "k.json");
    } catch (const InputError& e) {
      refused = e.what();
    }
    EXPECT_NE(refused.find("k.json: $.compile_config.optimizer.config.clipnorm: 1.0 is not built"), std::string::npos) << refused;
  }
}

// .keras archives (Keras 3's save format: a zip holding config.json, metadata.json and the weights; the
// fixtures hold the first two, the weights are never read).
TEST(KerasArchive, ConfigInsideTheZipIsTheModelAndBrokenArchivesFailCleanly) {
  const std::string dir = std::string(GPUVS_SOURCE_DIR) + "/tests/data/keras/";
  const ModelSpec seed = load_model_file(dir + "seed.keras");
  EXPECT_EQ(seed.param_count(), sequential_preset("seed-mlp").param_count());
  EXPECT_NEAR(seed.adam.learning_rate, 1e-3, 1e-9);
  EXPECT_EQ(param_count(build_network(resolve_network(dir + "mnist_convnet.keras"), {4, DType::f32, 0, false, false})), 34826);
  test::TempDir tmp;
  const std::string bytes = files::read_all(dir + "seed.keras", "data");
  test::write_text(tmp / "junk.keras", "not a zip at all");
  test::write_text(tmp / "half.keras", bytes.substr(0, bytes.size() / 2));
  for (const auto& [file, expect] : std::vector<std::pair<std::string, std::string>>{
           {(tmp / "junk.keras").string(), "junk.keras: not a zip archive"},
           {(tmp / "half.keras").string(), "half.keras: "},
           {(tmp / "absent.keras").string(), "absent.keras: no such file"}}) {
    try {
      load_model_file(file);
      ADD_FAILURE() << file;
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find(expect), std::string::npos) << e.what();
      EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << e.what();
    }
  }
  // Random byte edits of the archive: a model, or one line naming the file.
  std::mt19937_64 rng(71);
  for (int round = 0; round < 300; ++round) {
    std::string b = bytes;
    for (int e = 0; e < 1 + static_cast<int>(rng() % 4); ++e) b[rng() % b.size()] = static_cast<char>(rng() % 256);
    const auto f = tmp / "fuzz.keras";
    test::write_text(f, b);
    try {
      (void)load_model_file(f);
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find("fuzz.keras"), std::string::npos) << e.what();
      EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << e.what();
    }
  }
}
