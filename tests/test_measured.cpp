// SPDX-License-Identifier: Apache-2.0
// The readers of measurements people already have (src/measured), on the tools' own documented outputs
// (tests/data/llama-bench/SOURCES.md).
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "measured/llama_bench.hpp"
#include "test_util.hpp"

using namespace gpuvs;
using measured::Measurement;
using measured::read_llama_bench;

namespace {

// A fixture under tests/data/DIR.
std::string data_file(const std::string& dir, const std::string& name) {
  std::ifstream in(std::string(GPUVS_TEST_DATA) + "/" + dir + "/" + name, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  EXPECT_FALSE(ss.str().empty()) << dir << "/" << name;
  return ss.str();
}

std::string fixture(const std::string& name) { return data_file("llama-bench", name); }

std::vector<Measurement> read_fixture(const std::string& name) { return read_llama_bench(fixture(name), name); }

}  // namespace

TEST(LlamaBench, ReadsTheMarkdownTableItPrintsByDefault) {
  const auto rows = read_fixture("readme-md.md");
  ASSERT_EQ(rows.size(), 2u);
  const Measurement& pp = rows[0];
  EXPECT_EQ(pp.tool, "llama-bench");
  EXPECT_EQ(pp.where, "readme-md.md:3");
  EXPECT_EQ(pp.model, "llama 7B mostly Q4_0");
  EXPECT_EQ(pp.quant, "q4_0");
  EXPECT_EQ(pp.backend, "CUDA");
  EXPECT_EQ(pp.gpu_layers, -1);
  EXPECT_DOUBLE_EQ(pp.model_bytes, 3.56 * 1073741824.0);  // GiB, binary
  EXPECT_DOUBLE_EQ(pp.model_params, 6.74e9);
  EXPECT_EQ(pp.mode, "prefill");
  EXPECT_EQ(pp.prompt_tokens, 512);
  EXPECT_EQ(pp.gen_tokens, 0);
  EXPECT_DOUBLE_EQ(pp.value, 2368.80);
  ASSERT_TRUE(pp.spread.has_value());
  EXPECT_DOUBLE_EQ(*pp.spread, 93.24);
  EXPECT_EQ(pp.unit, "tokens/s");
  EXPECT_EQ(pp.gpu, "");  // the Markdown table does not name the card
  EXPECT_EQ(rows[1].mode, "decode");
  EXPECT_EQ(rows[1].gen_tokens, 128);
  EXPECT_DOUBLE_EQ(rows[1].value, 131.42);
}

TEST(LlamaBench, ReadsDepthsThreadsAndTheDevicesItFoundWhenTheyWereKept) {
  const auto depth = read_fixture("readme-depth.md");
  ASSERT_EQ(depth.size(), 4u);
  EXPECT_EQ(depth[0].quant, "q4_k_m");
  EXPECT_EQ(depth[0].prompt_tokens, 512);
  EXPECT_EQ(depth[0].depth, 0);
  EXPECT_EQ(depth[2].prompt_tokens, 512);
  EXPECT_EQ(depth[2].depth, 512);
  EXPECT_EQ(depth[3].mode, "decode");
  EXPECT_EQ(depth[3].depth, 512);
  EXPECT_DOUBLE_EQ(depth[3].value, 116.71);
  const auto threads = read_fixture("readme-threads.md");
  ASSERT_EQ(threads.size(), 4u);
  EXPECT_EQ(threads[2].threads, 32);
  EXPECT_EQ(threads[2].backend, "CPU");
  EXPECT_EQ(threads[2].gpu_layers, -1);  // no ngl column
  EXPECT_DOUBLE_EQ(threads[3].value, 16.41);
  // The backends print the devices they found on stderr; a file that kept them (2>&1) names the card, and a
  // combined test (pp N+tg M) is one figure over all its tokens.
  const std::string both = "ggml_cuda_init: found 1 CUDA devices:\n"
                           "  Device 0: NVIDIA GeForce RTX 3090, compute capability 8.6, VMM: yes\n"
                           "| model | size | params | backend | ngl | test | t/s |\n"
                           "| --- | ---: | ---: | --- | --: | ---: | ---: |\n"
                           "| llama 8B Q4_K - Medium | 4.58 GiB | 8.03 B | CUDA | 99 | pp512+tg128 | 512.30 ± 1.20 |\n"
                           "\nbuild: 1d36b367 (4120)\n";
  const auto m = read_llama_bench(both, "run.md");
  ASSERT_EQ(m.size(), 1u);
  EXPECT_EQ(m[0].gpu, "NVIDIA GeForce RTX 3090");
  EXPECT_EQ(m[0].mode, "prefill+decode");
  EXPECT_EQ(m[0].prompt_tokens, 512);
  EXPECT_EQ(m[0].gen_tokens, 128);
  EXPECT_EQ(m[0].gpu_layers, 99);
  EXPECT_EQ(m[0].where, "run.md:5");
}

TEST(LlamaBench, EveryMachineReadableFormatGivesTheSameMeasurements) {
  const auto csv = read_fixture("readme.csv");
  const auto sql = read_fixture("readme.sql");
  const auto json = read_fixture("readme.json");
  const auto jsonl = read_fixture("readme.jsonl");
  ASSERT_EQ(csv.size(), 2u);
  const Measurement& pp = csv[0];
  EXPECT_EQ(pp.where, "readme.csv:2");
  EXPECT_EQ(pp.gpu, "NVIDIA GeForce RTX 4080");
  EXPECT_EQ(pp.backend, "CUDA");
  EXPECT_EQ(pp.model, "qwen2 7B Q4_K - Medium");
  EXPECT_EQ(pp.model_file, "models/Qwen2.5-7B-Instruct-Q4_K_M.gguf");
  EXPECT_EQ(pp.quant, "q4_k_m");
  EXPECT_DOUBLE_EQ(pp.model_bytes, 4677120000.0);
  EXPECT_DOUBLE_EQ(pp.model_params, 7615616512.0);
  EXPECT_EQ(pp.batch, 2048);
  EXPECT_EQ(pp.ubatch, 512);
  EXPECT_EQ(pp.threads, 8);
  EXPECT_EQ(pp.gpu_layers, -1);
  EXPECT_EQ(pp.mode, "prefill");
  EXPECT_EQ(pp.prompt_tokens, 512);
  EXPECT_DOUBLE_EQ(pp.value, 7285.676949);
  EXPECT_DOUBLE_EQ(*pp.spread, 100.064434);
  EXPECT_EQ(csv[1].mode, "decode");
  EXPECT_DOUBLE_EQ(csv[1].value, 119.915244);
  // SQL is the CSV's runs as INSERT statements: the same figures, field for field.
  ASSERT_EQ(sql.size(), csv.size());
  for (std::size_t i = 0; i < csv.size(); ++i) {
    EXPECT_EQ(sql[i].gpu, csv[i].gpu);
    EXPECT_EQ(sql[i].model, csv[i].model);
    EXPECT_EQ(sql[i].mode, csv[i].mode);
    EXPECT_EQ(sql[i].prompt_tokens, csv[i].prompt_tokens);
    EXPECT_EQ(sql[i].gen_tokens, csv[i].gen_tokens);
    EXPECT_DOUBLE_EQ(sql[i].value, csv[i].value);
    EXPECT_DOUBLE_EQ(*sql[i].spread, *csv[i].spread);
    EXPECT_DOUBLE_EQ(sql[i].model_bytes, csv[i].model_bytes);
  }
  EXPECT_EQ(sql[1].where, "readme.sql:47");  // after the CREATE TABLE of 42 fields and its blank line
  // JSON and JSONL hold the same objects, with each repetition.
  ASSERT_EQ(json.size(), 2u);
  ASSERT_EQ(jsonl.size(), 2u);
  EXPECT_EQ(json[0].where, "readme.json: result 1");
  EXPECT_EQ(jsonl[1].where, "readme.jsonl:2");
  for (std::size_t i = 0; i < json.size(); ++i) {
    EXPECT_EQ(json[i].gpu, jsonl[i].gpu);
    EXPECT_EQ(json[i].mode, jsonl[i].mode);
    EXPECT_DOUBLE_EQ(json[i].value, jsonl[i].value);
    EXPECT_EQ(json[i].samples, jsonl[i].samples);
  }
  EXPECT_DOUBLE_EQ(json[0].value, 7100.002165);
  ASSERT_EQ(json[0].samples.size(), 5u);
  EXPECT_DOUBLE_EQ(json[0].samples[4], 7237.21);
  EXPECT_EQ(json[1].gen_tokens, 128);
  EXPECT_EQ(json[1].quant, "q4_k_m");
}

TEST(LlamaBench, OlderSchemasWithOneFlagPerBackendRead) {
  // Before `backends` (2024), each backend had a flag: cuda, opencl, metal, gpu_blas, blas.
  const std::string old = "build_commit,build_number,cuda,opencl,metal,gpu_blas,blas,cpu_info,gpu_info,model_filename,model_type,"
                          "model_size,model_n_params,n_batch,n_threads,f16_kv,n_gpu_layers,main_gpu,mul_mat_q,tensor_split,n_prompt,n_gen,"
                          "test_time,avg_ns,stddev_ns,avg_ts,stddev_ts\n"
                          "\"3b169441\",\"1394\",\"1\",\"0\",\"0\",\"1\",\"1\",\"13th Gen Intel(R) Core(TM) i9-13900K\",\"NVIDIA GeForce RTX 4090\","
                          "\"models/7B/ggml-model-q4_0.gguf\",\"llama 7B mostly Q4_0\",\"3825065984\",\"6738415616\",\"512\",\"16\",\"1\",\"99\",\"0\",\"1\","
                          "\"0.00\",\"512\",\"0\",\"2023-09-23T12:09:01Z\",\"212179400\",\"1290040\",\"2413.056848\",\"14.650466\"\n";
  const auto m = read_llama_bench(old, "old.csv");
  ASSERT_EQ(m.size(), 1u);
  EXPECT_EQ(m[0].backend, "CUDA");
  EXPECT_EQ(m[0].gpu, "NVIDIA GeForce RTX 4090");
  EXPECT_EQ(m[0].gpu_layers, 99);
  EXPECT_EQ(m[0].quant, "q4_0");
  EXPECT_DOUBLE_EQ(m[0].value, 2413.056848);
}

TEST(LlamaBench, FileTypesReadAsGpuvsSpellsWeightFormats) {
  for (const auto& [type, quant] : std::vector<std::pair<std::string, std::string>>{{"llama 7B mostly Q4_0", "q4_0"},
                                                                                    {"llama 8B Q4_K - Medium", "q4_k_m"},
                                                                                    {"qwen2 7B Q4_K - Small", "q4_k_s"},
                                                                                    {"llama 70B Q3_K - Large", "q3_k_l"},
                                                                                    {"llama 8B Q6_K", "q6_k"},
                                                                                    {"llama 8B Q8_0", "q8_0"},
                                                                                    {"gemma3 4B F16", "f16"},
                                                                                    {"llama 8B BF16", "bf16"},
                                                                                    {"llama 1B all F32", "f32"},
                                                                                    {"llama 8B IQ2_XXS - 2.0625 bpw", "iq2_xxs"},
                                                                                    {"llama 8x7B Q5_K - Medium", "q5_k_m"},
                                                                                    {"llama", ""},
                                                                                    {"llama 7B", ""},
                                                                                    {"llama 7B Q4_0!", ""}})
    EXPECT_EQ(measured::quant_of_model_type(type), quant) << type;
}

TEST(LlamaBench, AnythingElseIsRefusedNamingTheFileLineAndField) {
  const std::string head = "| model | size | params | backend | ngl | test | t/s |\n| --- | ---: | ---: | --- | --: | ---: | ---: |\n";
  const std::string row = "| llama 7B mostly Q4_0 | 3.56 GiB | 6.74 B | CUDA | 99 | tg 128 | 131.42 ± 0.59 |\n";
  const std::string csv_head = "model_type,n_prompt,n_gen,avg_ts,stddev_ts\n";
  test::expect_refused(
      {
          {"", "f: empty file"},
          {"  \n\n", "f: empty file"},
          {"hello world\n", "f: not llama-bench output"},
          {head, "f: a Markdown table without results"},
          {"| model | t/s |\n| --- | --- |\n| x | 1 |\n", "f:1: the table has no 'test' column"},
          {"| model | test | t/s |\n| x | tg 1 | 1 |\n", "f:2: the header is not followed by a separator row"},
          {head + "| llama 7B | 3.56 GiB | CUDA | 99 | tg 128 | 1 |\n", "f:3: 6 cells where the header has 7"},
          {head + "| llama 7B | 3.56 GiB | 6.74 B | CUDA | 99 | tg 128 | fast |\n", "f:3: t/s 'fast' is not a number"},
          {head + "| llama 7B | 3.56 GiB | 6.74 B | CUDA | 99 | tg 128 | 0.00 ± 0.00 |\n", "f:3: avg_ts 0 is not a positive rate"},
          {head + "| llama 7B | 3.56 GiB | 6.74 B | CUDA | 99 | tg 128 | 5 ± -1 |\n", "f:3: stddev_ts -1 is negative"},
          {head + "| llama 7B | 3.56 XB | 6.74 B | CUDA | 99 | tg 128 | 5 |\n", "f:3: size unit 'XB' is not one llama-bench prints"},
          {head + "| llama 7B | 3.56 GiB | 6.74 B | CUDA | 99 | xx 128 | 5 |\n", "f:3: test 'xx 128' is not pp N, tg N or pp N+tg M"},
          {head + "| llama 7B | 3.56 GiB | 6.74 B | CUDA | 99 | tg 0 | 5 |\n", "f:3: the test has neither prompt nor generated tokens"},
          {head + "| llama 7B | 3.56 GiB | 6.74 B | CUDA | 99 | tg 1.5 | 5 |\n", "f:3: test size 1.5 is not a count"},
          {head + "| llama 7B | 3.56 GiB | 6.74 B | CUDA | -2 | tg 128 | 5 |\n", "f:3: ngl -2 is not a count"},
          {head + "| llama 7B | 3.56 GiB | 6.74 B | CUDA | 99 | tg 128 @ 512 | 5 |\n", "f:3: test 'tg 128 @ 512' has a depth without d"},
          {head + "| llama\x1b[2J 7B | 3.56 GiB | 6.74 B | CUDA | 99 | tg 128 | 5 |\n", "f:3: a table row holds a control character"},
          {csv_head + "x,0,128,fast,1\n", "f:2: avg_ts 'fast' is not a number"},
          {csv_head + "x,0,128,nan,1\n", "f:2: avg_ts 'nan' is not a number"},
          {csv_head + "x,0,128,5\n", "f:2: 4 fields where the header has 5"},
          {csv_head + "x,0,128,-5,1\n", "f:2: avg_ts -5 is not a positive rate"},
          {csv_head + "\"x,0,128,5,1\n", "f:2: unterminated quoted field"},
          {"model_type,n_gen,avg_ts\nx,128,5\n", "f:2: no n_prompt or n_gen field"},
          {"[1, 2]", "f: result 1: a result is not a JSON object"},
          {"[{\"n_prompt\": 0, \"n_gen\": 128}]", "f: result 1: no avg_ts field"},
          {"[{\"n_prompt\": 0, \"n_gen\": 128, \"avg_ts\": 5, \"samples_ts\": [1, -2]}]", "f: result 1: samples_ts holds a value that is not a positive rate"},
          {"[{\"n_prompt\": 0, \"n_gen\": 128, \"avg_ts\": 5, \"gpu_info\": \"a\\u001bb\"}]", "f: result 1: gpu_info holds a control character"},
          {"[{\"n_prompt\": 0, \"n_gen\": 128, \"avg_ts\": 5,", "f: malformed JSON at byte"},
          {"{\"n_prompt\": 0, \"n_gen\": 128, \"avg_ts\": 5}\n{\"n_prompt\": 0}\n", "f:2: no avg_ts field"},
          {"{\"n_prompt\": 0, \"n_gen\": 128, \"avg_ts\": 5}\nnot json\n", "f:2: malformed JSON"},
          {"CREATE TABLE IF NOT EXISTS llama_bench (\n  avg_ts REAL\n);\n", "f: SQL output without an INSERT INTO llama_bench"},
          {"INSERT INTO llama_bench (n_prompt, n_gen, avg_ts) VALUES ('0', '128');\n", "f:1: 2 values for 3 columns"},
          {"\n\nINSERT INTO llama_bench (n_prompt, n_gen, avg_ts) VALUES ('0', '128', '5'\n", "f:3: an INSERT's list is not closed"},
          {"INSERT INTO llama_bench VALUES ('0', '128', '5');\n", "f:1: an INSERT without its column list"},
          {"INSERT INTO llama_bench (n_prompt, n_gen, avg_ts) ('0', '128', '5');\n", "f:1: an INSERT without VALUES"},
      },
      [](const std::string& text) { (void)read_llama_bench(text, "f"); });
  // The row a good table has still reads after all that.
  EXPECT_EQ(read_llama_bench(head + row, "f").size(), 1u);
}

TEST(LlamaBench, FuzzedOutputsReadOrFailInOneLine) {
  const std::string alphabet = "|-:. 0123456789,\"'[]{}()\n\xc2\xb1pptg+@dBGiMn_avgtsINSERT";
  for (const char* name : {"readme-md.md", "readme.csv", "readme.json", "readme.jsonl", "readme.sql"}) {
    const std::string text = fixture(name);
    EXPECT_GT(test::fuzz_parser(text, alphabet, 400, 7, [](const std::string& t, const std::string& w) { (void)read_llama_bench(t, w); }), 0)
        << name;
  }
}

#include "measured/spec.hpp"

TEST(MeasuredSpec, AFigureTypedOnTheCommandLineReadsAsAMeasurement) {
  const Measurement m = measured::read_measured_spec("gpu=rtx-3090;workload=llama3-8b;mode=decode;precision=q4_k_m;value=112 tokens/s");
  EXPECT_EQ(m.tool, "spec");
  EXPECT_EQ(m.where, "--measured");
  EXPECT_EQ(m.gpu, "rtx-3090");
  EXPECT_EQ(m.workload, "llama3-8b");
  EXPECT_EQ(m.mode, "decode");
  EXPECT_EQ(m.precision, "q4_k_m");
  EXPECT_DOUBLE_EQ(m.value, 112);
  EXPECT_EQ(m.unit, "tokens/s");
  EXPECT_FALSE(m.spread.has_value());
  EXPECT_EQ(m.gpus, 1);
  // Spaces around items, a k prefix on either side of the space, the optional keys.
  const Measurement t = measured::read_measured_spec(" gpu = NVIDIA H100 80GB HBM3 ; workload=resnet50; mode=train ;value=2.6k images/s;"
                                                      "batch=256;gpus=8;framework=pytorch;spread=0.05;precision=amp-bf16");
  EXPECT_EQ(t.gpu, "NVIDIA H100 80GB HBM3");
  EXPECT_DOUBLE_EQ(t.value, 2600);
  EXPECT_EQ(t.unit, "images/s");
  EXPECT_DOUBLE_EQ(*t.spread, 50);
  EXPECT_EQ(t.sequences, 256);
  EXPECT_EQ(t.gpus, 8);
  EXPECT_EQ(t.framework, "pytorch");
  EXPECT_DOUBLE_EQ(measured::read_measured_spec("gpu=a;workload=b;mode=infer;value=1.5 k tokens/s;prompt_len=128;gen_len=64").value, 1500);
  EXPECT_TRUE(measured::looks_like_spec("gpu=a"));
  EXPECT_FALSE(measured::looks_like_spec("llama-bench.json"));
}

TEST(MeasuredSpec, AnUnreadableSpecIsRefusedNamingTheKey) {
  const std::string ok = "gpu=rtx-3090;workload=llama3-8b;mode=decode;";
  test::expect_refused({{"", "--measured: no gpu="},
                        {"gpu=rtx-3090;workload=llama3-8b;mode=decode", "--measured: no value="},
                        {ok + "value=112", "--measured: value '112' has no unit"},
                        {ok + "value=112 furlongs/s", "--measured: unit 'furlongs/s' is not a rate gpuvs compares"},
                        {ok + "value=fast tokens/s", "--measured: value 'fast' is not a number"},
                        {ok + "value=-3 tokens/s", "--measured: value -3 is not a positive rate"},
                        {ok + "value=inf tokens/s", "--measured: value 'inf' is not a number"},
                        {ok + "value=1 tokens/s;speed=9", "--measured: unknown key 'speed'"},
                        {ok + "value=1 tokens/s;gpu=a100", "--measured: gpu given twice"},
                        {ok + "value=1 tokens/s;batch=", "--measured: batch is empty"},
                        {ok + "value=1 tokens/s;batch=0", "--measured: batch 0 is not a whole number in [1, 16777216]"},
                        {ok + "value=1 tokens/s;gpus=1.5", "--measured: gpus 1.5 is not a whole number"},
                        {ok + "value=1 tokens/s;spread=-1", "--measured: spread is negative"},
                        {ok + "value=1 tokens/s;oops", "--measured: 'oops' is not key=value"},
                        {"gpu=a;workload=b;mode=fly;value=1 tokens/s", "--measured: mode 'fly' is not one gpuvs prices"},
                        {"gpu=a\n;workload=b;mode=decode;value=1 tokens/s", "--measured: the spec holds a control character"}},
                       [](const std::string& text) { (void)measured::read_measured_spec(text); });
  const std::string good = ok + "value=112 tokens/s;prompt_len=512;gen_len=128;spread=1.5";
  EXPECT_GT(test::fuzz_parser(good, "=; .-0123456789kMagpuworkldem/s", 1000, 11,
                              [](const std::string& t, const std::string&) {
                                try {
                                  (void)measured::read_measured_spec(t);
                                } catch (const InputError& e) {
                                  // fuzz_parser wants errors to start with the name it gave; a spec's name is the flag.
                                  if (std::string(e.what()).rfind("--measured: ", 0) != 0) throw;
                                  throw InputError(std::string("fuzz.toml: ") + e.what());
                                }
                              }),
            0);
}

#include "measured/nccl_tests.hpp"
#include "measured/trtllm_bench.hpp"
#include "measured/vllm_bench.hpp"

using measured::looks_like_nccl_tests;
using measured::read_nccl_tests;

namespace {
std::string nccl_fixture(const std::string& name) { return data_file("nccl-tests", name); }
}  // namespace

// Two real outputs (tests/data/nccl-tests/SOURCES.md): a current build that names its collective and NCCL version, and
// an older one that names neither, over two hosts.
TEST(NcclTests, ReadsRealOutputsOfCurrentAndOlderBuilds) {
  const std::string a100 = nccl_fixture("a100-8gpu-allreduce.txt");
  ASSERT_TRUE(looks_like_nccl_tests(a100));
  const auto one = read_nccl_tests(a100, "a100.txt");
  ASSERT_EQ(one.size(), 1u);
  EXPECT_EQ(one[0].tool, "nccl-tests");
  EXPECT_EQ(one[0].workload, "allreduce");
  EXPECT_EQ(one[0].mode, "micro");
  EXPECT_EQ(one[0].gpu, "NVIDIA A100-SXM4-40GB");
  EXPECT_EQ(one[0].gpus, 8);
  EXPECT_EQ(one[0].nodes, 1);
  EXPECT_EQ(one[0].precision, "fp32");
  EXPECT_EQ(one[0].library_version, "2.25.1");
  EXPECT_DOUBLE_EQ(one[0].message_bytes, 10737418240.0);
  EXPECT_DOUBLE_EQ(one[0].value, 233.00);
  EXPECT_EQ(one[0].unit, "GB/s busbw");
  EXPECT_EQ(one[0].where, "a100.txt:18");
  // No collective named: an all-reduce by its bus factor (busbw/algbw = 2 x 15/16 over 16 ranks); the rows below
  // print resolution (0.00 GB/s) carry no bandwidth and stay out.
  const auto two = read_nccl_tests(nccl_fixture("h100-16gpu-2node-allreduce.txt"), "h100.txt");
  ASSERT_EQ(two.size(), 25u);
  for (const auto& m : two) {
    EXPECT_EQ(m.workload, "allreduce");
    EXPECT_EQ(m.gpus, 16);
    EXPECT_EQ(m.nodes, 2);
    EXPECT_EQ(m.gpu, "NVIDIA H100 80GB HBM3");
    EXPECT_TRUE(m.library_version.empty());
  }
  EXPECT_DOUBLE_EQ(two.front().message_bytes, 512.0);
  EXPECT_DOUBLE_EQ(two.back().message_bytes, 8589934592.0);
  EXPECT_DOUBLE_EQ(two.back().value, 338.82);
  EXPECT_FALSE(looks_like_nccl_tests("| model | size |\n| --- | --- |\n"));
}

TEST(NcclTests, AnythingElseIsRefusedNamingTheFileAndLine) {
  const std::string head =
      "# nThread 1 nGpus 2 minBytes 8 maxBytes 8 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0\n"
      "# Using devices\n"
      "#  Rank  0 Group  0 Pid 1 on host device  0 [0x07] NVIDIA H100 80GB HBM3\n"
      "#  Rank  1 Group  0 Pid 2 on host device  1 [0x08] NVIDIA H100 80GB HBM3\n"
      "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n";
  // Two ranks: an all-reduce's bus factor is 2 x 1/2 = 1 (busbw = algbw), a reduce-scatter's or all-gather's 1/2.
  const auto row = [](const std::string& wrong, const std::string& redop = "sum", const std::string& busbw = "50.0") {
    return "  1048576  262144  float  " + redop + "  -1  20.0  50.0  " + busbw + "  " + wrong + "  20.0  50.0  " + busbw + "  0\n";
  };
  EXPECT_EQ(read_nccl_tests(head + row("0"), "n.txt").front().workload, "allreduce");
  EXPECT_EQ(read_nccl_tests(head + row("0", "sum", "25.0"), "n.txt").front().workload, "reducescatter");
  EXPECT_EQ(read_nccl_tests(head + row("N/A"), "n.txt").size(), 1u);  // validation off (-c 0)
  test::expect_refused({{head + row("3"), "n.txt:6: 3 wrong values"},
                        {head + "  1048576  262144  float  sum  -1  20.0  50.0\n", "n.txt:6: 7 fields, the header has 13"},
                        {head + row("0", "sum", "fast"), "n.txt:6: busbw 'fast' is not a non-negative number"},
                        {head + row("0", "none", "25.0"), "an all-gather's or an all-to-all's"},
                        {"# nThread 1\n  1048576  262144  float  sum  -1  20.0  50.0  100.0  0  20.0  50.0  100.0  0\n",
                         "n.txt:2: a figure before the column header"},
                        {"# nThread 1\n" + head.substr(head.find("#       size")) + row("0"), "n.txt:3: no device list"},
                        {"# nThread 1\n", "n.txt: no nccl-tests figures"},
                        {head + "\x1b[2J\n", "n.txt:6: a control character"}},
                       [](const std::string& t) { read_nccl_tests(t, "n.txt"); });
}

TEST(NcclTests, FuzzedOutputsReadOrFailInOneLine) {
  EXPECT_GE(test::fuzz_parser(nccl_fixture("a100-8gpu-allreduce.txt"), "# \n-0123456789.abefglmnoprstuvwxyNA/=[]", 1500, 43,
                              [](const std::string& t, const std::string& w) { read_nccl_tests(t, w); }),
            1);
}

using measured::looks_like_vllm_bench;
using measured::read_vllm_bench;

namespace {
std::string vllm_fixture(const std::string& name) { return data_file("vllm-bench", name); }
const std::string kBlock =
    "============ Serving Benchmark Result ============\n"
    "Successful requests:                     10\n"
    "Total input tokens:                      10240\n"
    "Total generated tokens:                  1280\n"
    "Request throughput (req/s):              2.00\n"
    "Output token throughput (tok/s):         256.00\n"
    "==================================================\n";
}  // namespace

// Issue 35: vLLM's serving benchmark as people paste it (tests/data/vllm-bench/SOURCES.md): every run of a log, its
// figures and latencies, the concurrency and rate lines newer releases print before the block.
TEST(VllmBench, ReadsThePrintedResultOfEveryRunInAPastedLog) {
  const std::string log = vllm_fixture("a100-80gb-qwen2-7b-vllm-0.10.1.txt");
  ASSERT_TRUE(looks_like_vllm_bench(log));
  const auto runs = read_vllm_bench(log, "a100.txt");
  ASSERT_EQ(runs.size(), 10u);  // 1 to 1,000 prompts; the command lines and server logs between them skipped
  EXPECT_EQ(runs[0].tool, "vllm-bench");
  EXPECT_EQ(runs[0].where, "a100.txt:8");
  EXPECT_EQ(runs[0].mode, "infer");
  EXPECT_EQ(runs[0].framework, "vllm");
  EXPECT_TRUE(runs[0].gpu.empty());  // the benchmark never names the card
  EXPECT_EQ(runs[0].prompt_tokens, 1024);
  EXPECT_EQ(runs[0].gen_tokens, 1024);
  EXPECT_EQ(runs[0].sequences, 1);
  EXPECT_TRUE(runs[0].one_wave);  // every prompt sent at once, none after
  EXPECT_DOUBLE_EQ(runs[0].value, 84.95);
  EXPECT_EQ(runs[0].unit, "tokens/s");
  EXPECT_DOUBLE_EQ(runs[0].latency_ms.at("median_ttft"), 36.23);
  EXPECT_DOUBLE_EQ(runs[0].latency_ms.at("p99_itl"), 15.43);
  // 100 prompts sent at once (no --max-concurrency): mean lengths over the successful requests.
  const auto& hundred = runs[6];
  EXPECT_EQ(hundred.sequences, 100);
  EXPECT_EQ(hundred.prompt_tokens, 1021);  // 102,140 / 100
  EXPECT_EQ(hundred.gen_tokens, 1016);     // 101,590 / 100
  EXPECT_DOUBLE_EQ(hundred.value, 3352.15);
  EXPECT_DOUBLE_EQ(hundred.latency_ms.at("mean_tpot"), 25.26);
  // --max-concurrency 32 and request rate inf, printed before each block.
  const auto capped = read_vllm_bench(vllm_fixture("concurrency-32-vllm-bench.txt"), "c32.txt");
  ASSERT_EQ(capped.size(), 2u);
  for (const auto& m : capped) {
    EXPECT_EQ(m.sequences, 32);
    EXPECT_EQ(m.request_rate, 0.0);
    EXPECT_EQ(m.prompt_tokens, 2048);
    EXPECT_EQ(m.gen_tokens, 2048);
  }
  EXPECT_DOUBLE_EQ(capped[1].value, 329.86);
  EXPECT_DOUBLE_EQ(capped[1].latency_ms.at("median_tpot"), 93.99);
  EXPECT_FALSE(looks_like_vllm_bench("| model | size |\n| --- | --- |\n"));
}

TEST(VllmBench, TheSavedJsonReadsAsThePrintedRun) {
  const std::string json = vllm_fixture("a100-80gb-qwen2-7b-vllm-0.10.1.json");
  ASSERT_TRUE(looks_like_vllm_bench(json));
  const auto saved = read_vllm_bench(json, "r.json");
  ASSERT_EQ(saved.size(), 1u);
  const auto printed = read_vllm_bench(vllm_fixture("a100-80gb-qwen2-7b-vllm-0.10.1.txt"), "a100.txt")[6];
  EXPECT_EQ(saved[0].where, "r.json");
  EXPECT_EQ(saved[0].model, "Qwen2-7B-Instruct");
  EXPECT_EQ(saved[0].framework, "vllm");
  EXPECT_EQ(saved[0].prompt_tokens, printed.prompt_tokens);
  EXPECT_EQ(saved[0].gen_tokens, printed.gen_tokens);
  EXPECT_EQ(saved[0].sequences, printed.sequences);
  EXPECT_DOUBLE_EQ(saved[0].value, printed.value);
  EXPECT_EQ(saved[0].latency_ms, printed.latency_ms);
  // Older releases wrote an infinite rate as a bare Infinity; a TensorRT-LLM server is named in gpuvs's spelling.
  std::string old = json;
  old.replace(old.find("\"inf\""), 5, "Infinity");
  old.replace(old.find("\"vllm\""), 6, "\"tensorrt-llm\"");
  EXPECT_EQ(read_vllm_bench(old, "old.json")[0].framework, "trt-llm");
}

TEST(VllmBench, AnythingElseIsRefusedNamingTheFileLineAndField) {
  const auto with = [](const std::string& from, const std::string& to) {
    std::string b = kBlock;
    b.replace(b.find(from), from.size(), to);
    return b;
  };
  EXPECT_EQ(read_vllm_bench(kBlock, "v.txt")[0].prompt_tokens, 1024);
  // Later releases print the concurrency cap inside the block.
  EXPECT_EQ(read_vllm_bench(with("Total input", "Maximum request concurrency:             4\nTotal input"), "v.txt")[0].sequences, 4);
  // A paced run the server could not keep up with measures the stack; one it kept up with measures the pacing.
  EXPECT_EQ(read_vllm_bench("Traffic request rate: 8\n" + kBlock, "v.txt")[0].request_rate, 8.0);
  const std::string json = R"({"completed": 10, "total_input_tokens": 100, "total_output_tokens": 200, "output_throughput": 50.0})";
  EXPECT_EQ(read_vllm_bench(json, "v.json")[0].gen_tokens, 20);
  test::expect_refused(
      {{"Traffic request rate: 2.0\n" + kBlock, "v.txt:2: paced at 2 requests/s and served 2"},
       {with("Output token throughput (tok/s):         256.00\n", ""), "v.txt:1: no output token throughput"},
       {with("10\n", "0\n"), "v.txt:1: 0 successful requests"},
       {with("256.00", "fast"), "v.txt:6: Output token throughput (tok/s) 'fast' is not a number"},
       {with("2.00", "nan"), "v.txt:5: Request throughput (req/s) 'nan' is not a number"},
       {kBlock.substr(0, kBlock.find("Output token")), "v.txt:1: the result block that starts here does not end"},
       {"Maximum request concurrency: many\n" + kBlock, "v.txt:1: request concurrency 'many'"},
       {"Successful requests: 10\n", "v.txt: no 'Serving Benchmark Result' block"},
       {"[1, 2]", "v.txt: a saved result is one JSON object"},
       {"{\"completed\": ", "v.txt:1: not JSON"},
       {R"({"completed": "ten", "total_input_tokens": 1, "total_output_tokens": 1, "output_throughput": 1})", "\"completed\" is not a finite number"},
       {R"({"completed": 10, "total_input_tokens": 1, "total_output_tokens": 100})", "v.txt: no output token throughput"},
       {R"({"completed": 1, "total_input_tokens": 1, "total_output_tokens": 1, "output_throughput": 1, "request_rate": -1})",
        "\"request_rate\" is not a positive number"},
       {R"({"completed": 1, "total_input_tokens": 1, "total_output_tokens": 1, "output_throughput": 1, "max_concurrency": 0.5})",
        "\"max_concurrency\" 0.5 is not a whole number"},
       {R"({"completed": 1, "total_input_tokens": 1, "total_output_tokens": 1, "output_throughput": 1, "backend": 3})", "\"backend\" is not a string"},
       {R"({"completed": 1, "total_input_tokens": 1, "total_output_tokens": 1, "output_throughput": NaN})", "v.txt: no output token throughput"},
       // Found by fuzz_vllm_bench (UBSan: a mean length past int): 2.04e9 generated tokens over 90 requests.
       {with("1280\n", "2037777779.63\n"), "v.txt:1: 10240 input and 2037777779.63 generated tokens over 10 requests are not a run"}},
      [](const std::string& t) { read_vllm_bench(t, "v.txt"); });
}

std::string sglang_fixture(const std::string& name) { return data_file("sglang-bench", name); }

TEST(VllmBench, SglangsBenchServingReadsFromItsBlockAndItsJsonLines) {
  // sgl-cookbook's MiniMax-M2.5 run on 8 x H100 (tests/data/sglang-bench/SOURCES.md): ten requests, one at a time.
  const std::string block = sglang_fixture("h100x8-minimax-m2.5-sglang-0.5.9.txt");
  ASSERT_TRUE(looks_like_vllm_bench(block));
  const auto printed = read_vllm_bench(block, "s.txt");
  ASSERT_EQ(printed.size(), 1U);
  const measured::Measurement& m = printed[0];
  EXPECT_EQ(m.tool, "sglang-bench-serving");
  EXPECT_EQ(m.framework, "sglang");
  EXPECT_EQ(m.where, "s.txt:1");
  EXPECT_EQ(m.sequences, 1);  // "Max request concurrency: 1", printed inside the block
  EXPECT_EQ(m.prompt_tokens, 610);
  EXPECT_EQ(m.gen_tokens, 422);
  EXPECT_DOUBLE_EQ(m.value, 119.08);
  EXPECT_EQ(m.unit, "tokens/s");
  EXPECT_DOUBLE_EQ(m.latency_ms.at("mean_e2el"), 3542.38);  // SGLang's "Mean E2E Latency", vLLM's E2EL
  EXPECT_DOUBLE_EQ(m.latency_ms.at("p90_e2el"), 6317.77);
  EXPECT_DOUBLE_EQ(m.latency_ms.at("median_ttft"), 80.38);
  EXPECT_DOUBLE_EQ(m.latency_ms.at("p95_itl"), 8.12);
  // The same run as the JSON line its --output-file appends (Infinity for the request rate), and two runs as two lines.
  const std::string line = sglang_fixture("h100x8-minimax-m2.5-sglang-0.5.9.jsonl");
  ASSERT_TRUE(looks_like_vllm_bench(line));
  const auto saved = read_vllm_bench(line, "s.jsonl");
  ASSERT_EQ(saved.size(), 1U);
  EXPECT_EQ(saved[0].tool, m.tool);
  EXPECT_EQ(saved[0].framework, m.framework);
  EXPECT_EQ(saved[0].sequences, m.sequences);
  EXPECT_EQ(saved[0].prompt_tokens, m.prompt_tokens);
  EXPECT_EQ(saved[0].gen_tokens, m.gen_tokens);
  EXPECT_DOUBLE_EQ(saved[0].value, m.value);
  EXPECT_DOUBLE_EQ(saved[0].request_rate, 0);
  EXPECT_DOUBLE_EQ(saved[0].latency_ms.at("mean_e2el"), m.latency_ms.at("mean_e2el"));
  std::string second = line;
  second.replace(second.find("\"max_concurrency\": 1"), 20, "\"max_concurrency\": 8");
  second.replace(second.find("\"backend\": \"sglang\""), 19, "\"backend\": \"sglang-oai\"");
  const auto both = read_vllm_bench(line + "\n" + second, "s.jsonl");
  ASSERT_EQ(both.size(), 2U);
  EXPECT_EQ(both[1].where, "s.jsonl:3");
  EXPECT_EQ(both[1].sequences, 8);
  EXPECT_EQ(both[1].framework, "sglang");
  // Unset concurrency reads as every request at once; 0.4.0.post2's misspelt line reads too.
  const auto with = [&](const std::string& from, const std::string& to) {
    std::string b = block;
    b.replace(b.find(from), from.size(), to);
    return b;
  };
  EXPECT_EQ(read_vllm_bench(with("Max request concurrency:                 1", "Max request concurrency:                 not set"), "s.txt")[0].sequences, 10);
  EXPECT_EQ(read_vllm_bench(with("Max request concurrency:                 1", "Max reqeuest concurrency:                4"), "s.txt")[0].sequences, 4);
  test::expect_refused(
      {{with("Traffic request rate:                    inf", "Traffic request rate:                    0.1"),
        "s.txt:1: paced at 0.1 requests/s and served 0.28"},
       {with("Traffic request rate:                    inf", "Traffic request rate:                    fast"), "s.txt:3: request rate 'fast'"},
       {with("Max request concurrency:                 1", "Max request concurrency:                 lots"),
        "s.txt:4: request concurrency 'lots' is not a whole number, None or 'not set'"},
       {line + "{\"completed\": 3\n", "s.jsonl:2: not JSON"},
       {line + "[1]\n", "s.jsonl:2: a saved result line is one JSON object"},
       {R"({"completed": 1, "completed": 2, "total_input_tokens": 1, "total_output_tokens": 1, "output_throughput": 1})", "key 'completed' appears twice"}},
      [](const std::string& t) { read_vllm_bench(t, t.find('{') == 0 ? "s.jsonl" : "s.txt"); });
}

TEST(VllmBench, FuzzedOutputsReadOrFailInOneLine) {
  const auto read = [](const std::string& t, const std::string& w) {
    for (const auto& m : read_vllm_bench(t, w))
      if (!(m.value > 0) || m.prompt_tokens < 1 || m.gen_tokens < 1 || m.sequences < 1) throw std::logic_error("an unusable figure read");
  };
  EXPECT_GE(test::fuzz_parser(vllm_fixture("concurrency-32-vllm-bench.txt"), "#=-: \n0123456789.infNoeRTP()", 1500, 47, read), 1);
  EXPECT_GE(test::fuzz_parser(vllm_fixture("a100-80gb-qwen2-7b-vllm-0.10.1.json"), "{}[]\":, 0123456789.-einfInftyul", 1500, 53, read), 1);
  EXPECT_GE(test::fuzz_parser(sglang_fixture("h100x8-minimax-m2.5-sglang-0.5.9.jsonl") + sglang_fixture("h100x8-minimax-m2.5-sglang-0.5.9.jsonl"),
                              "{}[]\":, \n0123456789.-einfInftyul", 1500, 59, read), 1);
  EXPECT_GE(test::fuzz_parser(sglang_fixture("h100x8-minimax-m2.5-sglang-0.5.9.txt"), "#=-: \n0123456789.infnotsetMaxreqcuny()", 1500, 61, read), 1);
}

TEST(MeasuredSpec, AFileSpecSaysWhatTheOutputDoesNot) {
  const Measurement spec = measured::read_measured_spec("file=run.json;gpu=a100-80gb-sxm;workload=llama3-8b;precision=bf16;gpus=2");
  EXPECT_EQ(spec.file, "run.json");
  EXPECT_EQ(spec.gpu, "a100-80gb-sxm");
  auto runs = read_vllm_bench(vllm_fixture("a100-80gb-qwen2-7b-vllm-0.10.1.json"), "run.json");
  measured::complete_from_spec(runs[0], spec);
  EXPECT_EQ(runs[0].gpu, "a100-80gb-sxm");
  EXPECT_EQ(runs[0].workload, "llama3-8b");
  EXPECT_EQ(runs[0].precision, "bf16");
  EXPECT_EQ(runs[0].gpus, 2);
  // What the output says itself is not overridden: llama-bench names its card.
  auto bench = read_llama_bench(fixture("rtx3090-qwen2.5-coder-32b.md"), "b.md");
  bench[0].gpu = "NVIDIA GeForce RTX 3090";
  test::expect_refused({{"x", "b.md:7: the output says gpu 'NVIDIA GeForce RTX 3090'; gpu= is for what it does not say"}},
                       [&](const std::string&) { measured::complete_from_spec(bench[0], spec); });
  test::expect_refused({{"file=r.json;value=3 tokens/s", "--measured: value= with file=: the file holds it"},
                        {"file=r.json;mode=infer", "--measured: mode= with file=: the file holds it"},
                        {"gpu=a100-80gb-sxm;workload=llama3-8b", "no mode= (a spec needs gpu, workload, mode and value, or file="}},
                       [](const std::string& t) { measured::read_measured_spec(t); });
}

namespace {
std::string trtllm_fixture(const std::string& name) { return data_file("trtllm-bench", name); }
}  // namespace

// Issue 35: trtllm-bench's report as 0.12 and 0.21 print it (tests/data/trtllm-bench/SOURCES.md), told apart from the
// other tools' outputs by its sections.
TEST(TrtllmBench, ReadsTheReportOfOldAndNewReleases) {
  const std::string old = trtllm_fixture("llama-2-7b-fp8-0.12.txt");
  ASSERT_TRUE(measured::looks_like_trtllm_bench(old));
  EXPECT_FALSE(looks_like_vllm_bench(old));
  const auto a = measured::read_measured_output(old, "t.txt");
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0].tool, "trtllm-bench");
  EXPECT_EQ(a[0].where, "t.txt:30");
  EXPECT_EQ(a[0].model, "meta-llama/Llama-2-7b-hf");
  EXPECT_EQ(a[0].framework, "trt-llm");
  EXPECT_EQ(a[0].library_version, "0.12.0");
  EXPECT_EQ(a[0].quant, "fp8");
  EXPECT_EQ(a[0].mode, "infer");
  EXPECT_EQ(a[0].prompt_tokens, 128);
  EXPECT_EQ(a[0].gen_tokens, 128);
  EXPECT_EQ(a[0].sequences, 3000);  // offline: every request at once, under the runtime's 4,096
  EXPECT_TRUE(a[0].one_wave);
  EXPECT_EQ(a[0].tensor_parallel, 1);
  EXPECT_DOUBLE_EQ(a[0].value, 18886.813971319196);
  EXPECT_TRUE(a[0].gpu.empty());
  const auto b = measured::read_measured_output(trtllm_fixture("llama-3.1-8b-pytorch-0.21.txt"), "u.txt");
  ASSERT_EQ(b.size(), 1u);
  EXPECT_EQ(b[0].model, "meta-llama/Llama-3.1-8B-Instruct");
  EXPECT_EQ(b[0].quant, "bf16");  // no quantization: the dtype's
  EXPECT_EQ(b[0].sequences, 95);  // 94.6 in flight on average
  EXPECT_FALSE(b[0].one_wave);
  EXPECT_DOUBLE_EQ(b[0].value, 11076.77);
  EXPECT_DOUBLE_EQ(b[0].latency_ms.at("mean_ttft"), 162.6706);
  EXPECT_DOUBLE_EQ(b[0].latency_ms.at("mean_tpot"), 7.3272);
  EXPECT_DOUBLE_EQ(b[0].latency_ms.at("p50_ttft"), 159.7857);
  EXPECT_DOUBLE_EQ(b[0].latency_ms.at("p99_tpot"), 8.1306);
  EXPECT_EQ(b[0].latency_ms.count("p50_latency"), 0u);
}

TEST(TrtllmBench, AnythingElseIsRefusedNamingTheFileLineAndField) {
  const std::string head = "= ENGINE DETAILS\nModel: m\nQuantization: FP8\nTP Size: 2\nPP Size: 1\nNumber of requests: 10\n";
  const std::string tail = "Average Input Length (tokens): 100\nAverage Output Length (tokens): 50\nToken Throughput (tokens/sec): 500\n";
  const auto r = measured::read_trtllm_bench(head + tail, "t.txt");
  EXPECT_EQ(r[0].tensor_parallel, 2);
  EXPECT_EQ(r[0].gpus, 2);
  EXPECT_EQ(r[0].sequences, 10);
  test::expect_refused(
      {{"= ENGINE DETAILS\nModel: m\nNumber of requests: 10\nToken Throughput (tokens/sec): 500\n", "t.txt:1: no 'Average Input Length (tokens)'"},
       {head + "Average Input Length (tokens): 100\nToken Throughput (tokens/sec): 500\n", "t.txt:1: no 'Average Output Length (tokens)'"},
       {head + "Average Input Length (tokens): 100\nAverage Output Length (tokens): 50\n", "t.txt:1: no output throughput in the report"},
       {head + "Average Input Length (tokens): many\nAverage Output Length (tokens): 50\nToken Throughput (tokens/sec): 500\n",
        "t.txt:1: Average Input Length (tokens) 'many' is not a number"},
       {"= ENGINE DETAILS\nNumber of requests: 0\n" + tail, "t.txt:1: 0 requests"},
       {"= ENGINE DETAILS\nPP Size: 2\nNumber of requests: 10\n" + tail, "t.txt:1: pipeline parallel (2 stages) serving is not priced yet"},
       {head + tail + "Issue Rate (req/sec): 4\nRequest Throughput (req/sec): 3.9\n", "t.txt:1: issued at 4 requests/s and served 3.9"},
       {head + "[TTFT] P50 : slow\n" + tail, "t.txt:7: [TTFT] P50 'slow' is not a number"},
       {"Token Throughput (tokens/sec): 5\n", "t.txt: no trtllm-bench report"}},
      [](const std::string& t) { measured::read_trtllm_bench(t, "t.txt"); });
}

TEST(TrtllmBench, FuzzedReportsReadOrFailInOneLine) {
  const auto read = [](const std::string& t, const std::string& w) {
    for (const auto& m : measured::read_trtllm_bench(t, w))
      if (!(m.value > 0) || m.prompt_tokens < 1 || m.gen_tokens < 1 || m.sequences < 1 || m.gpus < 1) throw std::logic_error("an unusable figure read");
  };
  EXPECT_GE(test::fuzz_parser(trtllm_fixture("llama-3.1-8b-pytorch-0.21.txt"), "=-:[] \n0123456789.E+NonePTF", 1500, 59, read), 1);
}

#include "measured/tfevents.hpp"
#include "tfevent_builder.hpp"

using measured::looks_like_tfevents;
using measured::read_tfevents;
using namespace test::tfevents;

TEST(TfEvents, ARunsRateComesFromItsRateScalarsOrItsStepTimes) {
  // Hugging Face's Trainer: its end-of-run samples/s, over every process, wins over the loss series.
  auto hf = loss_series("train/loss");
  hf.push_back(event(1.7e9 + 30, 80, simple_value("train/train_samples_per_second", 123.5f) + simple_value("train/train_runtime", 20.f)));
  const std::string f = events_file(hf);
  ASSERT_TRUE(looks_like_tfevents(f));
  auto ms = read_tfevents(f, "ev");
  ASSERT_EQ(ms.size(), 1U);
  EXPECT_EQ(ms[0].tool, "tensorboard");
  EXPECT_EQ(ms[0].mode, "train");
  EXPECT_EQ(ms[0].unit, "samples/s");
  EXPECT_DOUBLE_EQ(ms[0].value, 123.5);
  EXPECT_EQ(ms[0].metric, "train/train_samples_per_second");
  EXPECT_EQ(ms[0].where, "ev:10");  // record 1 is the file version
  // TF's global_step/sec as TF 2 writes scalars (tensors): the median after the first, which holds the warm-up.
  std::vector<std::string> tf;
  for (int i = 0; i < 5; ++i) tf.push_back(event(1.7e9 + i, 100 * i, tensor_value("global_step/sec", i == 0 ? 1.f : 20.f + static_cast<float>(i))));
  ms = read_tfevents(events_file(tf), "ev");
  EXPECT_EQ(ms[0].unit, "steps/s");
  EXPECT_DOUBLE_EQ(ms[0].value, 22.5);  // of 21, 22, 23, 24
  tf = {event(1.7e9, 1, content_value("examples/sec", 4096.0))};
  EXPECT_DOUBLE_EQ(read_tfevents(events_file(tf), "ev")[0].value, 4096.0);
  // Keras with update_freq='batch': batch_loss every 10 steps; from the second event, 70 steps in 17.5 s.
  ms = read_tfevents(events_file(loss_series("batch_loss")), "ev");
  EXPECT_EQ(ms[0].unit, "steps/s");
  EXPECT_NEAR(ms[0].value, 4.0, 1e-9);
  EXPECT_NE(ms[0].metric.find("batch_loss: steps 20 to 80"), std::string::npos) << ms[0].metric;
}

TEST(TfEvents, AnythingElseIsRefusedNamingTheFileAndRecord) {
  const std::string good = events_file(loss_series("loss"));
  std::string damaged = good;
  damaged[damaged.size() - 10] ^= 0x20;
  std::string long_varint = events_file({pb::key(2, 0) + std::string(11, '\xff')});
  test::expect_refused(
      {{events_file({}), "ev: no training rate"},
       {events_file(loss_series("epoch_loss")), "ev: only per-epoch scalars (epoch_loss): an epoch's steps are not in the file"},
       {events_file(loss_series("val_loss")), "ev: no training rate"},
       {events_file(loss_series("loss", 2)), "ev: no training rate"},
       {damaged, "ev:9: the record's data CRC does not hold"},
       {good.substr(0, good.size() - 3), "ev:9: a record of"},
       {good.substr(0, 46), "ev:2: a truncated record at byte 40 (6 bytes left of a 12-byte header)"},
       {good.substr(0, 20), "ev:1: a record of 24 bytes at byte 0 runs past the end of the file"},
       {good + "x", "ev:10: a truncated record"},
       {frame(pb::len(3, "hello")) + good, "ev:1: the first record is not an event file's version record"},
       {long_varint, "ev:2: malformed Event: a varint longer than 10 bytes"},
       {events_file({pb::len(5, pb::len(1, pb::len(1, "loss") + pb::key(2, 2) + pb::varint(99)))}), "ev:2: malformed Event: a field of 99 bytes"},
       {events_file({event(1, 1, simple_value("examples/sec", -3.f))}), "ev:2: examples/sec is -3, not a positive rate"},
       {events_file({event(1, 1, simple_value("global_step/sec", std::nanf("")))}), "is nan, not a positive rate"},
       {"not an event file", "ev:1: the record's length CRC does not hold"},
       {events_file({event(1, 1, content_value("examples/sec", 1e300))}), "ev:2: examples/sec is 1e+300, not a positive rate (at most 1e+09)"},
       // Steps at the ends of int64 (a negative varint): the rate is worked in doubles, and 1.8e19 steps a second is refused.
       {events_file({event(1.0, INT64_MIN, simple_value("loss", 1)), event(2.0, INT64_MIN + 1, simple_value("loss", 1)),
                     event(3.0, INT64_MAX, simple_value("loss", 1))}),
        "ev:4: loss gives no step rate gpuvs can use"}},
      [](const std::string& t) { read_tfevents(t, "ev"); });
  EXPECT_FALSE(looks_like_tfevents("| model | size |\n"));
  EXPECT_FALSE(looks_like_tfevents(frame(pb::len(3, "hello"))));
  // A tag's control characters never reach a message or the figure's description raw.
  const auto ms = read_tfevents(events_file(loss_series("a\x1b[2J\nb/loss")), "ev");
  EXPECT_EQ(ms[0].metric.find('\x1b'), std::string::npos) << ms[0].metric;
  EXPECT_EQ(ms[0].metric.find('\n'), std::string::npos) << ms[0].metric;
}

TEST(TfEvents, FuzzedFilesReadOrFailInOneLine) {
  const auto read = [](const std::string& t, const std::string& w) {
    for (const auto& m : read_tfevents(t, w))
      if (!(m.value > 0) || m.mode != "train") throw std::logic_error("an unusable figure read");
  };
  // Bytes mutated as they lie (mostly the CRCs refuse them), and events mutated then framed again (the Event parser).
  std::vector<std::string> evs = loss_series("train/loss");
  evs.push_back(event(9, 9, tensor_value("global_step/sec", 3.f) + content_value("examples/sec", 2.0)));
  EXPECT_GE(test::fuzz_parser(events_file(evs), std::string("\x00\x01\x02\x08\x0a\x12\x1a\x2a\x3f\x7f\x80\xff", 12), 1500, 67, read), 0);
  std::mt19937_64 rng(71);
  int read_ok = 0;
  for (int round = 0; round < 3000; ++round) {
    std::vector<std::string> mutated = evs;
    std::string& e = mutated[rng() % mutated.size()];
    for (int k = 0, edits = 1 + static_cast<int>(rng() % 3); k < edits && !e.empty(); ++k) {
      const std::size_t pos = rng() % e.size();
      if (rng() % 2) e[pos] = static_cast<char>(rng());
      else e.erase(pos, 1 + rng() % 4);
    }
    try {
      read(events_file(mutated), "fuzz.toml");
      ++read_ok;
    } catch (const InputError& err) {
      EXPECT_EQ(std::string(err.what()).rfind("fuzz.toml", 0), 0U) << err.what();
      EXPECT_EQ(std::string(err.what()).find('\n'), std::string::npos) << err.what();
    }
  }
  EXPECT_GE(read_ok, 1);
}

#include "measured/nvbandwidth.hpp"

using measured::looks_like_nvbandwidth;
using measured::read_nvbandwidth;

namespace {
std::string nvbandwidth_fixture(const std::string& name) { return data_file("nvbandwidth", name); }
}  // namespace

TEST(Nvbandwidth, EachPricedTestcaseIsTheMedianOfItsMatrix) {
  // Azure's 8 x H100 node (tests/data/nvbandwidth/SOURCES.md): every pair of GPUs over NVSwitch, about 371 GB/s.
  const std::string h100 = nvbandwidth_fixture("h100x8-p2p-read-v0.4.txt");
  ASSERT_TRUE(looks_like_nvbandwidth(h100));
  auto ms = read_nvbandwidth(h100, "h.txt");
  ASSERT_EQ(ms.size(), 1U);
  EXPECT_EQ(ms[0].tool, "nvbandwidth");
  EXPECT_EQ(ms[0].mode, "micro");
  EXPECT_EQ(ms[0].workload, "p2p-copy");
  EXPECT_EQ(ms[0].metric, "device_to_device_memcpy_read_ce");
  EXPECT_EQ(ms[0].gpus, 2);
  EXPECT_EQ(ms[0].gpu, "NVIDIA H100 80GB HBM3");  // eight lines, one card
  EXPECT_EQ(ms[0].library_version, "v0.4");
  EXPECT_EQ(ms[0].where, "h.txt:20");
  EXPECT_EQ(ms[0].unit, "GB/s");
  EXPECT_EQ(ms[0].samples.size(), 56U);  // 8 x 8 less the diagonal's N/A
  EXPECT_DOUBLE_EQ(ms[0].value, 370.90);
  // A full run on one GH200: the copy-engine host-device testcases only; SM copies, bidirectional, all-to-one and
  // latency ones are read past.
  ms = read_nvbandwidth(nvbandwidth_fixture("gh200-all-v0.6.txt"), "g.txt");
  ASSERT_EQ(ms.size(), 2U);
  EXPECT_EQ(ms[0].workload, "h2d");
  EXPECT_EQ(ms[0].gpus, 1);
  EXPECT_NEAR(ms[0].value, (312.11 + 323.36) / 2, 1e-9);  // six figures: the mean of the middle two
  EXPECT_EQ(ms[1].workload, "d2h");
  EXPECT_NEAR(ms[1].value, (295.15 + 312.11) / 2, 1e-9);
  EXPECT_EQ(ms[1].gpu, "NVIDIA GH200 480GB");  // its bus ID left out
  // Releases before v0.5 print the diagonal as 0.00; a waived testcase prints no matrix.
  const std::string old = "Running device_to_device_memcpy_write_ce.\nmemcpy CE GPU(row) <- GPU(column) bandwidth (GB/s)\n"
                          "          0         1\n0      0.00    264.36\n1    264.60      0.00\n\nSUM device_to_device_memcpy_write_ce 528.96\n"
                          "Running device_to_device_memcpy_read_ce.\nWaived:\n";
  ASSERT_TRUE(looks_like_nvbandwidth(old));
  ms = read_nvbandwidth(old, "o.txt");
  ASSERT_EQ(ms.size(), 1U);
  EXPECT_NEAR(ms[0].value, 264.48, 1e-9);
  EXPECT_EQ(ms[0].gpu, "");  // no Device lines: the spec says it
}

TEST(Nvbandwidth, AnythingElseIsRefusedNamingTheFileLineAndField) {
  const std::string h100 = nvbandwidth_fixture("h100x8-p2p-read-v0.4.txt");
  const auto with = [&](const std::string& from, const std::string& to) {
    std::string t = h100;
    t.replace(t.find(from), from.size(), to);
    return t;
  };
  test::expect_refused(
      {{with("370.64", "fast"), "n.txt:23: device_to_device_memcpy_read_ce's figure 'fast' is not a positive bandwidth (GB/s)"},
       {with("370.64", "-3"), "n.txt:23: device_to_device_memcpy_read_ce's figure '-3' is not a positive bandwidth"},
       {with("370.64", "0.00"), "n.txt:23: device_to_device_memcpy_read_ce's figure '0.00'"},
       {with("370.64", "inf"), "figure 'inf'"},
       {with("4    370.38", "four    370.38"), "n.txt:27: device_to_device_memcpy_read_ce's row 'four"},
       {with("          0         1         2", "          a         1         2"), "n.txt:22: device_to_device_memcpy_read_ce's column indices"},
       {with("Running device_to_device_memcpy_read_ce.", "Running device_to_device_memcpy_read_sm."), "n.txt: no testcase gpuvs prices"},
       {"nvbandwidth Version: v0.8\n", "n.txt: no testcase gpuvs prices"},
       {with("0       N/A    370.90", "0       N/A    370.90    1.0"), "n.txt:23: device_to_device_memcpy_read_ce's row '0"},
       // 0.00 is the old diagonal only where the row meets its own column, and only between GPUs.
       {with("1    370.90       N/A    370.90", "1    370.90       N/A      0.00"), "n.txt:24: device_to_device_memcpy_read_ce's figure '0.00'"},
       {with("0       N/A    370.90", "0      0.00    0.00"), "n.txt:23: device_to_device_memcpy_read_ce's figure '0.00'"},
       {"Running host_to_device_memcpy_ce.\nmemcpy CE CPU(row) -> GPU(column) bandwidth (GB/s)\n 0\n 0  0.00\n", "n.txt:4: host_to_device_memcpy_ce's figure '0.00'"},
       {"Running host\x1b[2J_memcpy_ce.\nmemcpy CE CPU(row) -> GPU(column) bandwidth (GB/s)\n x\n", "n.txt:3: host\\x1b[2J_memcpy_ce's column indices"}},
      [](const std::string& t) { read_nvbandwidth(t, "n.txt"); });
  EXPECT_FALSE(looks_like_nvbandwidth("| model | size |\n"));
}

TEST(Nvbandwidth, FuzzedOutputsReadOrFailInOneLine) {
  const auto read = [](const std::string& t, const std::string& w) {
    for (const auto& m : read_nvbandwidth(t, w))
      if (!(m.value > 0) || m.mode != "micro" || m.gpus < 1 || m.workload.empty()) throw std::logic_error("an unusable figure read");
  };
  EXPECT_GE(test::fuzz_parser(nvbandwidth_fixture("h100x8-p2p-read-v0.4.txt"), "0123456789. \nN/A-RunigDevce:", 1500, 73, read), 1);
  EXPECT_GE(test::fuzz_parser(nvbandwidth_fixture("gh200-all-v0.6.txt"), "0123456789. \nN/A-RunigSUMWaved:()", 1500, 79, read), 1);
}
