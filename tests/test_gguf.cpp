// SPDX-License-Identifier: Apache-2.0
// The GGUF reader (import/gguf): the header as the spec lays it out, the decoder it describes, the weights as
// stored, and every refusal. Fixtures are written by tests/gguf_builder.hpp, byte by byte from the spec.
#include <sys/stat.h>

#include <gtest/gtest.h>

#include <fstream>
#include <random>

#include "gguf_builder.hpp"
#include "import/gguf/ggml_types.hpp"
#include "import/gguf/gguf_file.hpp"
#include "import/gguf/gguf_model.hpp"
#include "import/held_models.hpp"
#include "import/model_files.hpp"
#include "test_util.hpp"

namespace gpuvs {
namespace {

using import::GgufHeader;
using test::GgufBuilder;

TEST(GgmlTypes, TheTableHasGgmlBlockSizes) {
  for (const auto& [name, b] : test::test_ggml_types()) {
    const import::GgmlType* t = import::ggml_type(b.id);
    ASSERT_NE(t, nullptr) << name;
    EXPECT_EQ(t->name, name);
    EXPECT_EQ(t->block_elements, b.elements) << name;
    EXPECT_EQ(t->block_bytes, b.bytes) << name;
    EXPECT_EQ(import::ggml_type_named(name), t);
  }
  EXPECT_DOUBLE_EQ(import::ggml_type_named("q4_k")->bits(), 4.5);
  EXPECT_DOUBLE_EQ(import::ggml_type_named("Q6_K")->bits(), 6.5625);
  EXPECT_EQ(import::ggml_type_named("Q8_1")->block_bytes, 36);  // ggml-common.h today, not gguf-py's 40
  for (const int removed : {4, 5, 31, 32, 33, 36, 37, 38, 43, -1}) EXPECT_EQ(import::ggml_type(removed), nullptr) << removed;
}

TEST(Gguf, ReadsTheHeaderAsTheSpecLaysItOut) {
  const GgufBuilder b = test::tiny_llama_q4_k_m();
  const std::string bytes = b.bytes();
  const GgufHeader h = import::read_gguf_bytes(bytes, "tiny.gguf");
  EXPECT_EQ(h.version, 3u);
  EXPECT_EQ(h.alignment, 32u);
  EXPECT_EQ(h.file_size, bytes.size());
  EXPECT_EQ(h.find("general.architecture")->text, "llama");
  EXPECT_EQ(h.find("llama.block_count")->integer, 8);
  EXPECT_FLOAT_EQ(static_cast<float>(h.find("llama.attention.layer_norm_rms_epsilon")->real), 1e-5f);
  const auto* tokens = h.find("tokenizer.ggml.tokens");
  EXPECT_EQ(tokens->count, 512u);
  EXPECT_EQ(tokens->element_type, 8);
  EXPECT_TRUE(tokens->integers.empty());  // the vocabulary's strings are skipped, not kept
  ASSERT_EQ(h.tensors.size(), 1u + 8 * 9 + 2);
  const auto* q = h.tensor("blk.0.attn_q.weight");
  ASSERT_NE(q, nullptr);
  EXPECT_EQ(q->dims, (std::vector<std::uint64_t>{256, 256}));
  EXPECT_EQ(q->bytes, 256u * 256 / 256 * 144);
  EXPECT_EQ(h.data_start % 32, 0u);
  // The directory's offsets follow each other, each tensor padded to the alignment; the last ends at the file's end.
  std::uint64_t next = 0;
  for (const auto& t : h.tensors) {
    EXPECT_EQ(t.offset, next) << t.name;
    next += (t.bytes + 31) / 32 * 32;
  }
  EXPECT_EQ(h.data_start + next, bytes.size());
  EXPECT_LE(b.data_bytes(), next);
}

TEST(Gguf, AFileIsReadAsItsBytesAre) {
  test::TempDir dir;
  GgufBuilder b = test::tiny_llama_q4_k_m(2);
  b.alignment = 64;
  b.u32("general.alignment", 64);
  test::write_text(dir / "m.gguf", b.bytes());
  const GgufHeader f = import::read_gguf_file((dir / "m.gguf").string());
  const GgufHeader m = import::read_gguf_bytes(b.bytes(), "m.gguf");
  EXPECT_EQ(f.alignment, 64u);
  EXPECT_EQ(f.data_start, m.data_start);
  EXPECT_EQ(f.data_start % 64, 0u);
  ASSERT_EQ(f.tensors.size(), m.tensors.size());
  for (std::size_t i = 0; i < f.tensors.size(); ++i) EXPECT_EQ(f.tensors[i].offset, m.tensors[i].offset);
}

TEST(Gguf, Version2AndAnyIntegerWidthRead) {
  GgufBuilder b = test::tiny_llama_q4_k_m(2);
  b.version = 2;
  b.u64("llama.embedding_length", 256).i32("llama.block_count", 2);  // the spec says uint64; converters write uint32
  const models::NetworkInfo n = import::gguf_network(import::read_gguf_bytes(b.bytes(), "v2.gguf"), "v2.gguf");
  EXPECT_EQ(n.decoder.hidden, 256);
  EXPECT_EQ(n.decoder.layers, 2);
}

TEST(Gguf, TheNetworkIsTheDecoderTheMetadataDescribes) {
  const GgufBuilder b = test::tiny_llama_q4_k_m();
  const GgufHeader h = import::read_gguf_bytes(b.bytes(), "dir/tiny.gguf");
  const models::NetworkInfo n = import::gguf_network(h, "dir/tiny.gguf");
  EXPECT_EQ(n.family, models::Family::decoder);
  const auto& d = n.decoder;
  EXPECT_EQ(d.layers, 8);
  EXPECT_EQ(d.hidden, 256);
  EXPECT_EQ(d.heads, 4);
  EXPECT_EQ(d.kv_heads, 2);
  EXPECT_EQ(d.head_size(), 64);
  EXPECT_EQ(d.ffn, 512);
  EXPECT_EQ(d.vocab, 512);
  EXPECT_EQ(d.max_positions, 4096);
  EXPECT_EQ(d.seq_len, 4096);
  EXPECT_TRUE(d.swiglu && d.rms_norm && d.rope);
  EXPECT_FALSE(d.tied_embeddings);
  EXPECT_FALSE(d.qkv_bias);
  EXPECT_NE(n.description.find("Tiny Llama (GGUF llama) from tiny.gguf"), std::string::npos) << n.description;
  double elements = 0;
  for (const auto& t : h.tensors) elements += static_cast<double>(t.elements);
  EXPECT_DOUBLE_EQ(n.published_params, elements);
  // The weights as stored: llama.cpp's Q4_K_M rule gives attn_v and ffn_down Q6_K in layers 0, 3, 6 and 7 of 8.
  ASSERT_TRUE(n.stored_weights.has_value());
  const auto& w = *n.stored_weights;
  EXPECT_EQ(w.main_type, "q4_k");
  EXPECT_EQ(w.engine, "llama.cpp");
  EXPECT_EQ(w.summary, "Q4_K 49, F32 17, Q6_K 9 tensors");
  ASSERT_EQ(w.layer_bits.size(), 8u);
  for (int l = 0; l < 8; ++l) {
    const bool more = l == 0 || l == 3 || l == 6 || l == 7;
    EXPECT_DOUBLE_EQ(w.layer_bits[l].at("attn_v"), more ? 6.5625 : 4.5) << l;
    EXPECT_DOUBLE_EQ(w.layer_bits[l].at("ffn_down"), more ? 6.5625 : 4.5) << l;
    EXPECT_DOUBLE_EQ(w.layer_bits[l].at("attn_q"), 4.5) << l;
  }
  EXPECT_DOUBLE_EQ(w.embedding_bits, 4.5);
  EXPECT_DOUBLE_EQ(w.output_bits, 6.5625);
  EXPECT_DOUBLE_EQ(w.small_bits, 32);
  double stored = 0;
  for (const auto& t : h.tensors) stored += static_cast<double>(t.bytes);
  EXPECT_DOUBLE_EQ(w.file_bytes, stored);
}

TEST(Gguf, TiedEmbeddingsBiasesAndHeadWidthComeFromTheFile) {
  GgufBuilder b = test::tiny_llama_q4_k_m(2);
  b.drop_tensor("output.weight");
  b.str("general.architecture", "qwen2");
  for (const char* k : {"context_length", "embedding_length", "block_count", "feed_forward_length", "attention.head_count", "attention.head_count_kv"})
    b.drop(std::string("llama.") + k);
  b.u32("qwen2.context_length", 32768).u32("qwen2.embedding_length", 256).u32("qwen2.block_count", 2).u32("qwen2.feed_forward_length", 512);
  b.u32("qwen2.attention.head_count", 2).u32("qwen2.attention.head_count_kv", 1).u32("qwen2.attention.key_length", 64);
  b.u32("qwen2.attention.value_length", 64);
  // Two heads of 64 at width 256: the Q projection is 128 wide, not 256.
  for (int l = 0; l < 2; ++l) {
    const std::string p = "blk." + std::to_string(l) + ".";
    b.drop_tensor(p + "attn_q.weight");
    b.drop_tensor(p + "attn_k.weight");
    b.drop_tensor(p + "attn_v.weight");
    b.drop_tensor(p + "attn_output.weight");
    b.tensor(p + "attn_q.weight", {256, 128}, "Q8_0").tensor(p + "attn_q.bias", {128}, "F32");
    b.tensor(p + "attn_k.weight", {256, 64}, "Q8_0").tensor(p + "attn_v.weight", {256, 64}, "Q8_0");
    b.tensor(p + "attn_output.weight", {128, 256}, "Q8_0");
  }
  const models::NetworkInfo n = import::gguf_network(import::read_gguf_bytes(b.bytes(), "q.gguf"), "q.gguf");
  EXPECT_TRUE(n.decoder.tied_embeddings);
  EXPECT_TRUE(n.decoder.qkv_bias);
  EXPECT_EQ(n.decoder.head_size(), 64);
  EXPECT_EQ(n.decoder.heads, 2);
  EXPECT_EQ(n.decoder.max_positions, 32768);
  EXPECT_EQ(n.decoder.seq_len, 8192);
  EXPECT_NE(n.description.find("priced at 8192 tokens"), std::string::npos) << n.description;
  EXPECT_DOUBLE_EQ(n.stored_weights->output_bits, n.stored_weights->embedding_bits);
  EXPECT_DOUBLE_EQ(n.stored_weights->layer_bits[1].at("attn_k"), 8.5);
}

GgufBuilder tiny_mixtral() {
  GgufBuilder b = test::tiny_llama_q4_k_m(2);
  b.u32("llama.expert_count", 4).u32("llama.expert_used_count", 2);
  for (int l = 0; l < 2; ++l) {
    const std::string p = "blk." + std::to_string(l) + ".";
    for (const char* role : {"ffn_gate", "ffn_up", "ffn_down"}) b.drop_tensor(p + role + ".weight");
    b.tensor(p + "ffn_gate_inp.weight", {256, 4}, "F32");
    b.tensor(p + "ffn_gate_exps.weight", {256, 512, 4}, "Q4_K").tensor(p + "ffn_up_exps.weight", {256, 512, 4}, "Q4_K");
    b.tensor(p + "ffn_down_exps.weight", {512, 256, 4}, "Q6_K");
  }
  return b;
}

TEST(Gguf, AMixtureOfExpertsReadsItsMergedExpertTensors) {
  const models::NetworkInfo n = import::gguf_network(import::read_gguf_bytes(tiny_mixtral().bytes(), "moe.gguf"), "moe.gguf");
  EXPECT_EQ(n.decoder.experts, 4);
  EXPECT_EQ(n.decoder.experts_per_token, 2);
  EXPECT_DOUBLE_EQ(n.stored_weights->layer_bits[0].at("ffn_down"), 6.5625);
  EXPECT_DOUBLE_EQ(n.stored_weights->layer_bits[0].at("ffn_up"), 4.5);
}

/// The tiny two-block file under another architecture's name: its llama.* hyperparameters renamed `arch`.*.
GgufBuilder renamed(const std::string& arch) {
  GgufBuilder b = test::tiny_llama_q4_k_m(2);
  b.str("general.architecture", arch);
  const std::vector<std::pair<const char*, std::uint32_t>> keys = {{"context_length", 4096}, {"embedding_length", 256}, {"block_count", 2},
                                                                   {"feed_forward_length", 512}, {"attention.head_count", 4},
                                                                   {"attention.head_count_kv", 2}};
  for (const auto& [k, v] : keys) {
    b.drop(std::string("llama.") + k);
    b.u32(arch + "." + k, v);
  }
  return b;
}

// Phi-3 stores Q, K and V in one tensor and the MLP's gate and up in another: each projection is priced at its
// fused tensor's type, and the shapes are held to the metadata's as for separate tensors.
TEST(Gguf, Phi3sFusedTensorsPriceEachProjection) {
  GgufBuilder b = renamed("phi3");
  for (int l = 0; l < 2; ++l) {
    const std::string p = "blk." + std::to_string(l) + ".";
    for (const char* role : {"attn_q", "attn_k", "attn_v", "ffn_gate", "ffn_up"}) b.drop_tensor(p + role + ".weight");
    b.tensor(p + "attn_qkv.weight", {256, 256 + 2 * 128}, "Q8_0").tensor(p + "ffn_up.weight", {256, 2 * 512}, "Q5_K");
  }
  const models::NetworkInfo n = import::gguf_network(import::read_gguf_bytes(b.bytes(), "phi.gguf"), "phi.gguf");
  EXPECT_TRUE(n.decoder.swiglu && !n.decoder.geglu);
  EXPECT_EQ(n.decoder.ffn, 512);
  for (const char* role : {"attn_q", "attn_k", "attn_v"}) EXPECT_DOUBLE_EQ(n.stored_weights->layer_bits[1].at(role), 8.5) << role;
  EXPECT_DOUBLE_EQ(n.stored_weights->layer_bits[1].at("ffn_gate"), 5.5);
  EXPECT_DOUBLE_EQ(n.stored_weights->layer_bits[1].at("ffn_up"), 5.5);
  // Which tensors are fused is the file's: a phi3 file with Q, K and V apart reads as llama's layout, a llama file
  // with them merged as Phi-3's.
  EXPECT_DOUBLE_EQ(import::gguf_network(import::read_gguf_bytes(renamed("phi3").bytes(), "p.gguf"), "p.gguf").stored_weights->layer_bits[1].at("attn_q"), 4.5);
  GgufBuilder merged = test::tiny_llama_q4_k_m(2);
  for (int l = 0; l < 2; ++l) {
    const std::string p = "blk." + std::to_string(l) + ".";
    for (const char* role : {"attn_q", "attn_k", "attn_v"}) merged.drop_tensor(p + role + ".weight");
    merged.tensor(p + "attn_qkv.weight", {256, 512}, "Q8_0");
  }
  EXPECT_DOUBLE_EQ(import::gguf_network(import::read_gguf_bytes(merged.bytes(), "m.gguf"), "m.gguf").stored_weights->layer_bits[0].at("attn_v"), 8.5);
  b.drop_tensor("blk.1.ffn_up.weight");
  b.tensor("blk.1.ffn_up.weight", {256, 512}, "Q5_K");  // an unfused width: not the MLP the metadata makes
  EXPECT_NE(test::input_error_of([&] { (void)import::gguf_network(import::read_gguf_bytes(b.bytes(), "phi.gguf"), "phi.gguf"); })
                .find("blk.1.ffn_up.weight: shaped [256, 512], but the metadata makes it [256, 1024]"),
            std::string::npos);
}

// GPT-2: LayerNorm with a shift, biases on every projection, learned positions, a GELU MLP, Q/K/V fused.
TEST(Gguf, Gpt2IsLayerNormLearnedPositionsAndAnUngatedMlp) {
  GgufBuilder b = renamed("gpt2");
  b.drop("gpt2.attention.head_count_kv");
  for (int l = 0; l < 2; ++l) {
    const std::string p = "blk." + std::to_string(l) + ".";
    for (const char* role : {"attn_q", "attn_k", "attn_v", "ffn_gate"}) b.drop_tensor(p + role + ".weight");
    b.tensor(p + "attn_qkv.weight", {256, 3 * 256}, "F16").tensor(p + "attn_qkv.bias", {3 * 256}, "F32");
  }
  EXPECT_NE(test::input_error_of([&] { (void)import::gguf_network(import::read_gguf_bytes(b.bytes(), "g.gguf"), "g.gguf"); })
                .find("position_embd.weight: the tensor is missing"),
            std::string::npos);
  b.tensor("position_embd.weight", {256, 4096}, "F32");
  const models::NetworkInfo n = import::gguf_network(import::read_gguf_bytes(b.bytes(), "g.gguf"), "g.gguf");
  const auto& d = n.decoder;
  EXPECT_FALSE(d.swiglu || d.rms_norm || d.rope);
  EXPECT_TRUE(d.norm_bias && d.linear_bias && d.learned_positions);
  EXPECT_EQ(d.kv_heads, 4);
  EXPECT_DOUBLE_EQ(n.stored_weights->layer_bits[0].at("attn_v"), 16);
  EXPECT_EQ(n.stored_weights->layer_bits[0].count("ffn_gate"), 0u);
}

// Qwen3-MoE gives its experts their own width (expert_feed_forward_length); Gemma 2 and 3 and Qwen 3 say what
// their files hold that the model does not price.
TEST(Gguf, NewerArchitecturesReadTheirOwnKeysAndSayWhatIsNotPriced) {
  GgufBuilder moe = renamed("qwen3moe");
  moe.u32("qwen3moe.expert_count", 4).u32("qwen3moe.expert_used_count", 2).u32("qwen3moe.expert_feed_forward_length", 128);
  for (int l = 0; l < 2; ++l) {
    const std::string p = "blk." + std::to_string(l) + ".";
    for (const char* role : {"ffn_gate", "ffn_up", "ffn_down"}) moe.drop_tensor(p + role + ".weight");
    moe.tensor(p + "ffn_gate_inp.weight", {256, 4}, "F32");
    moe.tensor(p + "ffn_gate_exps.weight", {256, 128, 4}, "Q4_K").tensor(p + "ffn_up_exps.weight", {256, 128, 4}, "Q4_K");
    moe.tensor(p + "ffn_down_exps.weight", {128, 256, 4}, "Q8_0");  // rows of 128: not whole K-quant blocks
  }
  const models::NetworkInfo m = import::gguf_network(import::read_gguf_bytes(moe.bytes(), "moe.gguf"), "moe.gguf");
  EXPECT_EQ(m.decoder.ffn, 128);
  EXPECT_EQ(m.decoder.experts, 4);
  EXPECT_NE(m.description.find("Q/K norms"), std::string::npos) << m.description;
  for (const char* arch : {"gemma2", "gemma3"}) {
    const models::NetworkInfo g = import::gguf_network(import::read_gguf_bytes(renamed(arch).bytes(), "g.gguf"), "g.gguf");
    EXPECT_TRUE(g.decoder.geglu) << arch;
    EXPECT_NE(g.description.find("sliding-window attention"), std::string::npos) << g.description;
  }
  EXPECT_TRUE(import::gguf_network(import::read_gguf_bytes(renamed("qwen3").bytes(), "q.gguf"), "q.gguf").decoder.swiglu);
}

/// `edit` applied to the tiny file, then read and built: the InputError line, or "" when accepted.
std::string refusal(const std::function<void(GgufBuilder&)>& edit, const std::function<void(std::string&)>& bytes_edit = {}) {
  GgufBuilder b = test::tiny_llama_q4_k_m(2);
  edit(b);
  std::string bytes = b.bytes();
  if (bytes_edit) bytes_edit(bytes);
  return test::input_error_of([&] { (void)import::gguf_network(import::read_gguf_bytes(bytes, "bad.gguf"), "bad.gguf"); });
}

void patch_u32(std::string& bytes, std::size_t at, std::uint32_t v) { std::memcpy(bytes.data() + at, &v, 4); }
void patch_u64(std::string& bytes, std::size_t at, std::uint64_t v) { std::memcpy(bytes.data() + at, &v, 8); }

TEST(Gguf, RefusesWhatTheFormatDoesNotAllow) {
  const auto none = [](GgufBuilder&) {};
  const std::vector<std::pair<std::string, std::string>> cases = {
      {refusal(none, [](std::string& s) { s[3] = 'X'; }), "bad.gguf: not a GGUF file: it starts with 'GGUX'"},
      {refusal(none, [](std::string& s) { patch_u32(s, 4, 1); }), "GGUF version 1 (2023) is not read"},
      {refusal(none, [](std::string& s) { patch_u32(s, 4, 0x03000000); }), "big-endian"},
      {refusal(none, [](std::string& s) { patch_u32(s, 4, 4); }), "GGUF version 4 is newer than gpuvs reads"},
      {refusal(none, [](std::string& s) { s.resize(s.size() - 1000); }), "past the end of the file"},
      {refusal(none, [](std::string& s) { s.resize(300); }), "the file ends inside"},
      {refusal(none, [](std::string& s) { patch_u64(s, 8, std::uint64_t{1} << 40); }), "the tensor count 1099511627776 is more than"},
      {refusal(none, [](std::string& s) { patch_u64(s, 16, std::uint64_t{1} << 62); }), "the metadata count"},
      {refusal(none, [](std::string& s) { patch_u64(s, 8, std::uint64_t{1} << 63); }), "the tensor count is negative"},
      {refusal([](GgufBuilder& b) { b.append_raw([] { std::string o; GgufBuilder::put_string(o, "general.name"); GgufBuilder::put<std::int32_t>(o, 8); GgufBuilder::put_string(o, "again"); return o; }()); }),
       "metadata key 'general.name' is listed twice"},
      {refusal([](GgufBuilder& b) { b.raw("x.nested", 9, [](std::string& o) { GgufBuilder::put<std::int32_t>(o, 9); GgufBuilder::put<std::uint64_t>(o, 0); }); }),
       "'x.nested' is an array of arrays"},
      {refusal([](GgufBuilder& b) { b.raw("x.big", 9, [](std::string& o) { GgufBuilder::put<std::int32_t>(o, 10); GgufBuilder::put<std::uint64_t>(o, std::uint64_t{1} << 60); }); }),
       "'x.big' claims 1152921504606846976 uint64 elements"},
      {refusal([](GgufBuilder& b) { b.raw("x.type", 13, [](std::string&) {}); }), "metadata key 'x.type' has type 13, not a GGUF type"},
      {refusal([](GgufBuilder& b) { b.boolean("x.flag", 2); }), "'x.flag' is a bool of 2"},
      {refusal([](GgufBuilder& b) { b.raw("", 4, [](std::string& o) { GgufBuilder::put<std::uint32_t>(o, 1); }); }), "is empty"},
      {refusal([](GgufBuilder& b) { b.u32("general.alignment", 48); }), "general.alignment 48 is not a power of two"},
      {refusal([](GgufBuilder& b) { b.u64("general.alignment", 32); }), "general.alignment is a uint64, not a uint32"},
      {refusal([](GgufBuilder& b) { b.tensor(std::string(64, 'n'), {32}, "F32"); }), "is 64 bytes long, more than 63"},
      {refusal([](GgufBuilder& b) { b.tensor("x.weight", {1, 1, 1, 1, 1}, "F32"); }), "'x.weight' has 5 dimensions, more than ggml's 4"},
      {refusal([](GgufBuilder& b) { b.tensor("x.weight", {128, 2}, "Q4_K"); }), "a row of 128 elements is not a whole number of Q4_K blocks"},
      {refusal([](GgufBuilder& b) { b.tensor("token_embd.weight", {256, 512}, "F32"); }), "'token_embd.weight' is listed twice"},
      {refusal([](GgufBuilder& b) { b.second_offset_skew = 32; }), "has offset"},
      {refusal(none, [](std::string& s) {
         // The first tensor's type field: after the metadata, its name, its dimension count and its two dimensions.
         const auto at = s.find("token_embd.weight") + std::string("token_embd.weight").size() + 4 + 16;
         patch_u32(s, at, 4);
       }),
       "has type 4, not a ggml type gpuvs knows"},
  };
  for (const auto& [error, expect] : cases) {
    EXPECT_NE(error.find(expect), std::string::npos) << (error.empty() ? "accepted" : error) << "\n(expected: " << expect << ")";
    EXPECT_EQ(error.find('\n'), std::string::npos) << error;
    if (!error.empty()) {
      EXPECT_EQ(error.rfind("bad.gguf: ", 0), 0u) << error;
    }
  }
}

TEST(Gguf, RefusesModelsItCannotBuild) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {refusal([](GgufBuilder& b) { b.str("general.architecture", "deepseek2"); }),
       "general.architecture: 'deepseek2' is not read (read: llama, qwen2, qwen3, qwen3moe, gemma, gemma2, gemma3, phi3, gpt2)"},
      {refusal([](GgufBuilder& b) { b.str("general.architecture", "phi3"); }), "phi3.embedding_length: missing"},
      {refusal([](GgufBuilder& b) { b.drop("general.architecture"); }), "general.architecture: missing"},
      {refusal([](GgufBuilder& b) { b.drop("llama.block_count"); }), "llama.block_count: missing"},
      {refusal([](GgufBuilder& b) { b.str("llama.block_count", "two"); }), "llama.block_count: must be an integer"},
      {refusal([](GgufBuilder& b) { b.u32("llama.block_count", 5000); }), "llama.block_count: 5000 is outside [1, 4096]"},
      {refusal([](GgufBuilder& b) { b.u32_array("llama.attention.head_count", {4, 8}); }), "llama.attention.head_count: differs between layers (4 and 8)"},
      {refusal([](GgufBuilder& b) { b.u32("llama.attention.head_count_kv", 3); }), "3 does not divide the 4 attention heads"},
      {refusal([](GgufBuilder& b) { b.u32("llama.attention.head_count", 8); }), "blk.0.attn_k.weight: shaped [256, 128], but the metadata makes it [256, 64]"},
      {refusal([](GgufBuilder& b) { b.u32("llama.attention.head_count_kv", 4); }), "blk.0.attn_k.weight: shaped [256, 128], but the metadata makes it [256, 256]"},
      {refusal([](GgufBuilder& b) { b.drop_tensor("blk.1.ffn_up.weight"); }), "blk.1.ffn_up.weight: the tensor is missing"},
      {refusal([](GgufBuilder& b) { b.u32("llama.attention.value_length", 32); }), "differs from the key length"},
      {refusal([](GgufBuilder& b) { b.u32("llama.expert_count", 4).u32("llama.expert_used_count", 2).tensor("blk.0.ffn_gate.0.weight", {256, 512}, "Q4_K"); }),
       "blk.0.ffn_gate_exps.weight: missing: this file stores each expert in a tensor of its own"},
      {refusal([](GgufBuilder& b) { b.u32("llama.expert_used_count", 2); }), "llama.expert_used_count: set without expert_count"},
      {refusal([](GgufBuilder& b) { b.u32_array("llama.attention.head_count", {4, 4, 4}); }), "llama.attention.head_count: lists 3 values for 2 blocks"},
      {refusal([](GgufBuilder& b) { b.tensor("blk.2.attn_norm.weight", {256}, "F32"); }), "blk.2.attn_norm.weight: not a block of the 2 the metadata's block_count makes"},
      {refusal([](GgufBuilder& b) { b.tensor("blk.x.attn_norm.weight", {256}, "F32"); }), "blk.x.attn_norm.weight: not a block of the 2"},
  };
  for (const auto& [error, expect] : cases) {
    EXPECT_NE(error.find(expect), std::string::npos) << (error.empty() ? "accepted" : error) << "\n(expected: " << expect << ")";
    EXPECT_EQ(error.find('\n'), std::string::npos) << error;
  }
}

// Random edits of the header's bytes (where every length, count, type and offset lives): each file is read and
// built, or refused with one line naming it; nothing crashes, hangs or allocates what the file cannot hold.
TEST(Gguf, EditedBytesReadOrFailCleanly) {
  const std::string base = test::tiny_llama_q4_k_m(2).bytes();
  const std::size_t header = import::read_gguf_bytes(base, "x").data_start;
  std::mt19937_64 rng(36);
  int built = 0;
  for (int round = 0; round < 3000; ++round) {
    std::string s = base;
    for (int e = 0, n = 1 + static_cast<int>(rng() % 4); e < n; ++e) {
      const std::size_t at = rng() % header;
      switch (rng() % 4) {
        case 0: s[at] = static_cast<char>(rng()); break;
        case 1: s[at] = static_cast<char>(s[at] ^ (1 << (rng() % 8))); break;
        case 2: s.erase(at, 1 + rng() % 8); break;
        default: s[at] = static_cast<char>(0xff); break;
      }
    }
    try {
      (void)import::gguf_network(import::read_gguf_bytes(s, "fuzz.gguf"), "fuzz.gguf");
      ++built;
    } catch (const InputError& e) {
      const std::string m = e.what();
      EXPECT_EQ(m.rfind("fuzz.gguf", 0), 0u) << m;
      EXPECT_EQ(m.find('\n'), std::string::npos) << m;
    }
  }
  EXPECT_GT(built, 0);  // edits of names and unused values still read
}

TEST(Gguf, WhatRealFilesHaveIsAccepted) {
  // llama.cpp accepts expert_used_count 0 without experts; per-layer arrays of one value per block read.
  GgufBuilder b = test::tiny_llama_q4_k_m(2);
  b.u32("llama.expert_count", 0).u32("llama.expert_used_count", 0).u32_array("llama.attention.head_count_kv", {2, 2});
  EXPECT_EQ(import::gguf_network(import::read_gguf_bytes(b.bytes(), "ok.gguf"), "ok.gguf").decoder.kv_heads, 2);
}

// Counts a crafted header could claim are held far below what its bytes allow, and the directory is looked up by
// name, not scanned: 200,000 tensors read (a quadratic check took minutes), 70,000 keys are refused.
TEST(Gguf, HugeDirectoriesReadInLinearTimeAndCountsAreCapped) {
  GgufBuilder many;
  many.str("general.architecture", "llama");
  for (int i = 0; i < 200000; ++i) many.tensor(std::string("t").append(std::to_string(i)), {0}, "F32");
  const GgufHeader h = import::read_gguf_bytes(many.bytes(), "many.gguf");
  EXPECT_EQ(h.tensors.size(), 200000u);
  EXPECT_EQ(h.tensor("t199999")->name, "t199999");
  EXPECT_NE(test::input_error_of([&] { (void)import::gguf_network(h, "many.gguf"); }).find("llama.embedding_length: missing"), std::string::npos);
  GgufBuilder keys = test::tiny_llama_q4_k_m(2);
  for (int i = 0; i < 70000; ++i) keys.u32(std::string("k").append(std::to_string(i)), 1);
  const std::string e = test::input_error_of([&] { (void)import::read_gguf_bytes(keys.bytes(), "keys.gguf"); });
  EXPECT_NE(e.find("keys.gguf: the metadata count 700"), std::string::npos) << e;
  EXPECT_NE(e.find("is more than 65536, far past any model's"), std::string::npos) << e;
}

TEST(Gguf, HeldBytesAreTheFile) {
  test::TempDir dir;
  const std::string bytes = test::tiny_llama_q4_k_m(2).bytes();
  test::write_text(dir / "m.gguf", bytes);
  const models::NetworkInfo from_file = import::network_from_file((dir / "m.gguf").string());
  const import::HeldModel held("memory:m.gguf", bytes);
  const models::NetworkInfo from_memory = import::network_from_file("memory:m.gguf");
  EXPECT_EQ(from_memory.decoder.layers, from_file.decoder.layers);
  EXPECT_EQ(from_memory.stored_weights->summary, from_file.stored_weights->summary);
  EXPECT_DOUBLE_EQ(from_memory.stored_weights->file_bytes, from_file.stored_weights->file_bytes);
  EXPECT_TRUE(import::is_model_file("x/Model-Q4_K_M.GGUF"));
}

TEST(Gguf, SpecialFilesAreRefusedWithoutReading) {
  test::TempDir dir;
  const auto fifo = dir / "pipe.gguf";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const std::string e = test::input_error_of([&] { (void)import::read_gguf_file(fifo.string()); });
  EXPECT_NE(e.find("FIFO"), std::string::npos) << e;
  const std::string d = test::input_error_of([&] { (void)import::read_gguf_file(dir.path().string()); });
  EXPECT_NE(d.find("directory"), std::string::npos) << d;
  const std::string missing = test::input_error_of([&] { (void)import::read_gguf_file((dir / "none.gguf").string()); });
  EXPECT_NE(missing.find("none.gguf"), std::string::npos) << missing;
}

}  // namespace
}  // namespace gpuvs

namespace gpuvs {
namespace {

// The fuzzer's seeds (fuzz/corpus/gguf, written with gguf_builder.hpp's micro_llama) are files the reader takes:
// mutations start from the inside of the format, not from its first refusal.
TEST(Gguf, TheFuzzSeedsAreModelsTheReaderBuilds) {
  int seeds = 0;
  for (const auto& e : std::filesystem::directory_iterator(std::filesystem::path(GPUVS_SOURCE_DIR) / "fuzz/corpus/gguf")) {
    const models::NetworkInfo n = import::network_from_file(e.path().string());
    EXPECT_EQ(n.family, models::Family::decoder) << e.path();
    ++seeds;
  }
  EXPECT_GE(seeds, 3);
}

}  // namespace
}  // namespace gpuvs
