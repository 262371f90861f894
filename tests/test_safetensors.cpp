// SPDX-License-Identifier: Apache-2.0
// safetensors headers and sharded indexes (import/safetensors), and Hugging Face checkpoints as workloads: a
// folder, a weights file, a hub id found in the local cache (import/hf/hf_checkpoint). Fixtures are written by
// tests/safetensors_builder.hpp as the format lays them out.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <random>

#include "import/hf/hf_checkpoint.hpp"
#include "import/model_files.hpp"
#include "import/safetensors/safetensors_file.hpp"
#include "safetensors_builder.hpp"
#include "test_util.hpp"
#include "workload/resolve.hpp"

namespace gpuvs {
namespace {

using test::StTensor;

import::SafetensorsHeader read(const std::string& bytes, const std::string& where = "bad.safetensors") {
  return import::read_safetensors_bytes(bytes, bytes.size(), where);
}

TEST(Safetensors, ReadsTheHeaderAsTheFormatLaysItOut) {
  const std::string bytes = test::st_file({{"b.weight", "BF16", {4, 8}}, {"a.bias", "F32", {8}}, {"scale", "F8_E4M3", {}}, {"empty", "F16", {0, 3}}},
                                          {{"format", "pt"}});
  const auto h = read(bytes, "m.safetensors");
  ASSERT_EQ(h.tensors.size(), 4u);
  EXPECT_EQ(h.tensors[0].name, "b.weight");  // in buffer order, not the header's (alphabetical) order
  EXPECT_EQ(h.tensors[0].dtype, "BF16");
  EXPECT_EQ(h.tensors[0].shape, (std::vector<std::uint64_t>{4, 8}));
  EXPECT_EQ(h.tensors[0].end, 64u);
  EXPECT_EQ(h.tensors[1].elements, 8u);
  EXPECT_EQ(h.tensors[2].elements, 1u);  // a scalar: shape []
  EXPECT_EQ(h.tensors[3].elements, 0u);  // an empty tensor takes no bytes
  EXPECT_EQ(h.tensor_bytes, 64u + 32 + 1);
  EXPECT_EQ(h.parameters(), 32u + 8 + 1);
  EXPECT_EQ(h.metadata.at("format"), "pt");
  EXPECT_EQ(h.elements_by_dtype().at("BF16"), 32u);
  EXPECT_EQ(import::safetensors_dtype_bits("F4"), 4);
  EXPECT_EQ(import::safetensors_dtype_bits("Q4_K"), 0);
  test::TempDir dir;
  test::write_text(dir / "m.safetensors", bytes);
  const auto f = import::read_safetensors_file((dir / "m.safetensors").string());
  EXPECT_EQ(f.tensors.size(), h.tensors.size());
  EXPECT_EQ(f.tensor_bytes, h.tensor_bytes);
}

std::string header_file(const std::string& header_text, std::uint64_t buffer) { return test::st_file(header_text, buffer); }

TEST(Safetensors, RefusesWhatTheFormatDoesNotAllow) {
  const std::string good = test::st_file({{"w", "F32", {2, 2}}});
  std::string huge(8, '\0');
  const std::uint64_t n = 200000000;
  std::memcpy(huge.data(), &n, 8);
  std::string runs_past = good.substr(0, 20);
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"abc", "bad.safetensors: 3 bytes, shorter than the 8-byte header length"},
      {huge, "a header of 200000000 bytes, more than the 100000000 the format allows"},
      {runs_past, "the file ends inside its"},
      {header_file("[1, 2]", 0), "the header must begin with '{'"},
      {header_file("{\"w\": ", 0), "malformed JSON"},
      {header_file(R"({"w": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}, "w": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]}})", 8),
       "key 'w' appears twice"},
      {header_file(R"({"w": {"dtype": "Q4_K", "shape": [1], "data_offsets": [0, 4]}})", 4), "dtype 'Q4_K' is not one gpuvs knows"},
      {header_file(R"({"w": {"dtype": "F32", "shape": [-1], "data_offsets": [0, 4]}})", 4), "must be a whole number of at least 0"},
      {header_file(R"({"w": {"dtype": "F32", "shape": [1.5], "data_offsets": [0, 4]}})", 4), "must be a whole number of at least 0"},
      {header_file(R"({"w": {"dtype": "F32", "shape": [1], "data_offsets": [0]}})", 4), "data_offsets must be [BEGIN, END]"},
      {header_file(R"({"w": {"dtype": "F32", "shape": [1], "data_offsets": [4, 0]}})", 4), "end 0 before they begin (4)"},
      {header_file(R"({"w": {"dtype": "F32", "shape": [2], "data_offsets": [0, 4]}})", 4), "data_offsets hold 4 bytes, its shape and dtype 8"},
      {header_file(R"({"w": {"dtype": "F4", "shape": [3], "data_offsets": [0, 2]}})", 2), "3 elements of F4 are not a whole number of bytes"},
      {header_file(R"({"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}, "b": {"dtype": "F32", "shape": [1], "data_offsets": [8, 12]}})", 12),
       "tensor 'b' begins at byte 8 of the buffer, not at 4"},
      {header_file(R"({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}, "b": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]}})", 8),
       "begins at byte 4 of the buffer, not at 8"},
      {header_file(R"({"w": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4], "strides": [1]}})", 4), "unknown key 'strides'"},
      {header_file(R"({"w": {"dtype": "F32", "shape": [1,1,1,1,1,1,1,1,1], "data_offsets": [0, 4]}})", 4), "9 dimensions, more than 8"},
      {header_file(R"({"w": {"dtype": "F32", "shape": [4294967296, 4294967296], "data_offsets": [0, 4]}})", 4), "more elements than 64 bits count"},
      {header_file(R"({"__metadata__": {"n": 1}})", 0), "__metadata__.n: values must be strings"},
      {good.substr(0, good.size() - 4), "the tensors index 16 bytes after the header, the file holds 12: a partial download"},
      {good + "xx", "the tensors index 16 bytes after the header, the file holds 18"},
  };
  test::expect_refused(cases, [](const std::string& bytes) { (void)read(bytes); });
}

TEST(Safetensors, EditedHeadersReadOrFailCleanly) {
  const std::string base = test::st_file(test::hf_llama_tensors(1, 16, 8, 32, 16));
  std::uint64_t n = 0;
  std::memcpy(&n, base.data(), 8);
  std::mt19937_64 rng(36);
  int read_ok = 0;
  for (int round = 0; round < 3000; ++round) {
    std::string s = base;
    for (int e = 0, k = 1 + static_cast<int>(rng() % 3); e < k; ++e) {
      const std::size_t at = rng() % (8 + n);
      const char alphabet[] = "{}[],:\"0123456789-.eE FBI8_";
      s[at] = rng() % 4 == 0 ? static_cast<char>(rng()) : alphabet[rng() % (sizeof(alphabet) - 1)];
    }
    try {
      (void)read(s, "fuzz.safetensors");
      ++read_ok;
    } catch (const InputError& e) {
      const std::string m = e.what();
      EXPECT_EQ(m.rfind("fuzz.safetensors", 0), 0u) << m;
      EXPECT_EQ(m.find('\n'), std::string::npos) << m;
    }
  }
  EXPECT_GT(read_ok, 0);
}

/// A sharded checkpoint: the first two layers' tensors in one shard, the rest in another.
struct Sharded {
  test::TempDir dir;
  std::string index = (dir / "model.safetensors.index.json").string();
  Sharded() {
    const auto tensors = test::hf_llama_tensors(2, 64, 32, 128, 100);
    const std::vector<StTensor> a(tensors.begin(), tensors.begin() + 10), b(tensors.begin() + 10, tensors.end());
    test::write_text(dir / "model-00001-of-00002.safetensors", test::st_file(a));
    test::write_text(dir / "model-00002-of-00002.safetensors", test::st_file(b));
    nlohmann::json map = nlohmann::json::object();
    for (const auto& t : a) map[t.name] = "model-00001-of-00002.safetensors";
    for (const auto& t : b) map[t.name] = "model-00002-of-00002.safetensors";
    write(map);
  }
  void write(const nlohmann::json& map) const {
    test::write_text(index, nlohmann::json{{"metadata", {{"total_size", 0}}}, {"weight_map", map}}.dump(1));
  }
};

TEST(Safetensors, AShardedIndexReadsEveryShardItNames) {
  Sharded s;
  const auto h = import::read_safetensors_index(s.index);
  EXPECT_EQ(h.files.size(), 2u);
  EXPECT_EQ(h.tensors.size(), 2u * 9 + 3);
  EXPECT_EQ(h.parameters(), 2u * 100 * 64 + 64 + 2 * (2 * 64 + 2 * 64 * 64 + 2 * 32 * 64 + 3 * 128 * 64));
  const auto refused = [&](const nlohmann::json& map) {
    s.write(map);
    return test::input_error_of([&] { (void)import::read_safetensors_index(s.index); });
  };
  nlohmann::json map = nlohmann::json::parse(test::slurp(s.index))["weight_map"];
  nlohmann::json moved = map;
  moved["lm_head.weight"] = "model-00001-of-00002.safetensors";
  EXPECT_NE(refused(moved).find("weight_map puts 'lm_head.weight' in model-00001-of-00002.safetensors, which does not hold it"), std::string::npos);
  nlohmann::json unnamed = map;
  unnamed.erase("lm_head.weight");
  EXPECT_NE(refused(unnamed).find("model-00002-of-00002.safetensors holds tensor 'lm_head.weight', which weight_map does not name"), std::string::npos);
  nlohmann::json extra = map;
  extra["ghost.weight"] = "model-00001-of-00002.safetensors";
  EXPECT_NE(refused(extra).find("weight_map puts 'ghost.weight' in model-00001-of-00002.safetensors, which does not hold it"), std::string::npos);
  nlohmann::json escape = map;
  escape["lm_head.weight"] = "../elsewhere.safetensors";
  EXPECT_NE(refused(escape).find("'../elsewhere.safetensors' is not a file name in the index's folder"), std::string::npos);
  nlohmann::json missing = map;
  missing["lm_head.weight"] = "model-00003-of-00002.safetensors";
  EXPECT_NE(refused(missing).find("model-00003-of-00002.safetensors: no such file"), std::string::npos);
  EXPECT_NE(refused(nlohmann::json::object()).find("weight_map names no tensors"), std::string::npos);
  nlohmann::json control = map;
  control["lm_head.weight"] = "a\nb.safetensors";
  const std::string e = refused(control);
  EXPECT_NE(e.find("'a\\x0ab.safetensors' is not a file name in the index's folder"), std::string::npos) << e;
  EXPECT_EQ(e.find('\n'), std::string::npos) << e;
  EXPECT_NE(refused(nlohmann::json::array()).find("needs a weight_map object"), std::string::npos);
}

const char* kTinyLlamaConfig = R"({"architectures": ["LlamaForCausalLM"], "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
  "num_key_value_heads": 2, "intermediate_size": 128, "vocab_size": 100, "max_position_embeddings": 2048, "tie_word_embeddings": false})";

TEST(HfCheckpoint, AFolderIsItsConfigAndItsWeights) {
  Sharded s;
  test::write_text(s.dir / "config.json", kTinyLlamaConfig);
  const std::string folder = s.dir.path().string();
  ASSERT_TRUE(import::is_checkpoint(folder));
  const models::NetworkInfo n = workload::resolve_network(folder);
  EXPECT_EQ(n.id, folder);
  EXPECT_EQ(n.decoder.layers, 2);
  EXPECT_DOUBLE_EQ(n.published_params, static_cast<double>(import::read_safetensors_index(s.index).parameters()));
  EXPECT_EQ(n.params_source, "the checkpoint's tensors");
  EXPECT_NE(n.description.find("weights: 86848 parameters in 21 tensors, 2 files (BF16 86848)"), std::string::npos) << n.description;
  EXPECT_EQ(n.description.find("the config's shape makes"), std::string::npos) << n.description;  // the shape built is the tensors'
  // The index or a single weights file names the same checkpoint.
  EXPECT_DOUBLE_EQ(workload::resolve_network(s.index).published_params, n.published_params);
  test::TempDir one;
  test::write_text(one / "config.json", kTinyLlamaConfig);
  test::write_text(one / "model.safetensors", test::st_file(test::hf_llama_tensors(2, 64, 32, 128, 100, "F32")));
  const models::NetworkInfo single = workload::resolve_network((one / "model.safetensors").string());
  EXPECT_DOUBLE_EQ(single.published_params, n.published_params);
  EXPECT_NE(single.description.find("F32 86848"), std::string::npos) << single.description;
  // Weights without their config, and a config whose shape the tensors contradict, are said.
  std::filesystem::remove(one / "config.json");
  EXPECT_NE(test::input_error_of([&] { (void)workload::resolve_network((one / "model.safetensors").string()); })
                .find("no config.json beside the weights: gpuvs reads the model's shape from it"),
            std::string::npos);
  test::write_text(one / "config.json", test::replaced(kTinyLlamaConfig, "\"num_hidden_layers\": 2", "\"num_hidden_layers\": 4"));
  EXPECT_NE(workload::resolve_network(one.path().string()).description.find("the config's shape makes"), std::string::npos);
  EXPECT_NE(test::input_error_of([&] { (void)workload::resolve_network(one.path().string(), {{"layers", "2"}}); }).find("has its own shape"),
            std::string::npos);
}

/// A hub cache as huggingface_hub lays it out: models--ORG--NAME/{refs/main, snapshots/COMMIT/config.json -> blobs}.
struct HubCache {
  test::TempDir root;
  std::string commit = "0123456789abcdef0123456789abcdef01234567";
  std::string old_cache;
  HubCache() {
    const auto repo = root / "hub" / "models--acme--tiny-llama";
    std::filesystem::create_directories(repo / "refs");
    std::filesystem::create_directories(repo / "blobs");
    std::filesystem::create_directories(repo / "snapshots" / commit);
    test::write_text(repo / "refs" / "main", commit);  // written without a newline, as huggingface_hub does
    test::write_text(repo / "blobs" / "c0ffee", kTinyLlamaConfig);
    std::filesystem::create_symlink("../../blobs/c0ffee", repo / "snapshots" / commit / "config.json");
    test::write_text(repo / "blobs" / "beef", test::st_file(test::hf_llama_tensors(2, 64, 32, 128, 100)));
    std::filesystem::create_symlink("../../blobs/beef", repo / "snapshots" / commit / "model.safetensors");
    if (const char* v = std::getenv("HF_HUB_CACHE")) old_cache = v;
    ::setenv("HF_HUB_CACHE", (root / "hub").c_str(), 1);
  }
  ~HubCache() {
    if (old_cache.empty()) ::unsetenv("HF_HUB_CACHE");
    else ::setenv("HF_HUB_CACHE", old_cache.c_str(), 1);
  }
};

TEST(HfCheckpoint, AHubIdIsReadFromTheLocalCacheNeverDownloaded) {
  HubCache cache;
  ASSERT_TRUE(import::is_checkpoint("acme/tiny-llama"));
  const models::NetworkInfo n = workload::resolve_network("acme/tiny-llama");
  EXPECT_EQ(n.id, "acme/tiny-llama");
  EXPECT_EQ(n.decoder.hidden, 64);
  EXPECT_NE(n.description.find("weights: 86848 parameters in 21 tensors, 1 file (BF16"), std::string::npos) << n.description;
  EXPECT_EQ(workload::resolve_network("acme/tiny-llama@" + cache.commit).decoder.hidden, 64);
  const std::vector<std::pair<std::string, std::string>> refusals = {
      {"acme/other-model", "acme/other-model is not in the Hugging Face cache (" + (cache.root / "hub").string() + "), nor a file or folder here"},
      {"acme/tiny-llama@v2", "acme/tiny-llama: the cache (" + (cache.root / "hub" / "models--acme--tiny-llama").string() + ") has no refs/v2"},
      {"acme/tiny-llama@ffffffffffffffffffffffffffffffffffffffff", "holds no snapshot of that commit"},
      {"acme/tiny-llama@../../x", "revision '../../x' is not a branch, tag or commit name"},
  };
  for (const auto& c : refusals) {
    const std::string& id = c.first;  // not a structured binding: clang 14 cannot capture one in a lambda
    const std::string& expect = c.second;
    const std::string e = test::input_error_of([&] { (void)workload::resolve_network(id); });
    EXPECT_NE(e.find(expect), std::string::npos) << e << "\n(expected: " << expect << ")";
  }
  std::filesystem::remove(cache.root / "hub" / "models--acme--tiny-llama" / "snapshots" / cache.commit / "config.json");
  EXPECT_NE(test::input_error_of([&] { (void)workload::resolve_network("acme/tiny-llama"); }).find("the cached snapshot has no config.json"),
            std::string::npos);
  test::write_text(cache.root / "hub" / "models--acme--tiny-llama" / "refs" / "main", "not a commit\n");
  EXPECT_NE(test::input_error_of([&] { (void)workload::resolve_network("acme/tiny-llama"); }).find("holds 'not a commit', not a commit hash"),
            std::string::npos);
  // Built-in ids and model files are not hub ids; an existing path is never looked up in the cache; a name far
  // past any hub id is none (and never reaches the pattern matcher).
  EXPECT_FALSE(import::is_checkpoint("llama3-8b"));
  EXPECT_FALSE(import::is_checkpoint("a/b/c"));
  EXPECT_FALSE(import::is_checkpoint(std::string(100000, 'a') + "/b"));
  EXPECT_NE(test::input_error_of([] { (void)workload::resolve_network(std::string(100000, 'a') + "/b"); }).find("unknown"), std::string::npos);
}

TEST(HfCheckpoint, TheCacheIsWhereHuggingfaceHubPutsIt) {
  const auto saved = [](const char* name) { const char* v = std::getenv(name); return v ? std::optional<std::string>(v) : std::nullopt; };
  const char* names[] = {"HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE", "HF_HOME", "XDG_CACHE_HOME", "HOME"};
  std::vector<std::optional<std::string>> old;
  for (const char* n : names) old.push_back(saved(n));
  for (const char* n : names) ::unsetenv(n);
  ::setenv("HOME", "/home/u", 1);
  EXPECT_EQ(import::hf_hub_cache(), "/home/u/.cache/huggingface/hub");
  ::setenv("XDG_CACHE_HOME", "/x", 1);
  EXPECT_EQ(import::hf_hub_cache(), "/x/huggingface/hub");
  ::setenv("HF_HOME", "~/hf", 1);
  EXPECT_EQ(import::hf_hub_cache(), "/home/u/hf/hub");
  ::setenv("HUGGINGFACE_HUB_CACHE", "/legacy", 1);
  EXPECT_EQ(import::hf_hub_cache(), "/legacy");
  ::setenv("HF_HUB_CACHE", "/hub", 1);
  EXPECT_EQ(import::hf_hub_cache(), "/hub");
  for (std::size_t i = 0; i < old.size(); ++i) {
    if (old[i]) ::setenv(names[i], old[i]->c_str(), 1);
    else ::unsetenv(names[i]);
  }
}

}  // namespace
}  // namespace gpuvs

namespace gpuvs {
namespace {

TEST(Safetensors, AnEmptyTensorMaySitWhereAnotherBegins) {
  // Header order is alphabetical; "z" (no bytes) and "a" both begin at byte 0.
  const std::string bytes = header_file(R"({"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}, "z": {"dtype": "F32", "shape": [0], "data_offsets": [0, 0]}})", 4);
  EXPECT_EQ(read(bytes).tensors.size(), 2u);
}

TEST(Safetensors, TheFuzzSeedsAreFilesTheReaderTakes) {
  int seeds = 0;
  for (const auto& e : std::filesystem::directory_iterator(std::filesystem::path(GPUVS_SOURCE_DIR) / "fuzz/corpus/safetensors")) {
    EXPECT_FALSE(import::read_safetensors_file(e.path().string()).tensors.empty()) << e.path();
    ++seeds;
  }
  EXPECT_GE(seeds, 2);
}

}  // namespace
}  // namespace gpuvs

namespace gpuvs {
namespace {

// A folder in the working directory named like a built-in workload does not hide it; one named as a path, or
// holding a config, is a checkpoint. A cache holding the config and the index but not the shards prices the config.
TEST(HfCheckpoint, FoldersAreCheckpointsWhenTheyAreOnesAndShardsMayBeAbsent) {
  test::TempDir dir;
  const auto cwd = std::filesystem::current_path();
  std::filesystem::current_path(dir.path());
  std::filesystem::create_directories("resnet50");
  const bool hides = import::is_checkpoint("resnet50");
  const models::NetworkInfo builtin = workload::resolve_network("resnet50");
  std::filesystem::current_path(cwd);
  EXPECT_FALSE(hides);
  EXPECT_EQ(builtin.family, models::Family::cnn);
  EXPECT_TRUE(import::is_checkpoint((dir / "resnet50").string()));
  EXPECT_NE(test::input_error_of([&] { (void)workload::resolve_network((dir / "resnet50").string()); }).find("no config.json in the folder"),
            std::string::npos);
  Sharded s;
  test::write_text(s.dir / "config.json", kTinyLlamaConfig);
  std::filesystem::remove(s.dir / "model-00002-of-00002.safetensors");
  const models::NetworkInfo n = workload::resolve_network(s.dir.path().string());
  EXPECT_NE(n.description.find("its weights are not all here (model-00002-of-00002.safetensors is missing): the shape from config.json alone"),
            std::string::npos)
      << n.description;
}

}  // namespace
}  // namespace gpuvs
