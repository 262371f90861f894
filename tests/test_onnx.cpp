// SPDX-License-Identifier: Apache-2.0
// The ONNX reader: real exported models (tests/data/onnx, made by scripts/make-onnx-fixtures with PyTorch)
// read with the exporting framework's parameter counts and profiler FLOPs; small models built here with the
// ONNX protobuf API for every refusal; mutated files parse or fail with one line.
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <nlohmann/json.hpp>

#include <fmt/format.h>

#include <filesystem>
#include <limits>
#include <random>

#include "core/error.hpp"
#include "import/held_models.hpp"
#include "import/onnx/onnx_known.hpp"
#include "import/onnx/onnx_model.hpp"
#include "ir/autodiff.hpp"
#include "ir/cost.hpp"
#include "models/networks.hpp"
#include "test_util.hpp"
#include "workload/resolve.hpp"

using namespace gpuvs;
using namespace gpuvs::ir;
using namespace gpuvs::models;
using namespace gpuvs::import;
using namespace gpuvs::workload;

namespace {

const std::string kDir = std::string(GPUVS_SOURCE_DIR) + "/tests/data/onnx/";

nlohmann::json expected() { return nlohmann::json::parse(test::slurp(kDir + "expected.json")); }

NetworkOptions opts(std::int64_t batch, bool training = false, bool flash = true) {
  NetworkOptions o;
  o.batch = batch;
  o.training = training;
  o.flash_attention = flash;
  return o;
}

int count(const Graph& g, OpKind op) {
  int n = 0;
  for (const auto& x : g.nodes()) n += x.op == op;
  return n;
}

std::string error_of(const std::function<void()>& f) { return test::input_error_of(f); }

/// A small ONNX model written with the protobuf API: inputs, initializers, nodes, one output.
struct Builder {
  onnx::ModelProto m;
  Builder(int opset = 13) {
    m.set_ir_version(8);
    m.set_producer_name("gpuvs-test");
    auto* o = m.add_opset_import();
    o->set_domain("");
    o->set_version(opset);
  }
  onnx::GraphProto& g() { return *m.mutable_graph(); }
  static void shape(onnx::ValueInfoProto* v, const std::string& name, int elem, const std::vector<std::string>& dims) {
    v->set_name(name);
    auto* tt = v->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(elem);
    auto* s = tt->mutable_shape();
    for (const auto& d : dims) {
      auto* dim = s->add_dim();
      if (!d.empty() && std::isdigit(static_cast<unsigned char>(d[0]))) dim->set_dim_value(std::stoll(d));
      else dim->set_dim_param(d);
    }
  }
  Builder& input(const std::string& name, const std::vector<std::string>& dims, int elem = onnx::TensorProto::FLOAT) {
    shape(g().add_input(), name, elem, dims);
    return *this;
  }
  Builder& output(const std::string& name, const std::vector<std::string>& dims = {}) {
    auto* v = g().add_output();
    if (dims.empty()) v->set_name(name);
    else shape(v, name, onnx::TensorProto::FLOAT, dims);
    return *this;
  }
  Builder& weight(const std::string& name, const std::vector<std::int64_t>& dims, float value = 0.01f) {
    auto* t = g().add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::FLOAT);
    std::int64_t n = 1;
    for (auto d : dims) {
      t->add_dims(d);
      n *= d;
    }
    for (std::int64_t k = 0; k < n; ++k) t->add_float_data(value);
    return *this;
  }
  Builder& ints(const std::string& name, const std::vector<std::int64_t>& v) {
    auto* t = g().add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::INT64);
    t->add_dims(static_cast<std::int64_t>(v.size()));
    for (auto x : v) t->add_int64_data(x);
    return *this;
  }
  onnx::NodeProto& node(const std::string& op, const std::vector<std::string>& in, const std::vector<std::string>& out,
                        const std::string& name = "") {
    auto* n = g().add_node();
    n->set_op_type(op);
    n->set_name(name.empty() ? op + "_" + std::to_string(g().node_size()) : name);
    for (const auto& i : in) n->add_input(i);
    for (const auto& o : out) n->add_output(o);
    return *n;
  }
  static void attr(onnx::NodeProto& n, const std::string& name, const std::vector<std::int64_t>& v) {
    auto* a = n.add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::INTS);
    for (auto x : v) a->add_ints(x);
  }
  static void attr(onnx::NodeProto& n, const std::string& name, std::int64_t v) {
    auto* a = n.add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::INT);
    a->set_i(v);
  }
  std::string save(const test::TempDir& dir, const std::string& file = "m.onnx") const {
    const std::string path = (dir / file).string();
    test::write_text(path, m.SerializeAsString());
    return path;
  }
};

/// x [batch, 8] -> Gemm(W [4, 8], transB) -> Relu -> output: the smallest real model.
Builder mlp() {
  Builder b;
  b.input("x", {"batch", "8"}).weight("W", {4, 8}).weight("b", {4}).output("y", {"batch", "4"});
  auto& gemm = b.node("Gemm", {"x", "W", "b"}, {"h"}, "fc");
  Builder::attr(gemm, "transB", 1);
  b.node("Relu", {"h"}, {"y"}, "relu");
  return b;
}

}  // namespace

TEST(Onnx, ExportedModelsHaveTheExportersParameterCounts) {
  const auto e = expected();
  ASSERT_EQ(e["fixtures"].size(), 4u);
  for (const auto& fx : e["fixtures"]) {
    const std::vector<std::int64_t> shape = fx["profile_shape"].get<std::vector<std::int64_t>>();
    std::map<std::string, std::string> options;
    if (shape.size() == 2) options["sequence"] = std::to_string(shape[1]);
    const NetworkInfo net = resolve_network(kDir + fx["file"].get<std::string>(), options);
    EXPECT_EQ(net.family, models::Family::onnx);
    const Graph g = build_network(net, opts(shape[0]));
    EXPECT_EQ(param_count(g), fx["params"].get<std::int64_t>()) << fx["file"];
    EXPECT_LT(fx["bytes"].get<int>(), 1 << 20) << "fixtures stay well under 1 MB";
  }
}

TEST(Onnx, ExportedModelsHaveTheProfilersMatrixFlops) {
  // torch.profiler's FLOPs for the GEMMs and convolutions of one forward pass (2 per multiply-add) are the
  // graph's matrix FLOPs exactly when attention is built op by op, as PyTorch ran it.
  const auto e = expected();  // held: a range-for over a member of a temporary would dangle
  for (const auto& fx : e["fixtures"]) {
    const std::vector<std::int64_t> shape = fx["profile_shape"].get<std::vector<std::int64_t>>();
    std::map<std::string, std::string> options;
    if (shape.size() == 2) options["sequence"] = std::to_string(shape[1]);
    const NetworkInfo net = resolve_network(kDir + fx["file"].get<std::string>(), options);
    double torch_matrix = 0, torch_bmm = 0;
    for (const auto& [op, flops] : fx["profiler_flops"].items()) {
      if (op == "aten::mm" || op == "aten::addmm" || op == "aten::bmm" || op == "aten::conv2d" || op == "aten::matmul")
        torch_matrix += flops.get<double>();
      if (op == "aten::bmm") torch_bmm += flops.get<double>();
    }
    const double explicit_flops = graph_cost(build_network(net, opts(shape[0], false, false))).matrix_flops;
    EXPECT_DOUBLE_EQ(explicit_flops, torch_matrix) << fx["file"];
    // FlashAttention over a causal mask computes the unmasked share of the scores only (T+1)/2T.
    const double fused = graph_cost(build_network(net, opts(shape[0], false, true))).matrix_flops;
    const double t = shape.size() == 2 ? static_cast<double>(shape[1]) : 1;
    if (fx["file"] == "tiny_gpt.onnx") {
      EXPECT_DOUBLE_EQ(fused, torch_matrix - torch_bmm + torch_bmm * (t + 1) / (2 * t));
    } else {
      EXPECT_DOUBLE_EQ(fused, torch_matrix) << fx["file"];
    }
  }
}

TEST(Onnx, PatternsExportersWriteAreFusedAsRuntimesRunThem) {
  const NetworkInfo gpt = resolve_network(kDir + "tiny_gpt.onnx", {{"sequence", "32"}});
  const Graph g = build_network(gpt, opts(4));
  EXPECT_EQ(count(g, OpKind::attention), 2);
  for (const auto& n : g.nodes())
    if (n.op == OpKind::attention) {
      EXPECT_TRUE(n.causal) << "the tril buffer masks the future";
    }
  EXPECT_EQ(count(g, OpKind::normalize), 5);  // ln1, ln2 twice and the final norm, written out at opset 14
  int gelu = 0;
  for (const auto& n : g.nodes()) gelu += n.op == OpKind::activation && n.act == Act::gelu;
  EXPECT_EQ(gelu, 2);
  EXPECT_NE(gpt.description.find("5 LayerNorm (written out)"), std::string::npos) << gpt.description;
  EXPECT_NE(gpt.description.find("dim 'sequence' = 32"), std::string::npos) << gpt.description;
  // Op by op, nothing is fused but the GEMM epilogues.
  const Graph plain = build_network(gpt, opts(4, false, false));
  EXPECT_EQ(count(plain, OpKind::attention), 0);
  EXPECT_EQ(count(plain, OpKind::batch_matmul), 4);

  const NetworkInfo enc = resolve_network(kDir + "tiny_encoder.onnx", {{"sequence", "16"}});
  const Graph e = build_network(enc, opts(2));
  EXPECT_EQ(count(e, OpKind::attention), 2);
  for (const auto& n : e.nodes())
    if (n.op == OpKind::attention) {
      EXPECT_FALSE(n.causal) << "an encoder attends both ways";
    }
  EXPECT_EQ(count(e, OpKind::normalize), 4);  // native LayerNormalization at opset 17

  const NetworkInfo cnn = resolve_network(kDir + "small_cnn.onnx");
  const Graph c = build_network(cnn, opts(2));
  EXPECT_EQ(count(c, OpKind::normalize), 3);
  EXPECT_EQ(count(c, OpKind::conv2d), 5);
  EXPECT_NE(cnn.description.find("dim 'batch' of input 'image'"), std::string::npos) << cnn.description;
}

TEST(Onnx, TrainingStepsReachEveryWeightAndKeepBuffersFrozen) {
  for (const auto& [file, options] : std::vector<std::pair<std::string, std::map<std::string, std::string>>>{
           {"small_cnn.onnx", {}}, {"tiny_gpt.onnx", {{"sequence", "32"}}}, {"tiny_encoder.onnx", {{"sequence", "32"}}}}) {
    const NetworkInfo net = resolve_network(kDir + file, options);
    const Graph g = build_network(net, opts(4, true));
    int trainable = 0;
    for (const auto& n : g.nodes()) trainable += n.op == OpKind::param && n.trainable;
    EXPECT_EQ(count(g, OpKind::adam_update), trainable) << file;
    EXPECT_GT(graph_cost(g).matrix_flops, 2.5 * graph_cost(build_network(net, opts(4))).matrix_flops) << file;
  }
  // BatchNormalization's running statistics are buffers: 2 x (16 + 32 + 32) values not trained.
  const Graph c = build_network(resolve_network(kDir + "small_cnn.onnx"), opts(4));
  EXPECT_EQ(param_count(c, false) - param_count(c, true), 160);
}

TEST(Onnx, SymbolicDimensionsComeFromTheBatchAndFromOptions) {
  const std::string gpt = kDir + "tiny_gpt.onnx";
  EXPECT_NE(error_of([&] { resolve_network(gpt); }).find("symbolic dimension 'sequence' (input 'ids' dimension 1) needs a size: --options 'sequence=N'"),
            std::string::npos);
  EXPECT_NE(error_of([&] { resolve_network(gpt, {{"sequence", "32"}, {"batch", "8"}}); }).find("'batch' is the batch (axis 0 of an input): give it with --batch"),
            std::string::npos);
  EXPECT_NE(error_of([&] { resolve_network(gpt, {{"sequence", "0"}}); }).find("option sequence=0: a dimension needs a whole number"), std::string::npos);
  // The mask buffer holds 64 positions: a longer sequence is an error the file's own Slice reveals.
  const NetworkInfo net = resolve_network(gpt, {{"sequence", "48"}});
  EXPECT_EQ(net.shape_options, std::vector<std::string>{"sequence"});
  const Graph g = build_network(net, opts(3));
  EXPECT_EQ(g.node(g.output("logits")).shape, (Shape{3 * 48, 512}));
  EXPECT_NE(error_of([&] { resolve_network(gpt, {{"sequence", "65"}}); }).find("tiny_gpt.onnx: "), std::string::npos);
}

TEST(Onnx, FixedBatchFilesPriceTheirOwnBatchOnly) {
  test::TempDir dir;
  Builder b;
  b.input("x", {"1", "8"}).weight("W", {8, 4}).output("y", {"1", "4"});
  b.node("MatMul", {"x", "W"}, {"y"}, "mm");
  const NetworkInfo net = onnx_network(b.save(dir), {});
  EXPECT_EQ(net.fixed_batch, 1);
  EXPECT_EQ(param_count(build_network(net, opts(1))), 32);
  EXPECT_NE(error_of([&] { build_network(net, opts(8)); }).find("the model's batch is fixed at 1 (input 'x' dimension 0); price it with --batch 1"),
            std::string::npos);
}

TEST(Onnx, ShapeArithmeticFoldsAndTheFilesShapeClaimsAreChecked) {
  test::TempDir dir;
  // Shape -> Gather -> Unsqueeze -> Concat -> Reshape, as exporters write a flatten for a dynamic batch.
  Builder b;
  b.input("x", {"N", "2", "3"}).ints("zero", {0}).ints("axes", {0}).ints("minus1", {-1}).weight("W", {6, 5}).output("y", {"N", "5"});
  b.node("Shape", {"x"}, {"s"});
  auto& gather = b.node("Gather", {"s", "zero"}, {"n"});
  Builder::attr(gather, "axis", 0);
  auto& concat = b.node("Concat", {"n", "minus1"}, {"target"});
  Builder::attr(concat, "axis", 0);
  b.node("Reshape", {"x", "target"}, {"flat"});
  b.node("MatMul", {"flat", "W"}, {"y"});
  const NetworkInfo net = onnx_network(b.save(dir), {});
  const Graph g = build_network(net, opts(7));
  EXPECT_EQ(g.node(g.output("logits")).shape, (Shape{7, 5}));
  EXPECT_NE(net.description.find("3 nodes of constants and shape arithmetic folded"), std::string::npos) << net.description;
  // An output the file says is [N, 6] while the graph computes [N, 5] is the file's error.
  Builder bad = b;
  bad.g().mutable_output(0)->mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim(1)->set_dim_value(6);
  EXPECT_NE(error_of([&] { onnx_network(bad.save(dir, "bad.onnx"), {}); }).find("value 'y': the file says dimension 1 is 6, the graph computes [2,5]"),
            std::string::npos) << error_of([&] { onnx_network(bad.save(dir, "bad.onnx"), {}); });
}

TEST(Onnx, WhatCannotBeBuiltIsNamedByNodeAndReason) {
  test::TempDir dir;
  auto err = [&](Builder b) { return error_of([&] { onnx_network(b.save(dir), {}); }); };
  {
    Builder b = mlp();
    b.node("Einsum", {"y"}, {"z"}, "mystery");
    b.g().mutable_output(0)->set_name("z");
    EXPECT_NE(err(b).find("m.onnx: node 'mystery' (Einsum): operator not built by gpuvs's ONNX reader (built: Add,"), std::string::npos) << err(b);
  }
  {
    Builder b = mlp();
    b.g().mutable_node(1)->set_domain("com.microsoft");
    EXPECT_NE(err(b).find("node 'relu' (Relu): operators of domain 'com.microsoft' are not built"), std::string::npos) << err(b);
  }
  {
    Builder b;
    b.input("x", {"N", "3", "16", "16"}).weight("W", {4, 3, 3, 3}).output("y");
    b.node("ConvTranspose", {"x", "W"}, {"y"}, "up");
    EXPECT_NE(err(b).find("node 'up' (ConvTranspose): operator not built"), std::string::npos) << err(b);
  }
  {
    Builder b = mlp();
    b.g().mutable_node()->SwapElements(0, 1);  // Relu before the Gemm that makes its input
    EXPECT_NE(err(b).find("node 'relu' (Relu): input 'h' is not produced before this node"), std::string::npos) << err(b);
  }
  {
    Builder b;
    b.input("x", {"N", "8"}).input("shape", {"2"}, onnx::TensorProto::INT64).output("y");
    b.node("Reshape", {"x", "shape"}, {"y"}, "dynamic");
    EXPECT_NE(err(b).find("node 'dynamic' (Reshape): its shape (input 1) is computed from data at run time"), std::string::npos) << err(b);
  }
  {
    Builder b = mlp();
    b.g().mutable_initializer(0)->add_float_data(1.0f);  // 33 values for dims [4, 8]
    EXPECT_NE(err(b).find("initializer 'W': tensor 'W' has dims [4,8] (32 elements) but holds 33"), std::string::npos) << err(b);
  }
  {
    Builder b = mlp();
    b.g().mutable_initializer(0)->set_dims(0, std::int64_t{1} << 45);
    EXPECT_NE(err(b).find("dimension 35184372088832 outside [0, 2^40]"), std::string::npos) << err(b);
  }
  {
    // An input whose dims are each in range but whose product is not: the file's error, not the IR's (its
    // std::invalid_argument escaped, exit 1; found by fuzz_model_onnx's graph mutator).
    Builder b = mlp();
    b.g().mutable_input(0)->Clear();
    Builder::shape(b.g().mutable_input(0), "x", onnx::TensorProto::FLOAT, {"1099511627776", "2", "6", "1099511627776"});
    EXPECT_NE(err(b).find("m.onnx: input 'x': shape [1099511627776,2,6,1099511627776] holds more than 2^48 elements"), std::string::npos) << err(b);
  }
  {
    // A Reshape to 65 axes (fuzz_model_onnx made one of 2^24: every shape's text was megabytes, a timeout).
    Builder b;
    b.input("x", {"N", "1"}).ints("target", std::vector<std::int64_t>(65, 1)).output("y");
    b.g().mutable_initializer(0)->set_int64_data(0, -1);
    b.node("Reshape", {"x", "target"}, {"y"}, "deep");
    EXPECT_NE(err(b).find("node 'deep' (Reshape): rank 65 is more than 64"), std::string::npos) << err(b);
  }
  {
    Builder b = mlp();
    b.g().mutable_initializer(0)->set_dims(0, -4);
    EXPECT_NE(err(b).find("dimension -4 outside [0, 2^40]"), std::string::npos) << err(b);
  }
  {
    Builder b = mlp();
    b.g().mutable_initializer(0)->clear_dims();
    for (int k = 0; k < 4; ++k) b.g().mutable_initializer(0)->add_dims(std::int64_t{1} << 13);  // 2^52 elements
    EXPECT_NE(err(b).find("holds more than 2^48 elements"), std::string::npos) << err(b);
  }
  {
    Builder b = mlp();
    b.m.mutable_opset_import(0)->set_version(5);
    EXPECT_NE(err(b).find("opset 5 is outside the 7-21 gpuvs reads"), std::string::npos) << err(b);
    b.m.clear_opset_import();
    EXPECT_NE(err(b).find("no opset_import for the standard ONNX operators"), std::string::npos) << err(b);
  }
  {
    Builder b = mlp();
    b.g().mutable_input(0)->Clear();
    Builder::shape(b.g().mutable_input(0), "x", onnx::TensorProto::FLOAT, {"N", "width"});
    EXPECT_NE(err(b).find("symbolic dimension 'width' (input 'x' dimension 1) needs a size"), std::string::npos) << err(b);
  }
  {
    // Too few inputs, or no output: refused by node, never read past (the attention pattern read a
    // one-input MatMul's second input; ASan, found by fuzz_model_onnx).
    Builder b;
    b.input("x", {"N", "4", "8"}).output("y");
    b.node("MatMul", {"x"}, {"y"}, "lonely");
    EXPECT_NE(err(b).find("node 'lonely' (MatMul)"), std::string::npos) << err(b);
    Builder c;
    c.input("x", {"N", "4", "4"}).output("y");
    c.node("MatMul", {"x", "x"}, {}, "mute");
    c.node("Relu", {"x"}, {"y"}, "relu");
    EXPECT_NE(err(c).find("node 'mute' (MatMul)"), std::string::npos) << err(c);
  }
  // Not ONNX at all, and empty.
  test::write_text(dir / "junk.onnx", "this is not a protobuf \x01\x02\xff");
  EXPECT_NE(error_of([&] { onnx_network((dir / "junk.onnx").string(), {}); }).find("junk.onnx: not an ONNX model"), std::string::npos);
  test::write_text(dir / "empty.onnx", "");
  EXPECT_NE(error_of([&] { onnx_network((dir / "empty.onnx").string(), {}); }).find("empty.onnx: not an ONNX model"), std::string::npos);
  EXPECT_NE(error_of([&] { onnx_network((dir / "missing.onnx").string(), {}); }).find("missing.onnx"), std::string::npos);
}

TEST(Onnx, DilatedAndAsymmetricWindowsKeepTheirOutputsAndWork) {
  // Conv 3x3 dilation 2 over 16x16 (reach 5): 12x12 outputs; a 2x2 kernel, pads (0, 0, 1, 1), stride 2: 6x6; a
  // 3x3 max pool, stride 2, SAME_UPPER: 3x3. Each output does the same multiply-adds as the layer's.
  test::TempDir dir;
  Builder b;
  b.input("x", {"N", "3", "16", "16"}).weight("W", {4, 3, 3, 3}).weight("W2", {4, 4, 2, 2}).output("y");
  auto& dil = b.node("Conv", {"x", "W"}, {"a"}, "dilated");
  Builder::attr(dil, "dilations", std::vector<std::int64_t>{2, 2});
  auto& asym = b.node("Conv", {"a", "W2"}, {"c"}, "asymmetric");
  Builder::attr(asym, "pads", std::vector<std::int64_t>{0, 0, 1, 1});
  Builder::attr(asym, "strides", std::vector<std::int64_t>{2, 2});
  auto& pool = b.node("MaxPool", {"c"}, {"p"}, "same");
  Builder::attr(pool, "kernel_shape", std::vector<std::int64_t>{3, 3});
  Builder::attr(pool, "strides", std::vector<std::int64_t>{2, 2});
  auto* ap = pool.add_attribute();
  ap->set_name("auto_pad");
  ap->set_type(onnx::AttributeProto::STRING);
  ap->set_s("SAME_UPPER");
  b.node("Flatten", {"p"}, {"y"});
  const NetworkInfo net = onnx_network(b.save(dir), {});
  const Graph g = build_network(net, opts(1));
  EXPECT_DOUBLE_EQ(graph_cost(g).matrix_flops, 2.0 * (12 * 12 * 4 * 27 + 6 * 6 * 4 * 16));
  EXPECT_EQ(g.node(g.output("logits")).shape, (Shape{1, 4 * 3 * 3}));
  EXPECT_NE(net.description.find("dilated kernels are priced as undilated ones over a cropped input"), std::string::npos) << net.description;
}

TEST(Onnx, ACausalMaskBuiltWithTriluIsFoundCausal) {
  // scores = q k^T; Where(Trilu(ones, upper, k=1) != 0, -inf, scores); softmax; @ v: exporters' torch.triu mask.
  test::TempDir dir;
  Builder b;
  b.input("q", {"N", "4", "8", "16"}).input("k", {"N", "4", "16", "8"}).input("v", {"N", "4", "8", "16"}).output("y");
  b.weight("ones", {8, 8}, 1.0f).ints("one", {1});
  b.g().mutable_initializer(b.g().initializer_size() - 1)->clear_dims();  // a scalar k
  b.node("Trilu", {"ones", "one"}, {"upper"});
  b.weight("zero", {}, 0.0f).weight("neg", {}, -1e30f);
  b.node("Equal", {"upper", "zero"}, {"keep"});
  b.node("Not", {"keep"}, {"hide"});
  b.node("MatMul", {"q", "k"}, {"s"});
  b.node("Where", {"hide", "neg", "s"}, {"masked"});
  auto& sm = b.node("Softmax", {"masked"}, {"p"});
  Builder::attr(sm, "axis", -1);
  b.node("MatMul", {"p", "v"}, {"o"});
  b.node("Flatten", {"o"}, {"y"});
  const Graph g = build_network(onnx_network(b.save(dir), {}), opts(2));
  ASSERT_EQ(count(g, OpKind::attention), 1);
  for (const auto& n : g.nodes())
    if (n.op == OpKind::attention) {
      EXPECT_TRUE(n.causal);
    }
  // A k that holds no value is the file's error, named by node (it was read past its end).
  Builder empty_k = b;
  for (auto& t : *empty_k.g().mutable_initializer())
    if (t.name() == "one") {
      t.clear_int64_data();
      t.add_dims(0);
    }
  const std::string e = error_of([&] { onnx_network(empty_k.save(dir, "empty-k.onnx"), {}); });
  EXPECT_NE(e.find("(Trilu): expected a value at index 0, the tensor holds 0"), std::string::npos) << e;
}

TEST(Onnx, RangeFoldsFromThreeScalarsOfOneType) {
  test::TempDir dir;
  auto scalar = [](Builder& b, const std::string& name, double v, bool is_float) {  // a Constant node, as exporters write
    auto* a = b.node("Constant", {}, {name}).add_attribute();
    a->set_name("value");
    a->set_type(onnx::AttributeProto::TENSOR);
    auto* t = a->mutable_t();
    t->set_data_type(is_float ? onnx::TensorProto::FLOAT : onnx::TensorProto::INT64);
    if (is_float) t->add_float_data(static_cast<float>(v));
    else t->add_int64_data(static_cast<std::int64_t>(v));
  };
  // x [N, 6] reshaped to [-1] ++ Range(3, 4, 1) = [-1, 3]: [2N, 3].
  auto model = [&](bool float_delta, bool wide_start) {
    Builder b;
    b.input("x", {"N", "6"}).ints("minus1", {-1}).output("y");
    if (wide_start) b.ints("start", {3, 3});
    else scalar(b, "start", 3, false);
    scalar(b, "limit", 4, false);
    scalar(b, "delta", 1, float_delta);
    b.node("Range", {"start", "limit", "delta"}, {"r"}, "range");
    auto& concat = b.node("Concat", {"minus1", "r"}, {"target"});
    Builder::attr(concat, "axis", 0);
    b.node("Reshape", {"x", "target"}, {"y"});
    return b;
  };
  const Graph g = build_network(onnx_network(model(false, false).save(dir), {}), opts(7));
  EXPECT_EQ(g.node(g.output("logits")).shape, (Shape{14, 3}));
  // Integers past 2^53 count exactly (in doubles, 2^60 + 3 - 2^60 was 0): Shape(Range(2^60, 2^60 + 3, 1)) = [3].
  {
    Builder big;
    big.input("x", {"N", "6"}).ints("minus1", {-1}).output("y");
    const std::int64_t base = std::int64_t{1} << 60;
    scalar(big, "start", 0, false);
    scalar(big, "limit", 0, false);
    scalar(big, "delta", 1, false);
    big.g().mutable_node(0)->mutable_attribute(0)->mutable_t()->set_int64_data(0, base);
    big.g().mutable_node(1)->mutable_attribute(0)->mutable_t()->set_int64_data(0, base + 3);
    big.node("Range", {"start", "limit", "delta"}, {"r"}, "range");
    big.node("Shape", {"r"}, {"count"});
    auto& c = big.node("Concat", {"minus1", "count"}, {"target"});
    Builder::attr(c, "axis", 0);
    big.node("Reshape", {"x", "target"}, {"y"});
    const Graph gb = build_network(onnx_network(big.save(dir, "big.onnx"), {}), opts(7));
    EXPECT_EQ(gb.node(gb.output("logits")).shape, (Shape{14, 3}));
  }
  // An integer start with a float step (its integer values, none, were read past their end), or a start of two
  // elements (all but the first were ignored): refused by node.
  for (const bool float_delta : {true, false}) {
    const bool wide_start = !float_delta;
    const std::string e = error_of([&] { onnx_network(model(float_delta, wide_start).save(dir), {}); });
    EXPECT_NE(e.find("node 'range' (Range): Range needs three one-element inputs of one type"), std::string::npos) << e;
  }
  // A float initializer is a trained weight, not a constant: its values are not the file's to fold.
  Builder w = model(false, false);
  w.g().mutable_node(2)->Clear();
  w.g().mutable_node(2)->set_op_type("Identity");
  w.g().mutable_node(2)->add_input("step");
  w.g().mutable_node(2)->add_output("delta");
  w.weight("step", {}, 1.0f);
  const std::string e = error_of([&] { onnx_network(w.save(dir), {}); });
  EXPECT_NE(e.find("(Range): Range is built from constants and shapes only; an input here is computed at run time or is a trained weight"),
            std::string::npos) << e;
}

TEST(Onnx, RepeatedPadAxesAndEndlessReadsOfConstantsAreRefused) {
  // Found in review (2026-12-02): a Pad's axes input may repeat an axis, and each entry built two fills and a
  // concat (2^23 entries naming axis 0: 25 M graph nodes from 200 bytes); folds read their known inputs whole
  // however often (a thousand ReduceSums of one 2^24-element Range: minutes).
  test::TempDir dir;
  Builder pad(18);
  pad.input("x", {"N", "8"}).ints("pads", {1, 1, 1, 1}).ints("axes", {0, -2}).output("y");
  pad.node("Pad", {"x", "pads", "", "axes"}, {"y"}, "pad");
  std::string e = error_of([&] { onnx_network(pad.save(dir), {}); });
  EXPECT_NE(e.find("node 'pad' (Pad): axis -2 is repeated"), std::string::npos) << e;
  Builder reads;
  reads.input("x", {"N", "6"}).ints("minus1", {-1}).ints("three", {3}).output("y");
  for (const auto& [name, v] : std::vector<std::pair<std::string, std::int64_t>>{{"start", 0}, {"limit", std::int64_t{1} << 23}, {"delta", 1}}) {
    auto* a = reads.node("Constant", {}, {name}).add_attribute();
    a->set_name("value");
    a->set_type(onnx::AttributeProto::TENSOR);
    a->mutable_t()->set_data_type(onnx::TensorProto::INT64);
    a->mutable_t()->add_int64_data(v);
  }
  reads.node("Range", {"start", "limit", "delta"}, {"r"}, "range");
  auto& wide = reads.node("Concat", std::vector<std::string>(129, "r"), {"all"}, "wide");  // 129 x 2^23 values read: past 2^30
  Builder::attr(wide, "axis", 0);
  reads.node("ReduceMax", {"all"}, {"most"});
  auto& target = reads.node("Concat", {"minus1", "three"}, {"target"});
  Builder::attr(target, "axis", 0);
  reads.node("Reshape", {"x", "target"}, {"y"});
  e = error_of([&] { build_network(onnx_network(reads.save(dir, "reads.onnx"), {}), opts(7)); });
  EXPECT_NE(e.find("node 'wide' (Concat): working out the file's constants reads more than 2^30 values in all"), std::string::npos) << e;
  reads.g().mutable_node(4)->mutable_input()->DeleteSubrange(0, 2);  // 127 x 2^23: read, and too many to keep
  e = error_of([&] { build_network(onnx_network(reads.save(dir, "reads.onnx"), {}), opts(7)); });
  EXPECT_EQ(e.find("reads more than 2^30"), std::string::npos) << e;
}

TEST(Onnx, SlicesOfEmptyAxesAndOfScalarsAreWhatTheyShouldBe) {
  // Reshape x [N, 6] to [-1] ++ Slice(empty, -1:-10:-1) ++ [3]. Stepping back over an empty axis, the clamps
  // gave the slice one element, read from a tensor of none (UBSan; found by fuzz_model_onnx's graph mutator).
  test::TempDir dir;
  Builder b;
  b.input("x", {"N", "6"}).ints("minus1", {-1}).ints("three", {3}).ints("empty", {}).output("y");
  b.ints("starts", {-1}).ints("ends", {-10}).ints("axes", {0}).ints("steps", {-1});
  b.node("Slice", {"empty", "starts", "ends", "axes", "steps"}, {"none"}, "backwards");
  auto& concat = b.node("Concat", {"minus1", "none", "three"}, {"target"});
  Builder::attr(concat, "axis", 0);
  b.node("Reshape", {"x", "target"}, {"y"});
  const Graph g = build_network(onnx_network(b.save(dir), {}), opts(7));
  EXPECT_EQ(g.node(g.output("logits")).shape, (Shape{14, 3}));
  // A scalar sliced along no axis is itself (the axis loop counted down from rank - 1 = SIZE_MAX; UBSan, found
  // by fuzz_model_onnx's graph mutator).
  const onnx_detail::Known seven = onnx_detail::Known::scalar_int(7);
  const onnx_detail::Known same = onnx_detail::slice_known(seven, {}, {}, {}, {});
  EXPECT_TRUE(same.shape.empty());
  EXPECT_EQ(same.i, (std::vector<std::int64_t>{7}));
}

TEST(Onnx, KnownTensorArithmeticIsChecked) {
  using onnx_detail::Known;
  const Known big = Known::scalar_int(std::int64_t{1} << 62);
  const Known four = Known::scalar_int(4);
  EXPECT_NE(error_of([&] { onnx_detail::eval_elementwise("Mul", {&big, &four}, "f.onnx"); }).find("integer overflow"), std::string::npos);
  const Known zero = Known::scalar_int(0);
  EXPECT_NE(error_of([&] { onnx_detail::eval_elementwise("Div", {&four, &zero}, "f.onnx"); }).find("division by zero"), std::string::npos);
  const Known v = Known::ints_1d({1, 2, 3});
  const auto r = onnx_detail::eval_elementwise("Add", {&v, &four}, "f.onnx");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->i, (std::vector<std::int64_t>{5, 6, 7}));
  const Known m = Known::ints_1d({-7});
  const Known three = Known::scalar_int(3);
  EXPECT_EQ(onnx_detail::eval_elementwise("Mod", {&m, &three}, "f.onnx")->i[0], 2);  // the divisor's sign
  EXPECT_EQ(onnx_detail::eval_elementwise("Div", {&m, &three}, "f.onnx")->i[0], -2);  // truncation
  const Known a{{2, 1}, false, {}, {1, 2}}, b{{1, 3}, false, {}, {10, 20, 30}};
  EXPECT_EQ(onnx_detail::eval_elementwise("Add", {&a, &b}, "f.onnx")->shape, (Shape{2, 3}));
  const Known c{{2}, false, {}, {1, 2}};
  EXPECT_NE(error_of([&] { onnx_detail::eval_elementwise("Add", {&c, &v}, "f.onnx"); }).find("do not broadcast"), std::string::npos);
  // What folding got wrong silently (found reading the reader): Mod's fmod=1 (the dividend's sign) was ignored,
  // an integer power stopped at 64 factors ((-1)^65 was 1), integers compared as doubles (2^53 + 1 == 2^53),
  // and a Cast to a narrower integer kept the 64-bit value.
  EXPECT_EQ(onnx_detail::eval_elementwise("Mod", {&m, &three}, "f.onnx", true)->i[0], -1);
  const Known minus1 = Known::scalar_int(-1), e65 = Known::scalar_int(65), two = Known::scalar_int(2), e62 = Known::scalar_int(62);
  EXPECT_EQ(onnx_detail::eval_elementwise("Pow", {&minus1, &e65}, "f.onnx")->i[0], -1);
  EXPECT_EQ(onnx_detail::eval_elementwise("Pow", {&two, &e62}, "f.onnx")->i[0], std::int64_t{1} << 62);
  const Known e63 = Known::scalar_int(63);
  EXPECT_NE(error_of([&] { onnx_detail::eval_elementwise("Pow", {&two, &e63}, "f.onnx"); }).find("integer overflow"), std::string::npos);
  const Known p53 = Known::scalar_int(std::int64_t{1} << 53), p53_1 = Known::scalar_int((std::int64_t{1} << 53) + 1);
  EXPECT_EQ(onnx_detail::eval_elementwise("Equal", {&p53, &p53_1}, "f.onnx")->i[0], 0);
  EXPECT_EQ(onnx_detail::eval_elementwise("Less", {&p53, &p53_1}, "f.onnx")->i[0], 1);
  const Known fm{{}, true, {-7.5}, {}};
  EXPECT_NE(error_of([&] { onnx_detail::eval_elementwise("Mod", {&fm, &three}, "f.onnx"); }).find("a floating-point Mod needs fmod=1"), std::string::npos);
  const Known wide = Known::ints_1d({300, -129, 65536 + 7});
  EXPECT_EQ(onnx_detail::cast_known(wide, onnx::TensorProto::UINT8).i, (std::vector<std::int64_t>{44, 127, 7}));
  EXPECT_EQ(onnx_detail::cast_known(wide, onnx::TensorProto::INT8).i, (std::vector<std::int64_t>{44, 127, 7}));
  EXPECT_EQ(onnx_detail::cast_known(wide, onnx::TensorProto::INT16).i, (std::vector<std::int64_t>{300, -129, 7}));
  // A Cast into a narrower float rounds as the format does (nearest, ties to even), to infinity past its
  // largest value and through its subnormals; DOUBLE keeps every bit. 2049 is between FLOAT16's 2048 and 2050
  // (a tie: the even 2048); 65519 rounds to 65504 and 65520 to infinity; 2^-25 is half FLOAT16's smallest
  // subnormal (a tie: to 0), 3 x 2^-25 rounds up to 2^-23; 1/3 is 0.33325195 in FLOAT16 and 0.33398438 in BFLOAT16.
  const double third = 1.0 / 3.0;
  const Known fl{{9}, true, {2049, 2051, 65519, 65520, -70000, std::ldexp(1.0, -25), 3 * std::ldexp(1.0, -25), third, 16777217}, {}};
  using TP = onnx::TensorProto;
  const double inf = std::numeric_limits<double>::infinity();
  EXPECT_EQ(onnx_detail::cast_known(fl, TP::FLOAT16).f,
            (std::vector<double>{2048, 2052, 65504, inf, -inf, 0, std::ldexp(1.0, -23), 0.333251953125, inf}));
  EXPECT_EQ(onnx_detail::cast_known(fl, TP::BFLOAT16).f[7], 0.333984375);
  EXPECT_EQ(onnx_detail::cast_known(fl, TP::BFLOAT16).f[0], 2048);  // 8 significant bits: 2049 is 2048
  EXPECT_EQ(onnx_detail::cast_known(fl, TP::FLOAT).f[8], 16777216);  // 2^24 + 1 is a tie in FLOAT: the even 2^24
  EXPECT_EQ(onnx_detail::cast_known(fl, TP::FLOAT).f[7], static_cast<double>(static_cast<float>(third)));
  EXPECT_EQ(onnx_detail::cast_known(Known{{1}, true, {1e39}, {}}, TP::FLOAT).f[0], inf);
  EXPECT_EQ(onnx_detail::cast_known(Known{{1}, true, {1e-46}, {}}, TP::FLOAT).f[0], 0);  // below half of 2^-149
  EXPECT_EQ(onnx_detail::cast_known(fl, TP::DOUBLE).f, fl.f);
  // Expand (and ConstantOfShape): one value fills the shape; a row repeats down, a column across.
  const auto filled = onnx_detail::expand_known(Known{{}, true, {0.5}, {}}, {2, 3}, "f.onnx");
  ASSERT_TRUE(filled);
  EXPECT_EQ(filled->shape, (Shape{2, 3}));
  EXPECT_EQ(filled->f, (std::vector<double>(6, 0.5)));
  EXPECT_EQ(onnx_detail::expand_known(v, {2, 3}, "f.onnx")->i, (std::vector<std::int64_t>{1, 2, 3, 1, 2, 3}));
  EXPECT_EQ(onnx_detail::expand_known(a, {2, 3}, "f.onnx")->i, (std::vector<std::int64_t>{1, 1, 1, 2, 2, 2}));
  EXPECT_NE(error_of([&] { onnx_detail::expand_known(v, {2, 4}, "f.onnx"); }).find("f.onnx"), std::string::npos);
}

TEST(Onnx, HostileGraphsAreRefusedByNameOrReadRight) {
  // Found reading the reader (2026-12-02), each reproduced under ASan + UBSan before it was fixed.
  test::TempDir dir;
  int files = 0;  // a file each: parses are cached by path
  auto err = [&](Builder b) { return error_of([&] { onnx_network(b.save(dir, fmt::format("h{}.onnx", files++)), {}); }); };
  auto logits = [&](Builder b) {
    const NetworkInfo net = onnx_network(b.save(dir, fmt::format("h{}.onnx", files++)), {});
    const Graph g = build_network(net, opts(net.fixed_batch > 0 ? net.fixed_batch : 2, true));
    return g.node(g.output(g.output("logits") != kNone ? "logits" : "output")).shape;
  };
  {
    // A value made by two nodes: lookups by name mixed the two (a view of a 2-element weight read as its
    // namesake's 100,000), and 100 Identity nodes per layer writing one name made the weight walk 100^5 paths.
    Builder b = mlp();
    b.node("Identity", {"y"}, {"h"}, "again");
    EXPECT_NE(err(b).find("value 'h' is made twice, by node 'fc' (Gemm) and by node 'again' (Identity)"), std::string::npos) << err(b);
    Builder c = mlp();
    c.node("Identity", {"x"}, {"W"}, "shadow");
    EXPECT_NE(err(c).find("value 'W' is made twice, by an initializer and by node 'shadow' (Identity)"), std::string::npos) << err(c);
    Builder d = mlp();
    d.input("x", {"N", "8"});
    EXPECT_NE(err(d).find("input 'x' is declared twice"), std::string::npos) << err(d);
    Builder e = mlp();
    e.m.mutable_opset_import(0)->set_version((std::int64_t{1} << 32) + 13);  // was narrowed to int: opset 13
    EXPECT_NE(err(e).find("opset 4294967309 is outside the 7-21 gpuvs reads"), std::string::npos) << err(e);
  }
  {
    // A scalar bias for one output column (a Gemm's C, an Add after a MatMul) was asked for its last axis
    // (UBSan: back() of an empty shape); it is a bias of one.
    Builder b;
    b.input("x", {"N", "8"}).weight("W", {8, 1}).weight("s", {}).output("y");
    b.node("Gemm", {"x", "W", "s"}, {"y"}, "fc");
    EXPECT_EQ(logits(b), (Shape{2, 1}));
    Builder c;
    c.input("x", {"N", "8"}).weight("W", {8, 1}).weight("s", {}).output("y");
    c.node("MatMul", {"x", "W"}, {"m"}, "mm");
    c.node("Add", {"m", "s"}, {"y"}, "bias");
    EXPECT_EQ(logits(c), (Shape{2, 1}));
  }
  {
    // Empty tensors: a MatMul of [2, 0] by [0, 3] divided by its inner 0; attention over an Expand to batch 0
    // divided by its heads (SIGFPE, UBSan).
    Builder b;
    b.weight("a", {2, 0}).weight("b", {0, 3}).output("y");
    b.node("MatMul", {"a", "b"}, {"y"}, "mm");
    EXPECT_NE(err(b).find("value 'a' [2,0] holds no elements: an empty tensor is not built"), std::string::npos) << err(b);
    Builder c;
    c.input("x", {"1", "4", "8"}).ints("shape", {0, 4, 8}).output("y");
    c.node("Expand", {"x", "shape"}, {"q"}, "empty");
    Builder::attr(c.node("Transpose", {"q"}, {"kt"}), "perm", std::vector<std::int64_t>{0, 2, 1});
    c.node("MatMul", {"q", "kt"}, {"s"});
    Builder::attr(c.node("Softmax", {"s"}, {"p"}), "axis", -1);
    c.node("MatMul", {"p", "q"}, {"y"});
    EXPECT_NE(err(c).find("node 'empty' (Expand): value 'q' [0,4,8] holds no elements"), std::string::npos) << err(c);
  }
  {
    // A node named after the loss head's nodes: the IR's "duplicate node name" escaped as std::invalid_argument.
    Builder b = mlp();
    b.g().mutable_node(1)->set_name("loss");
    b.g().mutable_node(0)->set_name("labels");
    EXPECT_EQ(logits(b), (Shape{2, 4}));
  }
  {
    // Split: num_outputs of 2^63 - 1 overflowed (and 2^40 pushed 2^40 sizes before the count was checked);
    // 2^23 sizes of 2^40 each summed past 2^63.
    Builder b;
    b.input("x", {"N", "8"}).output("y");
    auto& split = b.node("Split", {"x"}, {"y", "z"}, "halves");
    Builder::attr(split, "axis", 1);
    Builder::attr(split, "num_outputs", std::numeric_limits<std::int64_t>::max());
    b.m.mutable_opset_import(0)->set_version(18);
    EXPECT_NE(err(b).find("node 'halves' (Split): Split num_outputs 9223372036854775807 for 2 outputs"), std::string::npos) << err(b);
    Builder c;
    c.input("x", {"1", "1099511627776"}).ints("sizes", {std::int64_t{1} << 40, std::int64_t{1} << 40}).output("y");
    Builder::attr(c.node("Split", {"x", "sizes"}, {"y", "z"}, "parts"), "axis", 1);
    EXPECT_NE(err(c).find("node 'parts' (Split): Split sizes 1099511627776,1099511627776 do not fit dimension 1099511627776"), std::string::npos) << err(c);
  }
  {
    // Reshape of an empty tensor to [0, 2^40, 2^40] (allowzero): the product of the non-zero sizes overflowed.
    Builder b;
    b.input("x", {"N", "4"}).weight("e", {0}).ints("target", {0, std::int64_t{1} << 40, std::int64_t{1} << 40}).output("y");
    Builder::attr(b.node("Reshape", {"e", "target"}, {"r"}, "vast"), "allowzero", 1);
    b.node("Shape", {"r"}, {"rs"});
    b.node("Relu", {"x"}, {"y"});
    EXPECT_NE(err(b).find("node 'vast' (Reshape): shape [0,1099511627776,1099511627776] holds more than 2^48 elements"), std::string::npos)
        << err(b);
    // Inputs adding up past a dimension's bound along a Concat's axis.
    Builder c;
    c.input("x", {"1099511627776"}).output("y");
    Builder::attr(c.node("Concat", {"x", "x"}, {"y"}, "twice"), "axis", 0);
    EXPECT_NE(err(c).find("node 'twice' (Concat): the inputs add up past 2^40 along the axis"), std::string::npos) << err(c);
    // An Expand to 100 axes: refused by its rank before its shape is written into a message.
    Builder d;
    d.input("x", {"N", "4"}).ints("n", {100}).output("y");
    auto* fill = d.node("ConstantOfShape", {"n"}, {"ones"}, "shape").add_attribute();
    fill->set_name("value");
    fill->set_type(onnx::AttributeProto::TENSOR);
    auto* t = fill->mutable_t();
    t->set_data_type(onnx::TensorProto::INT64);
    t->add_dims(1);
    t->add_int64_data(1);
    d.node("Expand", {"x", "ones"}, {"y"}, "wide");
    EXPECT_NE(err(d).find("node 'wide' (Expand): rank 100 is more than 64"), std::string::npos) << err(d);
  }
  {
    // A Conv dilated 2^20 over 2^40 inputs: the crop that gives its outputs was found one element at a time.
    Builder b;
    b.input("x", {"1", "1", "1099511627776"}).weight("w", {1, 1, 2}).output("y");
    Builder::attr(b.node("Conv", {"x", "w"}, {"y"}, "dilated"), "dilations", std::vector<std::int64_t>{1 << 20});
    EXPECT_EQ(logits(b), (Shape{1, 1099510579200}));  // [1, 1, T] as rows of class scores
  }
  {
    // Folding remembered results by op, attributes and input values only: a second Split of the same tensor
    // into fewer outputs got the first's parts, and a weight with a Constant's values became that constant.
    Builder b;
    b.input("x", {"N", "3"}).ints("k", {1, 2, 3, 4, 5, 6}).output("y");
    Builder::attr(b.node("Split", {"k"}, {"a", "b", "c"}), "num_outputs", 3);
    Builder::attr(b.node("Split", {"k"}, {"d", "e"}), "num_outputs", 2);
    b.node("Reshape", {"x", "d"}, {"y"});
    b.m.mutable_opset_import(0)->set_version(18);
    EXPECT_EQ(logits(b), (Shape{2, 3}));  // y = x [2, 3] as [1, 2, 3] (the 3-way parts said [1, 2]: 6 elements as 2)
    Builder c;
    c.input("x", {"N", "4"}).ints("shape", {4, 4}).output("y");
    c.weight("W", {16}, 0.0f);
    onnx::NodeProto& zeros = c.node("Constant", {}, {"z"});
    auto* a = zeros.add_attribute();
    a->set_name("value_floats");
    a->set_type(onnx::AttributeProto::FLOATS);
    for (int k = 0; k < 16; ++k) a->add_floats(0.0f);
    c.node("Reshape", {"z", "shape"}, {"zm"});
    c.node("Reshape", {"W", "shape"}, {"Wm"});
    c.node("MatMul", {"x", "Wm"}, {"h"});
    c.node("MatMul", {"h", "zm"}, {"y"});
    const Graph cg = build_network(onnx_network(c.save(dir, "cache.onnx"), {}), opts(2));
    EXPECT_EQ(param_count(cg, true), 16);  // W trains; the Constant does not
  }
}

// Run by hand (--gtest_also_run_disabled_tests): it makes 2 GiB of values before the reader refuses, too much
// beside CI's other tests.
TEST(Onnx, DISABLED_TheValuesTheReaderKeepsAreBounded) {
  // A chain of Reshapes of a 2^24-element constant: each fold copied it, all copies kept (found in review).
  test::TempDir dir;
  Builder b;
  b.input("x", {"N", "8"}).ints("square", {4096, 4096}).ints("flat", {std::int64_t{1} << 24}).output("y");
  b.node("ConstantOfShape", {"square"}, {"c0"});
  for (int k = 0; k < 20; ++k) b.node("Reshape", {fmt::format("c{}", k), k % 2 ? "square" : "flat"}, {fmt::format("c{}", k + 1)}, fmt::format("r{}", k));
  b.node("Relu", {"x"}, {"y"});
  const std::string e = error_of([&] { onnx_network(b.save(dir), {}); });
  EXPECT_NE(e.find("node 'r14' (Reshape): the values the reader keeps pass 2^28 elements in all"), std::string::npos) << e;
}

TEST(Onnx, ASecondReviewsFindingsAreRefusedOrBuiltAsOnnxDoes) {
  // Found reading the reader a second time (2026-12-02).
  test::TempDir dir;
  int files = 0;
  auto err = [&](Builder b) { return error_of([&] { onnx_network(b.save(dir, fmt::format("r{}.onnx", files++)), {}); }); };
  auto logits = [&](Builder b) {
    const NetworkInfo net = onnx_network(b.save(dir, fmt::format("r{}.onnx", files++)), {});
    const Graph g = build_network(net, opts(2, true));
    return g.node(g.output(g.output("logits") != kNone ? "logits" : "output")).shape;
  };
  {
    // A Gather index of 2^63 - 1 from a computed tensor: the run's end overflowed (UBSan) past the range check.
    Builder b;
    b.input("x", {"N", "8"}).ints("idx", {std::numeric_limits<std::int64_t>::max()}).output("y");
    Builder::attr(b.node("Gather", {"x", "idx"}, {"y"}, "pick"), "axis", 1);
    EXPECT_NE(err(b).find("node 'pick' (Gather): index 9223372036854775807 is out of range for a dimension of 8"), std::string::npos) << err(b);
  }
  {
    // [0, 2^40, 2^40] holds nothing, so it passed; the strides and rows of code that walked it overflowed.
    Builder b;
    b.input("x", {"N", "8"}).output("y");
    auto* t = b.g().add_initializer();
    t->set_name("e");
    t->set_data_type(onnx::TensorProto::INT64);
    for (std::int64_t d : {std::int64_t{0}, std::int64_t{1} << 40, std::int64_t{1} << 40}) t->add_dims(d);
    b.node("Flatten", {"e"}, {"f"}, "flat");
    b.node("Relu", {"x"}, {"y"});
    EXPECT_NE(err(b).find("shape [0,1099511627776,1099511627776] holds more than 2^48 elements"), std::string::npos) << err(b);
  }
  {
    // Concat of two [2^40, 0] constants walked 2^41 empty rows (hours, from 200 bytes): nothing to walk now.
    Builder b;
    b.input("x", {"N", "8"}).ints("shape", {std::int64_t{1} << 40, 0}).output("y");
    b.node("ConstantOfShape", {"shape"}, {"e"});
    Builder::attr(b.node("Concat", {"e", "e"}, {"c"}, "cat"), "axis", 1);
    b.node("Shape", {"c"}, {"cs"});
    b.node("Reshape", {"x", "cs"}, {"y"}, "r");
    EXPECT_NE(err(b).find("node 'r' (Reshape)"), std::string::npos) << err(b);
  }
  {
    // Twenty symbolic dims without sizes: each was a linear search among the others, all quoted in the message.
    std::vector<std::string> dims{"N"};
    for (int k = 0; k < 20; ++k) dims.push_back(fmt::format("d{}", k));
    Builder b;
    b.input("x", dims).output("y");
    b.node("Relu", {"x"}, {"y"});
    const std::string e = err(b);
    EXPECT_NE(e.find("symbolic dimensions 'd0' (input 'x' dimension 1)"), std::string::npos) << e;
    EXPECT_NE(e.find("'d7' (input 'x' dimension 8) and 12 more need a size: --options 'd0=N;"), std::string::npos) << e;
    EXPECT_EQ(e.find("'d8'"), std::string::npos) << e;
  }
  {
    // ceil_mode keeps no window that starts in the end padding (PyTorch, ONNX since onnx/onnx#5741): 5 inputs,
    // kernel 2, stride 2, pads 1 and 1 give 3, not 4.
    Builder b;
    b.input("x", {"N", "1", "5", "5"}).output("y");
    auto& pool = b.node("MaxPool", {"x"}, {"p"}, "pool");
    Builder::attr(pool, "kernel_shape", std::vector<std::int64_t>{2, 2});
    Builder::attr(pool, "strides", std::vector<std::int64_t>{2, 2});
    Builder::attr(pool, "pads", std::vector<std::int64_t>{1, 1, 1, 1});
    Builder::attr(pool, "ceil_mode", 1);
    b.node("Flatten", {"p"}, {"y"});
    EXPECT_EQ(logits(b), (Shape{2, 9}));
  }
  {
    // A Cast's `to` was narrowed before it was checked (2^32 + 1 read as FLOAT) where the value is computed.
    Builder b;
    b.input("x", {"N", "8"}, onnx::TensorProto::INT64).output("y");
    Builder::attr(b.node("Cast", {"x"}, {"y"}, "cast"), "to", (std::int64_t{1} << 32) + 1);
    EXPECT_NE(err(b).find("node 'cast' (Cast): a cast to type 4294967297 is not built"), std::string::npos) << err(b);
    // A Split's sizes were all quoted (a node of a million outputs, a message of megabytes): eight, then a count.
    Builder sp;
    sp.input("x", {"N", "8"}).ints("split", std::vector<std::int64_t>(10, 1)).output("y");
    std::vector<std::string> outs;
    for (int k = 0; k < 10; ++k) outs.push_back(fmt::format("s{}", k));
    Builder::attr(sp.node("Split", {"x", "split"}, outs, "parts"), "axis", 1);
    sp.node("Relu", {"s0"}, {"y"});
    EXPECT_NE(err(sp).find("node 'parts' (Split): Split sizes 1,1,1,1,1,1,1,1,... (10 in all) do not fit dimension 8"), std::string::npos) << err(sp);
    // An empty Concat input was dropped without its other sizes checked: [2, 8] beside [0, 5] on axis 1.
    Builder c;
    c.input("x", {"N", "8"}).weight("e", {0, 5}).output("y");
    Builder::attr(c.node("Concat", {"x", "e"}, {"y"}, "cat"), "axis", 1);
    EXPECT_NE(err(c).find("node 'cat' (Concat): input 1 [0,5] does not match input 0 [2,8] off axis 1"), std::string::npos) << err(c);
  }
  {
    // Folded arithmetic in the output's element type, as ONNX Runtime computes it: Floor(0.7f x 10f) is 7 in
    // float32 (6 in doubles), a Slice end that kept 6 of 8 columns; uint8 200 + 100 wraps to 44.
    auto constant = [](Builder& b, const std::string& name, int elem, double v) {
      auto& c = b.node("Constant", {}, {name});
      auto* a = c.add_attribute();
      a->set_name("value");
      a->set_type(onnx::AttributeProto::TENSOR);
      auto* t = a->mutable_t();
      t->set_data_type(elem);
      t->add_dims(1);
      if (elem == onnx::TensorProto::FLOAT) t->add_float_data(static_cast<float>(v));
      else t->add_int32_data(static_cast<std::int32_t>(v));
    };
    Builder b;
    b.input("x", {"N", "8"}).ints("starts", {0}).ints("axes", {1}).output("y");
    constant(b, "seven_tenths", onnx::TensorProto::FLOAT, 0.7);
    constant(b, "ten", onnx::TensorProto::FLOAT, 10);
    b.node("Mul", {"seven_tenths", "ten"}, {"p"});
    b.node("Floor", {"p"}, {"f"});
    Builder::attr(b.node("Cast", {"f"}, {"end"}), "to", onnx::TensorProto::INT64);
    b.node("Slice", {"x", "starts", "end", "axes"}, {"y"}, "cut");
    EXPECT_EQ(logits(b), (Shape{2, 7}));
    Builder c;
    c.input("x", {"N", "400"}).ints("starts", {0}).ints("axes", {1}).output("y");
    constant(c, "a", onnx::TensorProto::UINT8, 200);
    constant(c, "b", onnx::TensorProto::UINT8, 100);
    c.node("Add", {"a", "b"}, {"s"});
    Builder::attr(c.node("Cast", {"s"}, {"end"}), "to", onnx::TensorProto::INT64);
    c.node("Slice", {"x", "starts", "end", "axes"}, {"y"}, "cut");
    EXPECT_EQ(logits(c), (Shape{2, 44}));
  }
  {
    // Attention whose scores add a trained table hiding no position (a learned position bias): fused as
    // unmasked FlashAttention, the table's 16 parameters went unpriced (found in a third review). Unfused now.
    Builder b;
    b.input("q", {"N", "4", "8"}).weight("B", {4, 4}, 0.01f).output("y");
    Builder::attr(b.node("Transpose", {"q"}, {"kt"}), "perm", std::vector<std::int64_t>{0, 2, 1});
    b.node("MatMul", {"q", "kt"}, {"s"});
    b.node("Add", {"s", "B"}, {"sb"});
    Builder::attr(b.node("Softmax", {"sb"}, {"p"}), "axis", -1);
    b.node("MatMul", {"p", "q"}, {"y"});
    const Graph g = build_network(onnx_network(b.save(dir, "bias.onnx"), {}), opts(2, true));
    EXPECT_EQ(param_count(g), 16);
    EXPECT_EQ(count(g, OpKind::attention), 0);
    // Before opset 18 a Split without sizes is into equal parts: 8 into 3 is no ONNX model.
    Builder sp(13);
    sp.input("x", {"N", "8"}).output("y");
    Builder::attr(sp.node("Split", {"x"}, {"a", "b2", "c"}, "thirds"), "axis", 1);
    sp.node("Relu", {"a"}, {"y"});
    EXPECT_NE(err(sp).find("node 'thirds' (Split): Split of dimension 8 into 3 equal parts (uneven parts need opset 18)"), std::string::npos) << err(sp);
    // ceil_mode with auto_pad: ONNX defines neither's output size with the other.
    Builder cp;
    cp.input("x", {"N", "1", "5", "5"}).output("y");
    auto& pool = cp.node("MaxPool", {"x"}, {"p"}, "pool");
    Builder::attr(pool, "kernel_shape", std::vector<std::int64_t>{2, 2});
    Builder::attr(pool, "ceil_mode", 1);
    auto* ap = pool.add_attribute();
    ap->set_name("auto_pad");
    ap->set_type(onnx::AttributeProto::STRING);
    ap->set_s("VALID");
    cp.node("Flatten", {"p"}, {"y"});
    EXPECT_NE(err(cp).find("node 'pool' (MaxPool): ceil_mode with auto_pad VALID"), std::string::npos) << err(cp);
  }
  {
    // GELU's constants as [1, 1, 1, 1]: ONNX broadcasts x [N, 8] up to rank 4; the fusion kept rank 2.
    Builder b;
    b.input("x", {"N", "8"}).output("y");
    auto scalar4 = [&](const std::string& name, float v) {
      auto* t = b.g().add_initializer();
      t->set_name(name);
      t->set_data_type(onnx::TensorProto::FLOAT);
      for (int d = 0; d < 4; ++d) t->add_dims(1);
      t->add_float_data(v);
    };
    scalar4("r2", std::sqrt(2.0f));
    scalar4("one", 1.0f);
    scalar4("half", 0.5f);
    b.node("Div", {"x", "r2"}, {"a"});
    b.node("Erf", {"a"}, {"e"});
    b.node("Add", {"e", "one"}, {"p"});
    b.node("Mul", {"x", "p"}, {"m"});
    b.node("Mul", {"m", "half"}, {"y"});
    EXPECT_EQ(logits(b), (Shape{1, 1, 2, 8}));  // unfused, as ONNX broadcasts it (fused, it was [2, 8])
  }
}

TEST(Onnx, MutatedFilesParseOrFailWithOneLine) {
  // Random byte edits of the real exports (weights, graph structure, shapes) and of the smallest model:
  // each reads, or fails with one InputError line naming the file. Never a crash, never another exception.
  test::TempDir dir;
  std::vector<std::string> seeds = {mlp().m.SerializeAsString(), test::slurp(kDir + "small_cnn.onnx"), test::slurp(kDir + "tiny_gpt.onnx")};
  std::mt19937_64 rng(20261201);
  int ok = 0, failed = 0;
  for (std::size_t s = 0; s < seeds.size(); ++s) {
    const int rounds = s == 0 ? 6000 : 400;
    for (int round = 0; round < rounds; ++round) {
      const std::string path = (dir / fmt::format("fuzz{}-{}.onnx", s, round)).string();  // a new file: no cached parse
      std::string t = seeds[s];
      for (int e = 0, edits = 1 + static_cast<int>(rng() % 4); e < edits; ++e) {
        const std::size_t pos = rng() % t.size();
        const auto k = rng() % 10;
        if (k < 6) t[pos] = static_cast<char>(rng() % 256);
        else if (k < 8) t.erase(pos, 1 + rng() % 8);
        else t.insert(pos, 1, static_cast<char>(rng() % 256));
      }
      test::write_text(path, t);
      struct Remove {
        std::string p;
        ~Remove() { std::filesystem::remove(p); }
      } remove{path};
      try {
        const NetworkInfo net = onnx_network(path, {{"sequence", "8"}});
        (void)build_network(net, opts(net.fixed_batch > 0 ? net.fixed_batch : 2, true));
        ++ok;
      } catch (const InputError& e) {
        ++failed;
        EXPECT_EQ(std::string(e.what()).rfind(path, 0), 0u) << e.what();
        EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << e.what();
      }
    }
  }
  EXPECT_GT(ok, 50);
  EXPECT_GT(failed, 500);
}

// ---- models held in memory (import/held_models.hpp: what `import gpuvs` hands over) ----

TEST(HeldModels, ReadFromMemoryUnderTheirNameNeverFromDisk) {
  const std::string bytes = gpuvs::test::slurp(kDir + "small_cnn.onnx");
  const auto from_file = param_count(build_network(resolve_network(kDir + "small_cnn.onnx"), opts(4)));
  gpuvs::test::TempDir dir;
  const std::string name = (dir.path() / "cnn.onnx").string();
  gpuvs::test::write_text(name, "not a protobuf");  // a file of the same name on disk is not what is read
  {
    gpuvs::import::HeldModel held(name, bytes);
    EXPECT_EQ(param_count(build_network(resolve_network(name), opts(4))), from_file);
    EXPECT_NE(gpuvs::test::input_error_of([&] { gpuvs::import::HeldModel again(name, "x"); }).find("held in memory already"), std::string::npos);
  }
  // Released: the name is a path again, and the same parse is not served from a cache.
  EXPECT_EQ(gpuvs::test::input_error_of([&] { resolve_network(name); }), name + ": not an ONNX model (the protobuf does not parse)");
  {
    gpuvs::import::HeldModel held("torch:Broken.onnx", bytes.substr(0, bytes.size() / 2));
    EXPECT_NE(gpuvs::test::input_error_of([&] { resolve_network("torch:Broken.onnx"); }).rfind("torch:Broken.onnx: ", 0), std::string::npos);
  }
  EXPECT_NE(gpuvs::test::input_error_of([] { gpuvs::import::HeldModel held("model", "{}"); }).find("needs a name ending .json, .toml, .onnx or .gguf"),
            std::string::npos);
  // JSON text: a Keras Sequential model's to_json(), built as its file would be.
  const std::string keras = R"({"class_name": "Sequential", "config": {"name": "s", "layers": [
    {"class_name": "InputLayer", "config": {"batch_input_shape": [null, 780]}},
    {"class_name": "Dense", "config": {"units": 128, "activation": "relu"}},
    {"class_name": "Dense", "config": {"units": 10, "activation": "softmax"}}]}})";
  gpuvs::import::HeldModel held("keras:s.json", keras);
  EXPECT_EQ(param_count(build_network(resolve_network("keras:s.json"), opts(4))), 780 * 128 + 128 + 128 * 10 + 10);
  EXPECT_EQ(gpuvs::workload::resolve_sequential("keras:s.json").layers.size(), 2u);
}
