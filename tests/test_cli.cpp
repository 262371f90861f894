// SPDX-License-Identifier: Apache-2.0
// The gpuvs binary end to end: exit codes 0/1/2, one-line errors, JSON on stdout, nothing half-written.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <nlohmann/json.hpp>
#include <algorithm>
#include <filesystem>
#include <map>
#include <set>
#include <sstream>
#include <utility>

// GCC 12 warns of a null dereference inside CLI11's ConfigBase::to_config when this large file's inlining reaches it
// (a false positive that comes and goes with unrelated tests): CLI11's header only.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wnull-dereference"
#include "cli/app.hpp"
#pragma GCC diagnostic pop
#include "core/error.hpp"
#include "core/files.hpp"
#include "perf/serving_engine.hpp"
#include "store/store.hpp"
#include "test_util.hpp"
#include "tfevent_builder.hpp"

using gpuvs::test::count_lines;
using gpuvs::test::run_gpuvs;
using gpuvs::test::run_gpuvs_json;
using gpuvs::test::TempDir;

namespace {
void expect_usage_error(const gpuvs::test::CommandResult& r, const std::string& needle) {
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_EQ(count_lines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find(needle), std::string::npos) << r.err;
}
const std::string kQuick = " --rows 600 --epochs 1 --threads 1 ";

std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(' ');
  return b == std::string::npos ? std::string() : s.substr(b, s.find_last_not_of(' ') - b + 1);
}

/// `gpuvs compare ARGS`: the table's columns line up on every line, wrapped cells hold their whole text
/// (checked against the same command's --json), and no word is cut.
void expect_compare_table_whole_and_aligned(const std::string& args) {
  SCOPED_TRACE(args);
  const auto r = run_gpuvs("compare " + args);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto doc = run_gpuvs_json("compare " + args + " --json");
  std::vector<std::string> ids, links, precisions;
  for (const auto& g : doc["gpus"]) {
    ids.push_back(g["gpu"]);
    links.push_back(g["link_2gpu"]);
    std::string p;
    for (const auto& x : g["precisions"]) p += (p.empty() ? "" : ", ") + x.get<std::string>();
    precisions.push_back(p);
  }
  ASSERT_GE(ids.size(), 2u);
  // The table: from the header row of GPU ids to the first blank line.
  std::vector<std::string> lines;
  {
    std::istringstream in(r.out);
    bool in_table = false;
    for (std::string line; std::getline(in, line);) {
      if (!in_table && line.find(ids[0]) != std::string::npos && line.find(ids[1]) != std::string::npos &&
          trim(line).rfind(ids[0], 0) == 0)
        in_table = true;
      if (!in_table) continue;
      if (line.empty()) break;
      lines.push_back(line);
    }
  }
  ASSERT_GT(lines.size(), 10u) << r.out;
  // Cells are right-aligned: each column ends where its GPU id ends in the header row.
  std::vector<std::size_t> ends;
  for (const auto& id : ids) {
    const auto at = lines[0].find(" " + id);
    ASSERT_NE(at, std::string::npos) << lines[0];
    ends.push_back(at + 1 + id.size());
    if (ends.size() > 1) {
      ASSERT_GT(ends[ends.size() - 1], ends[ends.size() - 2] + 1) << lines[0];
    }
  }
  for (const auto& line : lines) {
    EXPECT_LE(line.size(), ends.back()) << "runs past the last column: " << line;
    for (std::size_t i = 0; i + 1 < ends.size(); ++i) {
      if (line.size() > ends[i]) {
        EXPECT_EQ(line[ends[i]], ' ') << "text crosses from column " << i << " into the next: '" << line << "'";
      }
    }
    // A column with text on this line has it flush right against the column's end.
    for (std::size_t i = 1; i < ends.size(); ++i) {
      const std::string cell = line.size() > ends[i - 1] + 1 ? line.substr(ends[i - 1] + 1, ends[i] - ends[i - 1] - 1) : "";
      if (!trim(cell).empty()) {
        EXPECT_NE(line[ends[i] - 1], ' ') << "column " << i << " not flush right: '" << line << "'";
      }
    }
  }
  // A row and its continuation lines (blank label): each column's cell text, lines joined by a space.
  auto cells_of = [&](const std::string& label) {
    std::vector<std::string> cells(ids.size());
    std::size_t k = 0;
    while (k < lines.size() && lines[k].rfind("  " + label + " ", 0) != 0) ++k;
    EXPECT_LT(k, lines.size()) << "no row '" << label << "'";
    for (std::size_t first = k; k < lines.size() && (k == first || lines[k].rfind("   ", 0) == 0); ++k) {
      std::string line = lines[k];
      if (k == first) line.replace(2, label.size(), std::string(label.size(), ' '));
      line.resize(ends.back(), ' ');
      for (std::size_t i = 0; i < ids.size(); ++i) {
        const std::size_t begin = i == 0 ? 0 : ends[i - 1] + 1;
        const std::string part = trim(line.substr(begin, ends[i] - begin));
        if (!part.empty()) cells[i] += (cells[i].empty() ? "" : " ") + part;
      }
    }
    return cells;
  };
  EXPECT_EQ(cells_of("link between 2"), links);
  EXPECT_EQ(cells_of("precisions"), precisions);
  EXPECT_EQ(cells_of("ECC").size(), ids.size());
  // Every word of every link description appears whole; no line ends in a cut word.
  for (const auto& link : links) {
    std::istringstream words(link);
    for (std::string w; words >> w;) EXPECT_NE(r.out.find(w), std::string::npos) << w;
  }
  for (const auto& line : lines) {
    EXPECT_FALSE(line.size() >= 9 && line.compare(line.size() - 9, 9, "staged th") == 0) << line;
    EXPECT_EQ(line.find("staged th "), std::string::npos) << line;
    EXPECT_EQ(line.find("fp32,tf32"), std::string::npos) << line;
  }
}
}  // namespace

TEST(Cli, VersionAndHelp) {
  const auto v = run_gpuvs("--version");
  EXPECT_EQ(v.exit_code, 0);
  EXPECT_NE(v.out.find("gpuvs 0.1.0 (git "), std::string::npos) << v.out;
  EXPECT_NE(v.out.find("cuda:"), std::string::npos);
  const auto h = run_gpuvs("train --help");
  EXPECT_EQ(h.exit_code, 0);
  EXPECT_NE(h.out.find("--batch-size"), std::string::npos);
  EXPECT_EQ(run_gpuvs("graph --help").exit_code, 0);
  // The engines the help names are the engines there are (data/serving-engines.toml), in predict and advise alike.
  const auto ph = run_gpuvs("predict --help"), ah = run_gpuvs("advise --help");
  for (const auto& e : gpuvs::perf::builtin_engines()) {
    EXPECT_NE(ph.out.find(e.id), std::string::npos) << e.id;
    EXPECT_NE(ah.out.find(e.id), std::string::npos) << e.id;
  }
}

TEST(Cli, UsageErrorsExitTwo) {
  EXPECT_EQ(run_gpuvs("").exit_code, 2);
  expect_usage_error(run_gpuvs("frobnicate"), "error");
  expect_usage_error(run_gpuvs("train seed-mlp --epochs abc"), "--epochs");
  expect_usage_error(run_gpuvs("train seed-mlp --gemm mkl"), "--gemm 'mkl'");
  expect_usage_error(run_gpuvs("train seed-mlp --epochs 0"), "--epochs: 0 is out of range");
  expect_usage_error(run_gpuvs("train seed-mlp --lr -1"), "--lr");
  expect_usage_error(run_gpuvs("train seed-mlp --validation-split 1.5"), "--validation-split");
  expect_usage_error(run_gpuvs("train seed-mlp --rows 100000000000"), "needs");
}

TEST(Cli, UnknownWorkloadNamesClosest) {
  expect_usage_error(run_gpuvs("train seed-mpl"), "closest: seed-mlp");
}

TEST(Cli, TrainJsonSummaryOnStdoutProgressOnStderr) {
  const auto r = run_gpuvs("train seed-mlp --json" + kQuick);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(count_lines(r.out), 1);
  const auto j = nlohmann::json::parse(r.out);
  for (const char* key : {"samples_per_s", "step_time_median_s", "peak_memory_bytes", "loss", "accuracy", "val_loss",
                          "val_accuracy", "device", "threads"})
    EXPECT_TRUE(j.contains(key)) << key;
  EXPECT_EQ(j["device"], "cpu");
  EXPECT_EQ(j["threads"], 1);
  EXPECT_GT(j["samples_per_s"].get<double>(), 0);
  EXPECT_NE(r.err.find("Epoch 1/1"), std::string::npos);
  EXPECT_EQ(r.err.find('\r'), std::string::npos) << "not a terminal: plain lines, no redrawn bar";
}

TEST(Cli, ProfileReportsEveryWorkingOpWithGraphCosts) {
  const auto j = run_gpuvs_json("train seed-mlp --json --profile --batch-size 64" + kQuick);
  ASSERT_TRUE(j.contains("op_profile"));
  double matrix = 0;
  bool saw_adam = false;
  for (const auto& op : j["op_profile"]) {
    EXPECT_GE(op["seconds_per_step"].get<double>(), 0.0);
    matrix += op["matrix_flops"].get<double>();
    saw_adam = saw_adam || op["op"] == "adam_update";
  }
  EXPECT_TRUE(saw_adam);
  EXPECT_DOUBLE_EQ(matrix, 64.0 * (4.0 * 780 * 128 + 6.0 * 128 * 10));
}

TEST(Cli, TrainPlainOutputIsKerasLike) {
  TempDir dir;
  const auto r = run_gpuvs("train seed-mlp" + kQuick + "--logdir " + (dir / "logs").string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("Epoch 1/1"), std::string::npos);
  EXPECT_NE(r.out.find("[==============================]"), std::string::npos);
  EXPECT_NE(r.out.find("val_accuracy:"), std::string::npos);
  EXPECT_NE(r.out.find("samples/s"), std::string::npos);
  EXPECT_NE(r.out.find("median step"), std::string::npos);
  EXPECT_NE(r.out.find("peak memory"), std::string::npos);
  EXPECT_TRUE(std::filesystem::is_directory(dir / "logs" / "train"));
  EXPECT_TRUE(std::filesystem::is_directory(dir / "logs" / "validation"));
}

TEST(Cli, ModelFileErrorsNameFileAndLine) {
  TempDir dir;
  gpuvs::test::write_text(dir / "m.toml", "input_shape = [4]\n[[layers]]\ntype = \"dense\"\nunits = 3\nactivation = \"relux\"\n");
  expect_usage_error(run_gpuvs("train " + (dir / "m.toml").string()), "m.toml:5: unknown activation 'relux'");
}

TEST(Cli, DataThatDoesNotFitTheModel) {
  const std::string digits = std::string(GPUVS_TEST_DATA) + "/digits.csv.gz";
  expect_usage_error(run_gpuvs("train seed-mlp --data " + digits), "64 features per row, but model 'seed-mlp' expects 780");
  TempDir dir;
  gpuvs::test::write_text(dir / "m.toml",
                          "input_shape = [2]\n[[layers]]\ntype = \"dense\"\nunits = 3\nactivation = \"softmax\"\n");
  gpuvs::test::write_text(dir / "d.csv", "0.1,0.2,0\n0.3,0.4,12\n0.5,0.6,1\n");
  expect_usage_error(run_gpuvs("train " + (dir / "m.toml").string() + " --data " + (dir / "d.csv").string()),
                     "label 12 at row 1 is outside the model's 3 classes");
}

TEST(Cli, UnwritableLogdirCreatesNothing) {
  TempDir dir;
  gpuvs::test::write_text(dir / "file", "x");
  expect_usage_error(run_gpuvs("train seed-mlp" + kQuick + "--logdir " + (dir / "file" / "logs").string()),
                     "--logdir");
  EXPECT_EQ(gpuvs::test::slurp(dir / "file"), "x");
}

TEST(Cli, CorruptAndMismatchedCheckpointsExitTwoAndStayUntouched) {
  TempDir dir;
  const std::string ck = (dir / "ck").string();
  ASSERT_EQ(run_gpuvs("train seed-mlp" + kQuick + "--checkpoint " + ck).exit_code, 0);
  const auto file = dir / "ck" / "checkpoint.gpuvs";
  std::string bytes = gpuvs::test::slurp(file);
  bytes[bytes.size() / 2] ^= 0x40;
  gpuvs::test::write_text(file, bytes);
  expect_usage_error(run_gpuvs("train seed-mlp --rows 600 --epochs 2 --threads 1 --checkpoint " + ck + " --resume"),
                     "is corrupt");
  EXPECT_EQ(gpuvs::test::slurp(file), bytes);
  // A fresh run over a checkpoint replaces it only when told to (--force); without, the checkpoint stays.
  expect_usage_error(run_gpuvs("train seed-mlp" + kQuick + "--checkpoint " + ck), "holds a checkpoint already");
  EXPECT_EQ(gpuvs::test::slurp(file), bytes);
  ASSERT_EQ(run_gpuvs("train seed-mlp" + kQuick + "--checkpoint " + ck + " --force").exit_code, 0);
  const std::string good = gpuvs::test::slurp(file);
  expect_usage_error(run_gpuvs("train seed-mlp --rows 600 --epochs 2 --threads 1 --batch-size 16 --checkpoint " + ck +
                               " --resume"),
                     "--batch-size is 32 there, 16 here");
  EXPECT_EQ(gpuvs::test::slurp(file), good);
  const auto resumed = run_gpuvs("train seed-mlp --rows 600 --epochs 2 --threads 1 --checkpoint " + ck + " --resume");
  EXPECT_EQ(resumed.exit_code, 0) << resumed.err;
  EXPECT_NE(resumed.out.find("Epoch 2/2"), std::string::npos);
  EXPECT_EQ(resumed.out.find("Epoch 1/2"), std::string::npos);
}

TEST(Cli, CatalogListsShowsAndRejects) {
  const auto list = run_gpuvs("catalog --json");
  ASSERT_EQ(list.exit_code, 0) << list.err;
  EXPECT_EQ(nlohmann::json::parse(list.out)["gpus"].size(), 24u);
  const auto show = run_gpuvs("catalog show 4090 --json");
  ASSERT_EQ(show.exit_code, 0) << show.err;
  const auto g = nlohmann::json::parse(show.out);
  EXPECT_EQ(g["id"], "rtx-4090");
  EXPECT_DOUBLE_EQ(g["tensor_tflops"]["bf16_fp32acc"]["dense"].get<double>(), 165.2);
  EXPECT_FALSE(g["sources"].empty());
  const auto text = run_gpuvs("catalog show h100-sxm");
  EXPECT_NE(text.out.find("S10:"), std::string::npos);
  // The clock each card is priced at, and where it comes from: its own base clock, its chip's boards', or its rating.
  EXPECT_NE(text.out.find("base 1590 MHz"), std::string::npos) << text.out;
  const auto gh200 = run_gpuvs("catalog show gh200");
  EXPECT_NE(gh200.out.find("no sourced base clock of its own: as the GH100 boards"), std::string::npos) << gh200.out;
  EXPECT_NE(run_gpuvs("catalog show b200").out.find("no sourced base clock: peaks priced at their rated clock"), std::string::npos);
  expect_usage_error(run_gpuvs("catalog show rtx-4900"), "did you mean: rtx-4090");
  expect_usage_error(run_gpuvs("catalog show a100"), "ambiguous");
  TempDir dir;
  gpuvs::test::write_text(dir / "bad.toml", "[[gpu]]\nid = \"x\"\nname = 3\n");
  expect_usage_error(run_gpuvs("catalog --catalog " + (dir / "bad.toml").string()), "bad.toml:3: 'name' must be a string");
}

TEST(Cli, PredictJsonAndErrors) {
  const auto j = run_gpuvs_json("predict --workload bert-large --gpu a100-80gb-sxm --batch 16 --precision amp-fp16 --json");
  EXPECT_EQ(j["throughput"]["unit"], "sequences/s");
  EXPECT_GT(j["throughput"]["value"].get<double>(), 0);
  EXPECT_GT(j["step_time_s"].get<double>(), 0);
  EXPECT_LT(j["band"]["low"].get<double>(), j["throughput"]["value"].get<double>());
  EXPECT_GT(j["band"]["high"].get<double>(), j["throughput"]["value"].get<double>());
  for (const char* k : {"compute", "memory", "launch", "communication"}) EXPECT_TRUE(j["time_by_bound_s"].contains(k));
  EXPECT_TRUE(j["memory"]["fits"].get<bool>());
  EXPECT_NEAR(j["memory"]["capacity_gib"].get<double>(), 80 * 0.98, 1e-9);
  const auto tok = run_gpuvs("predict --workload llama-7b --gpu h100-sxm --batch 1 --json");
  ASSERT_EQ(tok.exit_code, 0) << tok.err;
  EXPECT_EQ(nlohmann::json::parse(tok.out)["throughput"]["unit"], "tokens/s");
  TempDir dir;
  gpuvs::test::write_text(dir / "tiny.toml",
                          "input_shape = [64]\n[[layers]]\ntype = \"dense\"\nunits = 10\nactivation = \"softmax\"\n");
  const auto file = run_gpuvs("predict --workload " + (dir / "tiny.toml").string() + " --gpu l4 --precision tf32 --json");
  ASSERT_EQ(file.exit_code, 0) << file.err;
  EXPECT_EQ(nlohmann::json::parse(file.out)["params"], 650);
  gpuvs::test::write_text(dir / "bad.toml", "input_shape = [64]\n[[layers]]\ntype = \"conv\"\n");
  expect_usage_error(run_gpuvs("predict --workload " + (dir / "bad.toml").string() + " --gpu l4"), "bad.toml:3");
  expect_usage_error(run_gpuvs("predict --workload resnet50 --gpu v100-sxm2-32gb --precision tf32"), "no TF32");
  expect_usage_error(run_gpuvs("predict --workload resnet50 --gpu rtx-4900"), "did you mean: rtx-4090");
  expect_usage_error(run_gpuvs("predict --workload resnet-50 --gpu rtx-4090"), "closest: resnet50");
  expect_usage_error(run_gpuvs("predict --workload bert-base --gpu rtx-4090 --options 'seq_len=99999'"), "seq_len");
  expect_usage_error(run_gpuvs("predict --workload bert-base --gpu rtx-4090 --precision fp64"), "unknown precision");
}

TEST(Cli, PredictSaysWhatTheFrameworkFusesTheAdaptersItAddsAndHowSamplesArePacked) {
  const std::string args = "predict --workload llama2-7b --gpu h100-sxm --gpus 8 --precision amp-fp8 --batch 1 "
                           "--options 'framework=nemo;finetune=lora;seq_len=4096;global_batch=32;sample_len=220'";
  const auto t = run_gpuvs(args);
  ASSERT_EQ(t.exit_code, 0) << t.err;
  EXPECT_NE(t.out.find("nemo profile (fuses fp8-shared-input-cast, fp8-norm-cast, fp8-activation-cast, attention-views)"), std::string::npos) << t.out;
  EXPECT_NE(t.out.find("fine-tuning  lora: rank-32 adapters on the query, key and value projections (lora_targets=qkv)"), std::string::npos) << t.out;
  EXPECT_NE(t.out.find("packing      samples of about 220 tokens packed into each 4096-token sequence"), std::string::npos) << t.out;
  const auto j = run_gpuvs_json(args + " --json");
  EXPECT_EQ(j["finetune"]["lora_targets"], "qkv");
  EXPECT_EQ(j["finetune"]["lora_rank"], 32);
  EXPECT_EQ(j["sample_len"], 220);
  EXPECT_EQ(j["framework"]["fuses"].size(), 4u);
  expect_usage_error(run_gpuvs("predict --workload llama2-7b --gpu h100-sxm --options 'sample_len=9000'"), "option sample_len=9000 is longer");
  expect_usage_error(run_gpuvs("predict --workload llama2-7b --gpu h100-sxm --options 'lora_targets=qkv'"), "option lora_targets needs finetune=lora");
  // Samples of a data set's lengths, each batch drawn from one bin and padded to its longest (NVIDIA's LDDL).
  const std::string binned = "predict --workload bert-large --gpu a100-80gb-sxm --batch 32 --options 'lengths=wikipedia-512;bin_size=64'";
  const auto b = run_gpuvs(binned);
  ASSERT_EQ(b.exit_code, 0) << b.err;
  EXPECT_NE(b.out.find("padding      samples of wikipedia-512 (256 real tokens on average) in batches drawn from bins of 64 lengths, each "
                       "padded to its longest sample: computed at 279 tokens a sequence on average, not 512"),
            std::string::npos)
      << b.out;
  EXPECT_NE(b.out.find("sequence 512 tokens (what lengths=wikipedia-512 was made for)"), std::string::npos) << b.out;
  const auto bj = run_gpuvs_json(binned + " --json");
  EXPECT_EQ(bj["padding"]["bin_size"], 64);
  EXPECT_NEAR(bj["padding"]["padded_tokens_mean"].get<double>(), 279, 1);
  EXPECT_EQ(bj["seq_len"], 512);
  expect_usage_error(run_gpuvs("predict --workload bert-large --gpu a100-80gb-sxm --options 'lengths=wikipedia-512'"), "option lengths needs bin_size=N");
  expect_usage_error(run_gpuvs("predict --workload bert-large --gpu a100-80gb-sxm --options 'lengths=wikipedia-512;bin_size=64;seq_len=384'"),
                     "holds samples made for 512 tokens; seq_len is 384");
  expect_usage_error(run_gpuvs("predict --workload bert-large --gpu a100-80gb-sxm --options 'lengths=books;bin_size=64'"), "unknown data set 'books'");
  // TensorRT builds inference engines.
  expect_usage_error(run_gpuvs("predict --workload bert-large --gpu a100-80gb-sxm --options 'framework=tensorrt'"),
                     "framework=tensorrt builds inference engines: --mode infer, not train");
  const auto trt = run_gpuvs("predict --workload bert-large --gpu a100-80gb-sxm --mode infer --precision fp16 --options 'framework=tensorrt'");
  ASSERT_EQ(trt.exit_code, 0) << trt.err;
  EXPECT_NE(trt.out.find("tensorrt profile (fuses add-norm, gemm-activation, attention-views, fused-qkv)"), std::string::npos) << trt.out;
}

TEST(Cli, PredictServesLlmsAndRefusesBadServingRequests) {
  const auto r = run_gpuvs("predict --workload llama3-70b --gpu h100-sxm --gpus 8 --mode infer --precision fp8 --options 'framework=trt-llm;tp=8' --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["throughput"]["unit"], "output tokens/s");
  EXPECT_EQ(j["engine"], "trt-llm");
  EXPECT_EQ(j["tp"], 8);
  EXPECT_TRUE(j["batch_chosen"].get<bool>());
  EXPECT_TRUE(j["memory_per_gpu_gib"]["fits"].get<bool>());
  const auto off = run_gpuvs("predict --workload llama3-70b --gpu rtx-4090 --mode decode --precision q4_k_m --options 'framework=llama.cpp'");
  ASSERT_EQ(off.exit_code, 0) << off.err;
  EXPECT_NE(off.out.find("blocks on the GPU"), std::string::npos) << off.out;
  expect_usage_error(run_gpuvs("predict --workload llama3-8b --gpu h100-sxm --mode decode --precision int3"), "weight format 'int3'");
  expect_usage_error(run_gpuvs("predict --workload llama3-8b --gpu h100-sxm --mode decode --options 'framework=lmdeploy'"), "engine 'lmdeploy'");
  expect_usage_error(run_gpuvs("predict --workload llama3-8b --gpu h100-sxm --mode infer --options 'seq_len=512'"), "prompt_len");
  // Quantization groups: only for grouped formats, a power of two, and said when taken by default.
  expect_usage_error(run_gpuvs("predict --workload llama3-8b --gpu h100-sxm --mode decode --precision bf16 --options group_size=64"),
                     "the bf16 format is not quantized in groups");
  expect_usage_error(run_gpuvs("predict --workload llama3-8b --gpu h100-sxm --mode decode --precision int4-awq --options group_size=48"),
                     "option group_size=48: expected a power of two");
  expect_usage_error(run_gpuvs("predict --workload llama3-8b --gpu h100-sxm --mode decode --precision int4-awq --options group_size=nan"),
                     "option group_size=nan");
  // EXL2's rate: a number from 2 to 8 bits a weight, only for EXL2.
  expect_usage_error(run_gpuvs("predict --workload llama2-7b --gpu rtx-4090 --mode decode --precision exl2 --options 'framework=exllamav2;bpw=nan'"),
                     "option bpw=nan");
  expect_usage_error(run_gpuvs("predict --workload llama2-7b --gpu rtx-4090 --mode decode --precision exl2 --options 'framework=exllamav2;bpw=1.5'"),
                     "option bpw=1.5: the exl2 format runs 2 to 8 bits a weight");
  expect_usage_error(run_gpuvs("predict --workload llama2-7b --gpu rtx-4090 --mode decode --precision int4-awq --options 'bpw=4'"),
                     "option bpw: the int4-awq format has fixed bits");
  const auto exl2 = run_gpuvs("predict --workload llama2-7b --gpu rtx-4090 --mode decode --precision exl2 --options framework=exllamav2");
  ASSERT_EQ(exl2.exit_code, 0) << exl2.err;
  EXPECT_NE(exl2.out.find("exl2 weights at 4 bits a weight (the format's default"), std::string::npos) << exl2.out;
  const auto grouped = run_gpuvs("predict --workload llama3-8b --gpu h100-sxm --mode decode --precision int4-gptq --options framework=vllm");
  ASSERT_EQ(grouped.exit_code, 0) << grouped.err;
  EXPECT_NE(grouped.out.find("int4-gptq weights in groups of 128 (the format's default"), std::string::npos) << grouped.out;
  expect_usage_error(run_gpuvs("predict --workload resnet50 --gpu h100-sxm --mode decode"), "prices decoders");
  expect_usage_error(run_gpuvs("predict --workload llama3-8b --gpu h100-sxm --mode serve"), "not a mode");
  expect_usage_error(run_gpuvs("advise --task infer --workload llama3-8b --engine lmdeploy"), "engine 'lmdeploy'");
  const auto cj = run_gpuvs_json("compare h100-sxm a100-80gb-sxm --workload llama3-8b --mode infer --precision bf16 --json");
  EXPECT_EQ(cj["gpus"][0]["throughput"]["unit"], "output tokens/s");
  EXPECT_LT(cj["gpus"][1]["ratio"].get<double>(), 1.0);
  expect_usage_error(run_gpuvs("compare h100-sxm --workload resnet50 --gpus-each 2"), "--gpus-each applies to LLM serving");
  // A request no card could serve is the request's error, not a finding per card.
  expect_usage_error(run_gpuvs("compare h100-sxm a100-80gb-sxm --workload llama3-8b --mode decode --precision bf16 --options group_size=32"),
                     "option group_size: the bf16 format is not quantized in groups");
  expect_usage_error(run_gpuvs("compare h100-sxm a100-80gb-sxm --workload llama3-8b --mode decode --options kv_dtype=xyz"), "option kv_dtype=xyz");
  expect_usage_error(run_gpuvs("compare h100-sxm a100-80gb-sxm --workload llama3-8b --mode decode --options gen_len=0"), "option gen_len=0");
  expect_usage_error(run_gpuvs("advise --workload llama3-8b --sla-tpot-ms 20"), "use --task infer");
}

TEST(Cli, AQuantizedHuggingFaceCheckpointIsServedAsItsWeights) {
  // A config.json with an AWQ quantization_config: serving prices int4-awq in the checkpoint's groups (not the 16-bit
  // model) and says where it read them; another format or grouping asked for is another model's (exit 2); training
  // says it prices the dequantized shape.
  TempDir dir;
  std::string config = gpuvs::files::read_all(std::string(GPUVS_SOURCE_DIR) + "/tests/data/hf/qwen2-7b/config.json", "test");
  config = config.substr(0, config.rfind('}')) + ", \"quantization_config\": {\"quant_method\": \"awq\", \"bits\": 4, \"group_size\": 64}}";
  gpuvs::test::write_text(dir / "config.json", config);
  const std::string model = (dir / "config.json").string();
  const auto j = run_gpuvs_json("predict --workload " + model + " --gpu rtx-4090 --mode decode --options framework=vllm --json");
  EXPECT_EQ(j["format"], "int4-awq");
  EXPECT_EQ(j["group_size"], 64);
  const auto text = run_gpuvs("predict --workload " + model + " --gpu rtx-4090 --mode decode --options framework=vllm");
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("as its quantization_config (quant_method awq, bits 4, group_size 64) says"), std::string::npos) << text.out;
  expect_usage_error(run_gpuvs("predict --workload " + model + " --gpu rtx-4090 --mode decode --precision fp8"), "--precision fp8 names other weights");
  expect_usage_error(run_gpuvs("predict --workload " + model + " --gpu rtx-4090 --mode decode --options group_size=128"),
                     "option group_size=128: " + model + " is quantized in groups of 64");
  const auto train = run_gpuvs("predict --workload " + model + " --gpu h100-sxm --options seq_len=1024");
  ASSERT_EQ(train.exit_code, 0) << train.err;
  EXPECT_NE(train.out.find("not its checkpoint's int4-awq in groups of 64 weights"), std::string::npos) << train.out;
  const auto advice = run_gpuvs("advise --task infer --workload " + model + " --gpu rtx-4090,l40s");
  ASSERT_EQ(advice.exit_code, 0) << advice.err;
  EXPECT_NE(advice.out.find("int4-awq in groups of 64 weights, as its quantization_config (quant_method awq, bits 4, group_size 64) says"),
            std::string::npos) << advice.out;
}

TEST(Cli, HuggingFaceConfigsAreWorkloads) {
  const std::string dir = std::string(GPUVS_SOURCE_DIR) + "/tests/data/hf/";
  const auto g = run_gpuvs("graph " + dir + "gemma-7b/config.json --batch 1 --mode eval");
  ASSERT_EQ(g.exit_code, 0) << g.err;
  EXPECT_NE(g.out.find("understood      GemmaForCausalLM"), std::string::npos) << g.out;
  EXPECT_NE(g.out.find("8537680896"), std::string::npos) << g.out;
  const auto t = run_gpuvs("predict --workload " + dir + "qwen2-7b/config.json --gpu h100-sxm --batch 1 --options seq_len=2048 --json");
  ASSERT_EQ(t.exit_code, 0) << t.err;
  EXPECT_EQ(nlohmann::json::parse(t.out)["params"], 7615616512);
  const auto s = run_gpuvs("predict --workload " + dir + "mixtral-8x7b-v0.1/config.json --gpu h100-sxm --gpus 2 --mode infer --options tp=2 --json");
  ASSERT_EQ(s.exit_code, 0) << s.err;
  EXPECT_EQ(nlohmann::json::parse(s.out)["throughput"]["unit"], "output tokens/s");
  TempDir tmp;
  gpuvs::test::write_text(tmp / "config.json", "{\"architectures\": [\"LlamaForCausalLM\"], \"hidden_size\": 64}");
  expect_usage_error(run_gpuvs("graph " + (tmp / "config.json").string()), "config.json: $.num_hidden_layers: missing");
  expect_usage_error(run_gpuvs("predict --gpu l4 --workload " + (tmp / "config.json").string()), "$.num_hidden_layers: missing");
}

TEST(Cli, KerasFilesTrainAndPrice) {
  const std::string k2 = std::string(GPUVS_SOURCE_DIR) + "/tests/data/keras/seed_keras2.json";
  const auto archive = run_gpuvs("train " + std::string(GPUVS_SOURCE_DIR) + "/tests/data/keras/seed.keras --epochs 1 --steps 5 --json");
  ASSERT_EQ(archive.exit_code, 0) << archive.err;
  const auto t = run_gpuvs("train " + k2 + " --epochs 1 --steps 5 --json");
  ASSERT_EQ(t.exit_code, 0) << t.err;
  const auto p = run_gpuvs("predict --workload " + k2 + " --gpu rtx-4090 --batch 32 --json");
  ASSERT_EQ(p.exit_code, 0) << p.err;
  EXPECT_EQ(nlohmann::json::parse(p.out)["params"], 101258);
  TempDir dir;
  gpuvs::test::write_text(dir / "conv.json", "{\"class_name\": \"Sequential\", \"config\": {\"layers\": [{\"class_name\": \"Conv2D\", "
                                             "\"config\": {\"name\": \"c1\", \"filters\": 8}}]}}");
  expect_usage_error(run_gpuvs("train " + (dir / "conv.json").string()), "layer 'c1' (Conv2D)");
  // A Keras convnet the engine cannot train is priced.
  const std::string cnn = std::string(GPUVS_SOURCE_DIR) + "/tests/data/keras/mnist_convnet.json";
  const auto c = run_gpuvs("predict --workload " + cnn + " --gpu l4 --batch 128 --precision amp-fp16 --json");
  ASSERT_EQ(c.exit_code, 0) << c.err;
  EXPECT_EQ(nlohmann::json::parse(c.out)["params"], 34826);
}

TEST(Cli, OnnxFilesArePricedWhereverAWorkloadGoes) {
  const std::string dir = std::string(GPUVS_SOURCE_DIR) + "/tests/data/onnx/";
  const auto g = run_gpuvs("graph " + dir + "tiny_gpt.onnx --options sequence=32 --batch 4 --mode eval");
  ASSERT_EQ(g.exit_code, 0) << g.err;
  EXPECT_NE(g.out.find("understood      ONNX model"), std::string::npos) << g.out;
  EXPECT_NE(g.out.find("2 attention as one FlashAttention kernel (causal)"), std::string::npos) << g.out;
  EXPECT_NE(g.out.find("169728"), std::string::npos) << g.out;
  const auto p = run_gpuvs("predict --workload " + dir + "small_cnn.onnx --gpu l4 --batch 64 --json");
  ASSERT_EQ(p.exit_code, 0) << p.err;
  EXPECT_EQ(nlohmann::json::parse(p.out)["params"], 25282);
  const auto c = run_gpuvs("compare h100-sxm rtx-4090 --workload " + dir + "tiny_encoder.onnx --options sequence=64 --json");
  ASSERT_EQ(c.exit_code, 0) << c.err;
  // A file exported with batch 1 is priced at batch 1: the default, the largest that fits, the advisor's.
  const auto f = run_gpuvs("compare l4 rtx-4090 --workload " + dir + "fixed_batch.onnx --json");
  ASSERT_EQ(f.exit_code, 0) << f.err;
  EXPECT_EQ(nlohmann::json::parse(f.out)["gpus"][0]["memory"]["max_batch"], 1);
  const auto a = run_gpuvs("advise --workload " + dir + "tiny_gpt.onnx --options sequence=64 --samples 1e8 --json");
  ASSERT_EQ(a.exit_code, 0) << a.err;
  EXPECT_FALSE(nlohmann::json::parse(a.out)["options"].empty());
  expect_usage_error(run_gpuvs("predict --workload " + dir + "tiny_gpt.onnx --gpu l4"), "symbolic dimension 'sequence' (input 'ids' dimension 1) needs a size");
  expect_usage_error(run_gpuvs("predict --workload " + dir + "tiny_gpt.onnx --gpu l4 --options 'sequence=32;width=3'"), "unknown key 'width'");
  expect_usage_error(run_gpuvs("predict --workload " + dir + "fixed_batch.onnx --gpu l4 --batch 8"), "the model's batch is fixed at 1");
  expect_usage_error(run_gpuvs("advise --workload " + dir + "small_cnn.onnx --options sequence=3"), "not a shape option of workload");
  expect_usage_error(run_gpuvs("train " + dir + "small_cnn.onnx"), "ONNX graphs are priced");
  TempDir tmp;
  gpuvs::test::write_text(tmp / "junk.onnx", "\x08\x07garbage");
  expect_usage_error(run_gpuvs("graph " + (tmp / "junk.onnx").string()), "junk.onnx: not an ONNX model");
}

// --calibrate-one: each row of a group taken as the user's own measurement; the table and the JSON say the same pairs.
TEST(Cli, ValidateCalibrateOneReportsTransferBesideFlatAndUncalibrated) {
  const std::string data = std::string(GPUVS_SOURCE_DIR) + "/data/validation/nvidia-dle-resnet50.csv";
  const auto r = run_gpuvs("validate --calibrate-one --data " + data);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("calibrated on one card, the others predicted"), std::string::npos) << r.out;
  const auto j = run_gpuvs("validate --calibrate-one --json --data " + data);
  ASSERT_EQ(j.exit_code, 0) << j.err;
  const auto doc = nlohmann::json::parse(j.out);
  const auto& one = doc["calibrate_one"];
  ASSERT_TRUE(one.is_object());
  const int pairs = one["all"]["pairs"];
  EXPECT_GT(pairs, 0);
  ASSERT_EQ(one["pairs"].size(), static_cast<std::size_t>(pairs));
  int inside = 0;
  for (const auto& p : one["pairs"]) {
    EXPECT_NE(p["from"], p["to"]);
    EXPECT_GT(p["transferred"].get<double>(), 0);
    // The band printed with a calibrated prediction surrounds it; in_band says whether the published value is in it.
    const double low = p["band_low"], high = p["band_high"], measured = p["measured"];
    EXPECT_LT(low, p["transferred"].get<double>());
    EXPECT_GT(high, p["transferred"].get<double>());
    EXPECT_EQ(p["in_band"].get<bool>(), measured >= low && measured <= high);
    inside += p["in_band"].get<bool>();
  }
  EXPECT_DOUBLE_EQ(one["all"]["in_band"].get<double>(), static_cast<double>(inside) / pairs);
  EXPECT_LE(one["all"]["transferred_spread"]["p10"].get<double>(), one["all"]["transferred_spread"]["p90"].get<double>());
  EXPECT_NE(r.out.find("inside the band printed with them"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(" " + std::to_string(pairs) + " "), std::string::npos);
  // Without the flag the JSON says it was not run.
  const auto plain = run_gpuvs("validate --json --data " + data);
  EXPECT_TRUE(nlohmann::json::parse(plain.out)["calibrate_one"].is_null());
}

// validate --measured: your own runs as rows, scored like the published ones. A real 8 x A100 nccl-tests run is the
// NCCL model's check on data it never saw (tests/data/nccl-tests/SOURCES.md); the same file is refused where it would
// calibrate a stack, and validate without rows says so.
TEST(Cli, ValidateScoresYourOwnRunsBesideThePublishedOnes) {
  const std::string nccl = std::string(GPUVS_TEST_DATA) + "/nccl-tests/a100-8gpu-allreduce.txt";
  const auto j = run_gpuvs("validate --json --measured " + nccl + " --measured " + std::string(GPUVS_TEST_DATA) +
                           "/llama-bench/rtx3090-qwen2.5-coder-32b.md --measured "
                           "'gpu=rtx-3090;workload=resnet50;mode=train;precision=amp-fp16;batch=128;value=700 images/s'");
  ASSERT_EQ(j.exit_code, 0) << j.err;
  const auto doc = nlohmann::json::parse(j.out);
  ASSERT_EQ(doc["rows"].size(), 4u);
  const auto& a100 = doc["rows"][0];
  EXPECT_EQ(a100["status"], "ok") << a100;
  EXPECT_EQ(a100["unit"], "GB/s busbw");
  EXPECT_DOUBLE_EQ(a100["measured"].get<double>(), 233.0);
  EXPECT_NEAR(a100["predicted"].get<double>() / 233.0, 1.0, 0.10);  // NCCL's protocol model on NVSwitch, at 10 GiB
  for (std::size_t i = 1; i < 4; ++i) EXPECT_EQ(doc["rows"][i]["status"], "ok") << doc["rows"][i];
  EXPECT_EQ(doc["rows"][3]["unit"], "images/s");
  for (const auto& [args, expect] : std::vector<std::pair<std::string, std::string>>{
           {"validate", "no rows (give --data FILE|FOLDER or --measured FILE|SPEC)"},
           {"compare rtx-3090 a100-80gb-sxm --measured " + nccl, "nccl-tests figures (collectives, links) calibrate no stack yet"}}) {
    const auto bad = run_gpuvs(args);
    EXPECT_EQ(bad.exit_code, 2) << args << "\n" << bad.err;
    EXPECT_NE(bad.err.find(expect), std::string::npos) << args << "\n" << bad.err;
    EXPECT_EQ(count_lines(bad.err), 1) << bad.err;
  }
}

TEST(Cli, ValidateTableAndJson) {
  const std::string data = std::string(GPUVS_SOURCE_DIR) + "/data/validation/lambda-pytorch-2023.csv";
  const auto r = run_gpuvs("validate --data " + data);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("median absolute error"), std::string::npos);
  const auto j = run_gpuvs("validate --json --data " + data);
  ASSERT_EQ(j.exit_code, 0);
  const auto doc = nlohmann::json::parse(j.out);
  EXPECT_EQ(doc["schema_version"], 2);
  const auto& arr = doc["rows"];
  ASSERT_EQ(arr.size(), 72u);
  for (const char* k : {"id", "file", "predicted", "unit", "per", "status", "reason", "batch_per_gpu"}) EXPECT_TRUE(arr[0].contains(k)) << k;
  ASSERT_EQ(doc["sources"].size(), 1u);
  EXPECT_EQ(doc["sources"][0]["file"], "lambda-pytorch-2023");
  // The folder: every source file, each with its own line; unsupported rows say why.
  const auto all = run_gpuvs("validate --data " + std::string(GPUVS_SOURCE_DIR) + "/data/validation");
  ASSERT_EQ(all.exit_code, 0) << all.err;
  for (const char* f : {"lambda-pytorch-2023", "megatron-ptdp-2021", "nemo-24.07", "nvidia-dle-resnet50", "micro"})
    EXPECT_NE(all.out.find(f), std::string::npos) << f;
  EXPECT_NE(all.out.find("MEG-005"), std::string::npos) << all.out;
  EXPECT_NE(all.out.find("NEMO-006"), std::string::npos) << all.out;
  EXPECT_EQ(all.out.find("not predicted"), std::string::npos) << "every published row is priced";
  EXPECT_NE(all.out.find("MAMF-004"), std::string::npos);
  EXPECT_EQ(all.out.find("not predicted: mode 'micro'"), std::string::npos) << "micro rows are priced";
  expect_usage_error(run_gpuvs("validate --data /nonexistent.csv"), "--data /nonexistent.csv: no such file");
}

TEST(Cli, CompareAnswersTheSeedQuestion) {
  const auto r = run_gpuvs("compare");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("RTX 4090 or A100 80GB SXM"), std::string::npos);
  EXPECT_NE(r.out.find("[refuted]"), std::string::npos);
  const auto doc = run_gpuvs_json("compare h100-sxm 4090 --workload bert-base --precision amp-fp16 --batch 16 --json");
  EXPECT_EQ(doc["gpus"].size(), 2u);
  EXPECT_EQ(doc["gpus"][1]["gpu"], "rtx-4090");
  expect_usage_error(run_gpuvs("compare h100-sxm v100-sxm2-32gb --precision tf32"), "no TF32");
  expect_usage_error(run_gpuvs("compare h100-sxm"), "at least two GPUs");
}

// One question, one answer: a precision a card lacks is priced at the nearest it runs, and said, by predict, compare,
// advise and evaluate alike (they refused, showed the card as unable, or fell back, each its own way); serving's
// default weights follow the default rule on a card without BF16 (predict refused a T4 its default).
TEST(Cli, APrecisionACardLacksIsPricedAtTheNearestItRunsByEveryCommand) {
  const auto p = run_gpuvs_json("predict --workload bert-large --gpu a100-80gb-sxm --precision amp-fp8 --json");
  EXPECT_EQ(p["precision"], "amp-fp16");
  EXPECT_NE(p["assumed"].dump().find("precision amp-fp16 (the nearest to amp-fp8 that a100-80gb-sxm runs)"), std::string::npos) << p["assumed"];
  const auto c = run_gpuvs_json("compare h100-sxm a100-80gb-sxm --workload bert-large --precision amp-fp8 --json");
  EXPECT_EQ(c["gpus"][0]["precision"], "amp-fp8");
  EXPECT_EQ(c["gpus"][1]["precision"], "amp-fp16");
  EXPECT_DOUBLE_EQ(c["gpus"][1]["throughput"]["value"].get<double>(), p["throughput"]["value"].get<double>());
  EXPECT_NE(c["assumed"].dump().find("precision amp-fp16 (the nearest to amp-fp8 that a100-80gb-sxm runs)"), std::string::npos) << c["assumed"];
  const auto a = run_gpuvs_json("advise --workload bert-large --gpu a100-80gb-sxm --precision amp-fp8 --json");
  int same = 0;
  for (const auto& o : a["options"])
    if (o["count"] == 1 && o["strategy"] == "single" && o["batch"] == p["batch"]) {
      EXPECT_EQ(o["precision"], "amp-fp16 (the nearest to amp-fp8 that a100-80gb-sxm runs)");
      EXPECT_DOUBLE_EQ(o["throughput"].get<double>(), p["throughput"]["value"].get<double>());
      ++same;
    }
  EXPECT_EQ(same, 1) << a["options"].dump().substr(0, 400);
  // Serving: fp8 weights on an Ampere card are its fp16 weights, said, in predict and compare as in advise.
  const auto s = run_gpuvs_json("predict --workload llama3-8b --gpu a100-80gb-sxm --mode infer --precision fp8 --json");
  EXPECT_EQ(s["format"], "fp16");
  EXPECT_NE(s["assumed"].dump().find("weights fp16 (the nearest to fp8 weights that a100-80gb-sxm runs)"), std::string::npos) << s["assumed"];
  const auto cs = run_gpuvs_json("compare h100-sxm a100-80gb-sxm --workload llama3-8b --mode infer --precision fp8 --json");
  EXPECT_EQ(cs["gpus"][0]["format"], "fp8");
  EXPECT_EQ(cs["gpus"][1]["format"], "fp16");
  EXPECT_TRUE(cs["gpus"][1].contains("format_note"));
  EXPECT_FALSE(cs["gpus"][0].contains("format_note"));
  EXPECT_DOUBLE_EQ(cs["gpus"][1]["throughput"]["value"].get<double>(), s["throughput"]["value"].get<double>());
  const auto as = run_gpuvs_json("advise --task infer --workload llama3-8b --gpu a100-80gb-sxm --precision fp8 --json");
  ASSERT_FALSE(as["ranked"].empty());
  EXPECT_NE(as["ranked"][0]["reason"].get<std::string>().find(", the nearest to fp8 weights that a100-80gb-sxm runs, $"), std::string::npos)
      << as["ranked"][0]["reason"];
  EXPECT_NE(as["ranked"][0]["reason"].get<std::string>().find("(vllm engine, fp16 weights, "), std::string::npos)
      << as["ranked"][0]["reason"];
  const auto table = run_gpuvs("compare h100-sxm a100-80gb-sxm --workload llama3-8b --mode infer --precision fp8");
  ASSERT_EQ(table.exit_code, 0) << table.err;
  EXPECT_NE(table.out.find("a100-80gb-sxm: fp16 weights (the nearest to fp8 weights that a100-80gb-sxm runs)"), std::string::npos) << table.out;
  EXPECT_EQ(table.out.find("cannot serve it"), std::string::npos) << table.out;
  // The headers say the weights as every card served them: the nearest where all lack them, by card where they differ.
  const auto all_lack = run_gpuvs("compare t4 v100-sxm2-32gb --workload mpt-1b --mode infer --precision bf16");
  ASSERT_EQ(all_lack.exit_code, 0) << all_lack.err;
  EXPECT_NE(all_lack.out.find("(fp16 weights, the nearest to bf16 these cards run,"), std::string::npos) << all_lack.out;
  const auto by_card = run_gpuvs("compare t4 l4 --workload mpt-1b --mode infer");
  EXPECT_NE(by_card.out.find("(weights by card, the default rule's 16-bit ones (bf16, fp16 on a card without BF16),"), std::string::npos)
      << by_card.out;
  // advise rules out a card with no such fallback, naming the math it lacks.
  const auto tf32 = run_gpuvs_json("advise --workload bert-large --gpu v100-sxm2-32gb --precision tf32 --json");
  ASSERT_EQ(tf32["ruled_out"].size(), 1u);
  EXPECT_NE(tf32["ruled_out"][0]["reason"].get<std::string>().find("has no TF32 tensor math"), std::string::npos) << tf32["ruled_out"][0];
  // No --precision on a card without BF16: the default rule's fp16 weights, not a refusal.
  const auto t4 = run_gpuvs_json("predict --workload mpt-1b --gpu t4 --mode infer --json");
  EXPECT_EQ(t4["format"], "fp16");
  const auto ct4 = run_gpuvs_json("compare t4 l4 --workload mpt-1b --mode infer --json");
  EXPECT_EQ(ct4["gpus"][0]["format"], "fp16");
  EXPECT_EQ(ct4["gpus"][1]["format"], "bf16");
  EXPECT_DOUBLE_EQ(ct4["gpus"][0]["throughput"]["value"].get<double>(), t4["throughput"]["value"].get<double>());
  // advise with no --precision says the default rule on such a card as predict says it (it said "the nearest to
  // amp-bf16", a precision nobody named); a named amp-bf16 is the nearest to it.
  const std::string rule = "amp-fp16 (the default rule: amp-bf16; amp-fp16 on a card without BF16)";
  const auto pt4 = run_gpuvs_json("predict --workload bert-large --gpu t4 --json");
  EXPECT_NE(pt4["assumed"].dump().find("precision " + rule), std::string::npos) << pt4["assumed"];
  const auto at4 = run_gpuvs_json("advise --workload bert-large --gpu t4 --json");
  int priced = 0;
  for (const auto& o : at4["options"]) {
    EXPECT_EQ(o["precision"], rule);
    if (o["count"] == 1 && o["strategy"] == "single") {  // predict's figure at the batch advise chose
      const auto at = run_gpuvs_json("predict --workload bert-large --gpu t4 --json --batch " + std::to_string(o["batch"].get<int>()));
      EXPECT_DOUBLE_EQ(o["throughput"].get<double>(), at["throughput"]["value"].get<double>());
      ++priced;
    }
  }
  EXPECT_EQ(priced, 1) << at4["options"].dump().substr(0, 400);
  EXPECT_EQ(run_gpuvs("advise --workload bert-large --gpu t4").out.rfind("train bert-large (amp-bf16; amp-fp16 on a card without BF16)", 0), 0u);
  const auto named_bf16 = run_gpuvs_json("advise --workload bert-large --gpu t4 --precision amp-bf16 --json");
  ASSERT_FALSE(named_bf16["options"].empty());
  EXPECT_EQ(named_bf16["options"][0]["precision"], "amp-fp16 (the nearest to amp-bf16 that t4 runs)");
  // A card that runs neither the precision nor a fallback is still refused, naming what it lacks.
  expect_usage_error(run_gpuvs("predict --workload bert-large --gpu v100-sxm2-32gb --precision tf32"), "no TF32");
  expect_usage_error(run_gpuvs("compare a100-80gb-sxm v100-sxm2-32gb --workload bert-large --precision tf32"), "no TF32");
}

// An old stack on a new card (issue 34 mechanism 3): predict and compare give the same figure and both say why the
// newer card is priced lower than its peaks suggest; the older card, whose kernels were native then, says nothing.
TEST(Cli, AnOldStackOnANewCardIsSaidByPredictAndCompare) {
  const std::string shape = " --workload gpt --options 'framework=megatron;layers=12;hidden=1024;heads=16;seq_len=1024'";
  const auto p = run_gpuvs_json("predict --gpu h100-sxm" + shape + " --json");
  ASSERT_EQ(p["framework"]["maturity"].size(), 1u);
  EXPECT_NE(p["framework"]["maturity"][0].get<std::string>().find("predates Hopper's native matrix kernels"), std::string::npos);
  const auto text = run_gpuvs("predict --gpu h100-sxm" + shape);
  EXPECT_NE(text.out.find("  software     megatron (2021-04) predates"), std::string::npos) << text.out;
  const auto c = run_gpuvs_json("compare h100-sxm a100-80gb-sxm" + shape + " --json");
  EXPECT_EQ(c["gpus"][0]["maturity"], p["framework"]["maturity"]);
  EXPECT_TRUE(c["gpus"][1]["maturity"].empty());
  EXPECT_DOUBLE_EQ(c["gpus"][0]["throughput"]["value"].get<double>(), p["throughput"]["value"].get<double>());
  const auto ct = run_gpuvs("compare h100-sxm a100-80gb-sxm" + shape);
  EXPECT_NE(ct.out.find("On h100-sxm: megatron (2021-04) predates"), std::string::npos) << ct.out;
  expect_usage_error(run_gpuvs("predict --gpu h100-sxm" + shape.substr(0, shape.size() - 1) + ";release=2021'"),
                     "option release must be a month as YYYY-MM, got '2021'");
}

// compare's costs are priced at the advisor's assumptions, overridden by the same flags.
TEST(Cli, CompareCostsFollowTheAdvisorsAssumptionsAndFlags) {
  const auto def = run_gpuvs_json("compare rtx-4090 a100-80gb-sxm --json");
  EXPECT_DOUBLE_EQ(def["cost_assumptions"]["utilization"].get<double>(), 0.5);
  const auto own = [](const nlohmann::json& doc) { return doc["gpus"][0]["owned_usd_per_million"].get<double>(); };
  const double hours = def["gpus"][0]["hours_per_million"].get<double>();
  EXPECT_NEAR(own(def), hours * (1599.0 / (3 * 8760.0 * 0.5) + 0.450 * 1.3 * 0.15), 1e-9 * own(def));
  const auto full = run_gpuvs_json("compare rtx-4090 a100-80gb-sxm --utilization 1 --electricity 0.3 --assume rent.rtx-4090=0.5 --json");
  EXPECT_NEAR(own(full), hours * (1599.0 / (3 * 8760.0) + 0.450 * 1.3 * 0.3), 1e-9 * own(full));
  EXPECT_NEAR(full["gpus"][0]["usd_per_million"].get<double>(), hours * 0.5, 1e-9 * hours);
  const auto text = run_gpuvs("compare rtx-4090 a100-80gb-sxm --utilization 0.25");
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("at 25% utilization"), std::string::npos) << text.out;
  expect_usage_error(run_gpuvs("compare rtx-4090 a100-80gb-sxm --assume electricty_usd_per_kwh=0.2"), "did you mean 'electricity_usd_per_kwh'");
  expect_usage_error(run_gpuvs("compare rtx-4090 a100-80gb-sxm --utilization 0"), "--utilization");
  const auto serving = run_gpuvs_json("compare h100-sxm a100-80gb-sxm --workload llama3-8b --mode infer --precision bf16 --utilization 1 --json");
  EXPECT_DOUBLE_EQ(serving["cost_assumptions"]["utilization"].get<double>(), 1.0);
}

TEST(Cli, CompareTableWrapsCellsWholeAndKeepsColumnsAligned) {
  expect_compare_table_whole_and_aligned("");
  expect_compare_table_whole_and_aligned("h100-sxm l40s rtx-4090 a100-40gb-pcie --workload bert-large --precision amp-bf16 --batch 16");
  const auto r = run_gpuvs("compare h100-sxm l40s rtx-4090 a100-40gb-pcie --workload bert-large --precision amp-bf16 --batch 16");
  // The RTX 4090's link wraps after "staged", between words.
  EXPECT_NE(r.out.find("PCIe gen 4 x16 staged "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(" through host memory (no "), std::string::npos) << r.out;
}

TEST(Cli, DevicesListsTheCpuAndSaysWhatOfGpus) {
  const auto j = run_gpuvs_json("devices --json");
  EXPECT_GE(j["cpu"]["cores"].get<int>(), 1);
  EXPECT_FALSE(j["cpu"]["features"].empty());
  const std::string status = j["nvidia"]["status"];
  EXPECT_TRUE(status == "ok" || status == "no-driver" || status == "no-device" || status == "error");
  if (status != "ok") {
    EXPECT_FALSE(j["nvidia"]["detail"].get<std::string>().empty());
  }
  const auto text = run_gpuvs("devices");
  EXPECT_EQ(text.exit_code, 0);
  EXPECT_NE(text.out.find("CPU  "), std::string::npos);
  EXPECT_NE(text.out.find("GPU  "), std::string::npos);
}

TEST(Cli, BenchFormatsAndBadKeys) {
  const auto j = run_gpuvs_json("bench --quick --threads 1 --only cpu.stream.triad -o json");
  ASSERT_EQ(j["results"].size(), 1u);
  EXPECT_EQ(j["results"][0]["status"], "ok");
  const auto md = run_gpuvs("bench --quick --threads 1 --only cpu.stream.copy -o md");
  EXPECT_NE(md.out.find("|---|"), std::string::npos);
  expect_usage_error(run_gpuvs("bench --only cpu.nothing"), "valid: cpu.stream.copy");
  expect_usage_error(run_gpuvs("bench -o xml"), "--output: xml not in");
  expect_usage_error(run_gpuvs("bench --device -1 --only cpu.stream.copy"), "--device: -1 is out of range");
}

TEST(Cli, BenchSavesItsRecordAtomically) {
  gpuvs::test::TempDir dir;
  const auto file = dir / "bench.json";
  const auto r = run_gpuvs("bench --quick --threads 1 --only cpu.stream.copy,cuda.mem.read --save " + file.string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(gpuvs::test::slurp(file));
  EXPECT_EQ(j["schema_version"], 2);
  ASSERT_EQ(j["results"].size(), 2u);
  EXPECT_EQ(j["results"][0]["device"], "cpu");
  EXPECT_TRUE(j["results"][0]["pct_of_spec"].is_null());  // no catalog spec for CPUs
  EXPECT_FALSE(j["machine"]["cpu"].get<std::string>().empty());
  EXPECT_NE(r.out.find("saved to"), std::string::npos);
  // Unwritable destination: exit 2 before anything runs, nothing written.
  const auto bad = run_gpuvs("bench --quick --only cpu.stream.copy --save /proc/gpuvs/bench.json");
  expect_usage_error(bad, "--save");
  EXPECT_FALSE(std::filesystem::exists("/proc/gpuvs"));
  expect_usage_error(run_gpuvs("bench --quick --only cpu.stream.copy --save " + dir.path().string()), "is a directory");
}

TEST(Cli, BenchDeviceMustExist) {
  const auto r = run_gpuvs("bench --device 7 --only cuda.mem.read");
  expect_usage_error(r, "--device 7");
}

TEST(Cli, GraphCommandReportsCosts) {
  // The gpt workload takes its shape from --options (Megatron's 1.7 B); the shape belongs to gpt alone.
  const auto gpt = run_gpuvs("graph gpt --options 'layers=24;hidden=2304;heads=24' --batch 1 --json");
  ASSERT_EQ(gpt.exit_code, 0) << gpt.err;
  EXPECT_EQ(nlohmann::json::parse(gpt.out)["params"], 1652230656);
  expect_usage_error(run_gpuvs("graph gpt"), "layers, hidden, heads missing");
  expect_usage_error(run_gpuvs("graph resnet50 --options 'layers=2'"), "gpt workload and an ONNX file's dimensions only");
  const auto j = run_gpuvs_json("graph seed-mlp --batch 1024 --json");
  EXPECT_DOUBLE_EQ(j["total"]["matrix_flops"].get<double>(), 1024.0 * (4.0 * 780 * 128 + 6.0 * 128 * 10));
  EXPECT_EQ(j["params"], 101258);
  expect_usage_error(run_gpuvs("graph seed-mlp --mode sideways"), "--mode 'sideways'");
}

TEST(Cli, PredictWithCalibrationFromABenchRecord) {
  TempDir dir;
  const auto rec = dir / "bench.json";
  gpuvs::test::write_text(rec, R"J({"schema_version": 2, "quick": false, "results": [
    {"key": "cuda.gemm.bf16", "unit": "TFLOP/s", "status": "ok", "median": 600.0, "device": "cuda:0 NVIDIA H200 (h200-sxm)"},
    {"key": "cuda.mem.copy", "unit": "GB/s", "status": "ok", "median": 4200.0, "device": "cuda:0 NVIDIA H200 (h200-sxm)"},
    {"key": "cpu.stream.triad", "unit": "GB/s", "status": "ok", "median": 60.0, "device": "cpu"}]})J");
  const auto j = run_gpuvs_json("predict --workload resnet50 --gpu h200 --json --calibration " + rec.string());
  EXPECT_TRUE(j["calibration"]["applied"].get<bool>());
  EXPECT_EQ(j["calibration"]["measured_on"], "h200-sxm");
  ASSERT_EQ(j["calibration"]["classes"].size(), 2u);
  EXPECT_LT(j["calibration"]["classes"][0]["measured_over_predicted"].get<double>(), 0.85);
  const auto plain = nlohmann::json::parse(run_gpuvs("predict --workload resnet50 --gpu h200 --json").out);
  EXPECT_LT(j["throughput"]["value"].get<double>(), plain["throughput"]["value"].get<double>());
  // Serving says it too (it was applied without a word).
  const auto served = run_gpuvs_json("predict --workload llama3-8b --gpu h200 --mode infer --json --calibration " + rec.string());
  EXPECT_TRUE(served["calibration"]["applied"].get<bool>());
  EXPECT_NE(run_gpuvs("predict --workload llama3-8b --gpu h200 --mode infer --calibration " + rec.string()).out.find("calibration  from"),
            std::string::npos);
  // advise takes the same record and prices the card it measured as predict does (evaluate hands its own run's in).
  const auto adv = run_gpuvs_json("advise --workload resnet50 --gpu h200,h100-sxm --json --calibration " + rec.string());
  int same = 0;
  for (const auto& o : adv["options"])
    if (o["gpu"] == "h200-sxm" && o["count"] == 1 && o["strategy"] == "single" && o["batch"] == j["batch"]) {
      EXPECT_DOUBLE_EQ(o["throughput"].get<double>(), j["throughput"]["value"].get<double>());
      ++same;
    }
  EXPECT_EQ(same, 1) << adv["options"].dump().substr(0, 400);
  EXPECT_NE(adv["assumed"].dump().find("h200-sxm's options corrected by what was measured on it"), std::string::npos) << adv["assumed"];
  const auto h100 = run_gpuvs_json("predict --workload resnet50 --gpu h100-sxm --json --calibration " + rec.string());
  for (const auto& o : adv["options"])
    if (o["gpu"] == "h100-sxm" && o["count"] == 1 && o["strategy"] == "single" && o["batch"] == h100["batch"]) {
      EXPECT_DOUBLE_EQ(o["throughput"].get<double>(), h100["throughput"]["value"].get<double>());  // not the card it measured
      ++same;
    }
  EXPECT_EQ(same, 2);
  expect_usage_error(run_gpuvs("advise --workload resnet50 --calibration " + (dir / "missing.json").string()), "--calibration");
  // Bad records: one line, exit 2, naming the file.
  const auto empty = dir / "empty.json";
  gpuvs::test::write_text(empty, R"({"schema_version": 2, "results": []})");
  expect_usage_error(run_gpuvs("predict --gpu h200 --calibration " + empty.string()), "no GPU figures");
  const auto junk = dir / "junk.json";
  gpuvs::test::write_text(junk, "{not json");
  expect_usage_error(run_gpuvs("predict --gpu h200 --calibration " + junk.string()), "malformed JSON at byte");
  // Found by fuzz_bench_record: a number past double's range escaped as nlohmann's out_of_range.
  gpuvs::test::write_text(junk, R"({"schema_version": 2, "results": [{"median": 25276E10208}]})");
  expect_usage_error(run_gpuvs("predict --gpu h200 --calibration " + junk.string()), "unreadable JSON");
  // Found by fuzz_bench_record's tree mutator: a "quick" that is not a boolean escaped as nlohmann's type_error.
  gpuvs::test::write_text(junk, R"({"schema_version": 2, "quick": 1, "results": []})");
  expect_usage_error(run_gpuvs("predict --gpu h200 --calibration " + junk.string()), "'quick' must be true or false");
  // Found in review: a device naming a GPU the catalog lacks was the catalog's error, not naming the file; one
  // naming no id at all escaped the two-devices check.
  gpuvs::test::write_text(junk, R"J({"schema_version": 2, "results": [{"key": "cuda.gemm.fp32", "unit": "TFLOP/s", "status": "ok", "median": 1, "device": "cuda:0 X (nosuch)"}]})J");
  expect_usage_error(run_gpuvs("predict --gpu h200 --calibration " + junk.string()), junk.string() + ": unknown GPU 'nosuch'");
  gpuvs::test::write_text(junk, R"J({"schema_version": 2, "results": [{"key": "cuda.gemm.fp32", "unit": "TFLOP/s", "status": "ok", "median": 1, "device": "cuda:0 X ()"}]})J");
  expect_usage_error(run_gpuvs("predict --gpu h200 --calibration " + junk.string()), "result 'cuda.gemm.fp32' names no catalog id in its device 'cuda:0 X ()'");
  expect_usage_error(run_gpuvs("predict --gpu h200 --calibration " + (dir / "missing.json").string()), "--calibration");
}

TEST(Cli, AdviseRanksAndRefusesContradictions) {
  const auto j = run_gpuvs_json("advise --workload llama-7b --task finetune --finetune lora --tokens 1e7 --gpu rtx-4090,h100-sxm --json");
  ASSERT_EQ(j["ranked"].size(), 2u);
  EXPECT_EQ(j["ranked"][0]["rank"], 1);
  EXPECT_FALSE(j["ranked"][0]["reason"].get<std::string>().empty());
  EXPECT_GT(j["assumptions"].size(), 10u);
  const auto text = run_gpuvs("advise --params 7e9 --task finetune --tokens 1e7 --gpu rtx-4090 --assume electricity_usd_per_kwh=0.3");
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("decoder-7b"), std::string::npos);
  EXPECT_NE(text.out.find("[set]"), std::string::npos);
  expect_usage_error(run_gpuvs("advise --task dance"), "task 'dance'");
  expect_usage_error(run_gpuvs("advise --task infer --tenants 0"), "--tenants");
  expect_usage_error(run_gpuvs("advise --assume nothing=1"), "unknown assumption");
  expect_usage_error(run_gpuvs("advise --workload llama-7b --params 7e9"), "--params");
  expect_usage_error(run_gpuvs("advise --gpu rtx-9090"), "rtx-9090");
  expect_usage_error(run_gpuvs("advise --sla-p99-ms 5"), "--task infer");
  expect_usage_error(run_gpuvs("advise --scenario /nonexistent.toml"), "/nonexistent.toml");
}

TEST(Cli, AdviseParamsBuildsADecoderToSizeAndSaysSo) {
  // Out of range: one line naming the value and the range, never a preset a billion times smaller.
  const auto huge = run_gpuvs("advise --params 1e20 --tokens 1e10");
  expect_usage_error(huge, "1e7 to 2e12");
  EXPECT_NE(huge.err.find("1e+20"), std::string::npos) << huge.err;
  EXPECT_EQ(huge.out, "");
  for (const char* bad : {"5e6", "abc", "nan", "-7e9", "inf", "''"}) expect_usage_error(run_gpuvs(std::string("advise --params ") + bad), "1e7 to 2e12");
  // In range: the note says which model was priced, by which rule, and how far from the request.
  const auto text = run_gpuvs("advise --params 7e9 --tokens 1e9 --gpu h100-sxm,rtx-4090");
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("train decoder-7b "), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("note: model: a LLaMA-style decoder built to --params 7e+09 by the rule width = 128 x layers (a multiple of 4 from 8 up): "
                          "32 layers, width 4096, 32 heads, SwiGLU 11008, vocabulary 32000: 6.74 B parameters (-3.7% "
                          "from the request)"),
            std::string::npos)
      << text.out;
  const auto json = run_gpuvs("advise --params 13b --tokens 1e9 --gpu h100-sxm --json");
  ASSERT_EQ(json.exit_code, 0) << json.err;
  const auto j = nlohmann::json::parse(json.out);
  EXPECT_EQ(j["scenario"]["workload"], "decoder-13b");
  ASSERT_FALSE(j["notes"].empty());
  const std::string note = j["notes"][0];
  EXPECT_NE(note.find("--params 1.3e+10"), std::string::npos) << note;
  EXPECT_NE(note.find("40 layers, width 5120"), std::string::npos) << note;
  EXPECT_NE(note.find("+0.1% from the request"), std::string::npos) << note;
  const auto j7 = nlohmann::json::parse(run_gpuvs("advise --params 7e9 --tokens 1e9 --gpu h100-sxm --json").out);
  EXPECT_NE(j7["notes"][0].get<std::string>().find("32 layers, width 4096"), std::string::npos) << j7["notes"];
  // The id it sets is a workload like any other.
  const auto g = run_gpuvs("graph decoder-7b --batch 1 --json");
  ASSERT_EQ(g.exit_code, 0) << g.err;
  EXPECT_EQ(nlohmann::json::parse(g.out)["params"], 6738415616);
  const auto p = run_gpuvs("predict --workload decoder-7b --gpu h100-sxm --json");
  ASSERT_EQ(p.exit_code, 0) << p.err;
  EXPECT_EQ(nlohmann::json::parse(p.out)["throughput"]["unit"], "tokens/s");
  expect_usage_error(run_gpuvs("predict --workload decoder-abc --gpu h100-sxm"), "'decoder-abc'");
  expect_usage_error(run_gpuvs("graph decoder-3e12"), "1e7 to 2e12");
}

TEST(Cli, EvaluateTrainsTheUsersModelWhereTheEngineCan) {
  TempDir dir;
  const std::string db = (dir / "h.db").string();
  const std::string keras = std::string(GPUVS_SOURCE_DIR) + "/tests/data/keras/seed_keras3.json";
  const auto k = run_gpuvs("evaluate --rows 2000 --epochs 1 --threads 1 --no-report --workload " + keras + " --db " + db);
  ASSERT_EQ(k.exit_code, 0) << k.err;
  auto run = nlohmann::json::parse(run_gpuvs("report -o json --run 1 --db " + db).out);
  EXPECT_EQ(run["payload"]["training"]["workload"], "sequential");  // the Keras model's own name: it trained
  EXPECT_FALSE(run["payload"]["measured_here"].is_null());
  // A model the engine cannot run: the seed model is measured instead, and the run says so in one line.
  const auto r = run_gpuvs("evaluate --rows 2000 --epochs 1 --threads 1 --no-report --workload resnet50 --db " + db);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("Measured seed-mlp instead of resnet50: the CPU engine trains dense models only"), std::string::npos) << r.err;
  run = nlohmann::json::parse(run_gpuvs("report -o json --run 2 --db " + db).out);
  EXPECT_EQ(run["payload"]["training"]["workload"], "seed-mlp");
  EXPECT_TRUE(run["payload"]["measured_here"].is_null());
}

// evaluate --measured: your stack moves every catalog prediction that runs it, the record keeps the calibration and
// each card's figure without it, and both reports show what it calibrated.
TEST(Cli, EvaluateCarriesYourMeasuredStackIntoThePredictionsAndTheReport) {
  TempDir dir;
  const std::string db = (dir / "h.db").string(), html = (dir / "r.html").string();
  const auto r = run_gpuvs("evaluate --rows 2000 --epochs 1 --threads 1 --json --db " + db + " --report " + html +
                           " --precision amp-bf16 --measured 'gpu=a100-80gb-sxm;workload=seed-mlp;mode=train;precision=amp-bf16;value=200000 samples/s'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto run = run_gpuvs_json("report -o json --db " + db);
  const auto& payload = run["payload"];
  EXPECT_EQ(payload["measured"]["engine"], "pytorch");
  EXPECT_EQ(payload["measured"]["format"], "amp-bf16");
  bool seen = false;
  for (const auto& e : payload["predictions"])
    if (e["gpu"] == "a100-80gb-sxm") {
      seen = true;
      EXPECT_TRUE(e["measured_applied"].get<bool>());
      EXPECT_NEAR(e["throughput"].get<double>(), 200000.0, 200.0);  // the measured card gives the measurement
      EXPECT_GT(e["without_measured"].get<double>(), e["throughput"].get<double>());
    }
  EXPECT_TRUE(seen);
  const std::string page = gpuvs::test::slurp(html);
  EXPECT_NE(page.find("Your measurement: what it calibrated"), std::string::npos);
  EXPECT_NE(page.find("with your measurement (without: "), std::string::npos);
  const auto md = run_gpuvs("report -o md --db " + db);
  ASSERT_EQ(md.exit_code, 0) << md.err;
  EXPECT_NE(md.out.find("## Your measurement: what it calibrated"), std::string::npos) << md.out;
  expect_usage_error(run_gpuvs("evaluate --db " + db + " --no-report --measured 'gpu=a100-80gb-sxm;workload=seed-mlp;mode=train;value=1 tokens/s'"),
                     "the figure is in tokens/s, a prediction of seed-mlp in samples/s");
}

TEST(Cli, EvaluateStoresTheRunAndHistoryDiffReportReadIt) {
  TempDir dir;
  const std::string db = (dir / "h.db").string();
  const auto r = run_gpuvs("evaluate --rows 2000 --epochs 1 --threads 1 --json --db " + db + " --report " + (dir / "r.html").string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["run"], 1);
  EXPECT_NE(r.err.find("[7/7]"), std::string::npos);  // progress on stderr
  EXPECT_TRUE(std::filesystem::exists(dir / "r.html"));
  const auto h = nlohmann::json::parse(run_gpuvs("history --json --db " + db).out);
  ASSERT_EQ(h["runs"].size(), 1u);
  EXPECT_EQ(h["runs"][0]["kind"], "evaluate");
  const auto d = run_gpuvs("diff 1 1 --json --db " + db);
  ASSERT_EQ(d.exit_code, 0) << d.err;
  const auto text_diff = run_gpuvs("diff 1 1 --db " + db);
  ASSERT_EQ(text_diff.exit_code, 0) << text_diff.err;
  EXPECT_EQ(text_diff.out.find("e+"), std::string::npos) << text_diff.out;  // human numbers (was 1.688e+04)
  EXPECT_GT(nlohmann::json::parse(d.out)["figures"].size(), 5u);
  const auto run = run_gpuvs_json("report -o json --db " + db);
  EXPECT_EQ(run["id"], 1);
  EXPECT_FALSE(run["payload"]["predictions"].empty());
  EXPECT_FALSE(run["payload"]["advice"]["ranked"].empty());
  // Issue 33 item 5: the scaling curves price each card's link; host-staged PCIe is not linear, and the chart
  // is not one flat 100% line for every card.
  std::map<std::string, std::vector<double>> curve;
  for (const auto& e : run["payload"]["predictions"])
    for (const auto& pt : e["scaling"]) curve[e["gpu"].get<std::string>()].push_back(pt["efficiency"].get<double>());
  ASSERT_EQ(curve["rtx-4090"].size(), 4u);
  EXPECT_LT(curve["rtx-4090"].back(), 0.9);
  EXPECT_GT(curve["h100-sxm"].back(), curve["rtx-4090"].back());  // NVLink beats staging through the host
  EXPECT_EQ(run_gpuvs("history -o csv --db " + db).out.substr(0, 3), "id,");
  EXPECT_NE(run_gpuvs("diff 1 1 -o md --db " + db).out.find("| figure |"), std::string::npos);
  const auto md = run_gpuvs("report -o md --run 1 --db " + db);
  EXPECT_NE(md.out.find("## Benchmarks"), std::string::npos);
  const auto html2 = run_gpuvs("report --html " + (dir / "again.html").string() + " --db " + db);
  ASSERT_EQ(html2.exit_code, 0) << html2.err;
  EXPECT_NE(gpuvs::test::slurp(dir / "again.html").find("data-charts"), std::string::npos);
  // Bad input: one line, exit 2.
  expect_usage_error(run_gpuvs("report --run 9 -o md --db " + db), "run 9");
  expect_usage_error(run_gpuvs("report --db " + db), "--html FILE or -o");
  expect_usage_error(run_gpuvs("report -o xml --db " + db), "-o 'xml'");
  expect_usage_error(run_gpuvs("diff 1 5 --db " + db), "run 5");
  expect_usage_error(run_gpuvs("diff 0 1 --db " + db), "run1: 0 is out of range");
  expect_usage_error(run_gpuvs("history --db " + (dir / "none.db").string()), "no such database");
}

TEST(Cli, HistoryShowsStoredTextInert) {
  // Another program may write the store (found in review): stored text reached the terminal raw, so an escape
  // sequence could retitle or clear it and a newline forge a row. Control characters print as \xNN.
  TempDir dir;
  const auto db = dir / "h.db";
  {
    auto s = gpuvs::store::Store::open(db, true);
    gpuvs::store::Run r;
    r.created_utc = "2026-12-02T00:00:00Z";
    r.kind = "evaluate";
    r.gpuvs_version = "t\x1b[2J";
    r.host = "\x1b]0;owned\x07\x1b[2J";
    r.gpu = "none";
    r.summary = "a\n   99  forged row";
    r.payload = {{"n", 1}};
    r.figures.push_back({"k\x1b[31m", "cpu", "u\n", "ok", 1.0, std::nullopt});
    s.add(r);
    s.add(r);
  }
  const auto h = run_gpuvs("history --db " + db.string());
  ASSERT_EQ(h.exit_code, 0) << h.err;
  EXPECT_EQ(h.out.find('\x1b'), std::string::npos) << h.out;
  EXPECT_NE(h.out.find("\\x1b]0;owned\\x07"), std::string::npos) << h.out;
  EXPECT_EQ(gpuvs::test::count_lines(h.out), 4) << h.out;  // the count, the header, two runs
  const auto d = run_gpuvs("diff 1 2 --db " + db.string());
  ASSERT_EQ(d.exit_code, 0) << d.err;
  EXPECT_EQ(d.out.find('\x1b'), std::string::npos) << d.out;
  EXPECT_NE(d.out.find("k\\x1b[31m @ cpu"), std::string::npos) << d.out;
  EXPECT_NE(d.out.find("u\\x0a"), std::string::npos) << d.out;
}

TEST(Cli, AdviseRanksTheMachineAnEvaluateRunMeasured) {
  TempDir dir;
  const std::string db = (dir / "h.db").string();
  const auto ev = run_gpuvs("evaluate --rows 2000 --epochs 1 --threads 1 --no-report --db " + db);
  ASSERT_EQ(ev.exit_code, 0) << ev.err;
  EXPECT_NE(ev.out.find("This machine (measured): "), std::string::npos) << ev.out;
  const auto r = run_gpuvs("advise --workload seed-mlp --samples 1e9 --gpu rtx-4090 --measured-run 1 --json --db " + db);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  bool found = false;
  for (const auto& o : j["ranked"])
    if (o["gpu"] == "this-machine") {
      found = true;
      EXPECT_EQ(o["strategy"], "as-is");
      EXPECT_GT(o["throughput"].get<double>(), 0);
    }
  EXPECT_TRUE(found) << r.out;
  // A run that does not exist, a database that does not exist, a workload the machine did not train.
  expect_usage_error(run_gpuvs("advise --workload seed-mlp --measured-run 5 --db " + db), "run 5");
  expect_usage_error(run_gpuvs("advise --workload seed-mlp --measured-run 1 --db " + (dir / "none.db").string()), "no such database");
  const auto other = run_gpuvs("advise --workload resnet50 --gpu rtx-4090 --measured-run 1 --db " + db);
  ASSERT_EQ(other.exit_code, 0) << other.err;
  EXPECT_NE(other.out.find("this machine was measured training seed-mlp"), std::string::npos) << other.out;
}

TEST(Cli, EvaluateRefusesBadTargetsBeforeWorking) {
  TempDir dir;
  // A foreign file as the database: refused, untouched, and no report written.
  const auto foreign = dir / "notes.db";
  gpuvs::test::write_text(foreign, "my notes\n");
  const auto r = run_gpuvs("evaluate --db " + foreign.string() + " --report " + (dir / "r.html").string());
  expect_usage_error(r, "not a gpuvs database");
  EXPECT_EQ(gpuvs::test::slurp(foreign), "my notes\n");
  EXPECT_FALSE(std::filesystem::exists(dir / "r.html"));
  // An unwritable report path: refused before the database is created.
  expect_usage_error(run_gpuvs("evaluate --db " + (dir / "h.db").string() + " --report /proc/gpuvs/r.html"), "--report");
  EXPECT_FALSE(std::filesystem::exists(dir / "h.db"));
  expect_usage_error(run_gpuvs("evaluate --workload resnet49 --db " + (dir / "h.db").string()), "resnet49");
  expect_usage_error(run_gpuvs("evaluate --assume pue=0 --db " + (dir / "h.db").string()), "pue");
  EXPECT_FALSE(std::filesystem::exists(dir / "h.db"));
}

TEST(Cli, TrainRefusesAModelThatCannotFitBeforeAllocating) {
  // 8 x 2^31 weights and 2^31 biases: 72 GiB of parameters, twice that of Adam state; refused with the figures at once,
  // and nothing is written (the checkpoint folder is not even created).
  TempDir dir;
  gpuvs::test::write_text(dir / "huge.toml", "name = \"huge\"\ninput_shape = [8]\n[[layers]]\ntype = \"dense\"\nunits = 2147483648\n"
                                             "activation = \"softmax\"\n");
  const auto r = run_gpuvs("train " + (dir / "huge.toml").string() + " --device cpu --rows 300 --checkpoint " + (dir / "ck").string());
  expect_usage_error(r, "GiB to train at batch 32 (parameters 72.00, Adam state 144.00, activations and gradients");
  EXPECT_NE(r.err.find("model 'huge' needs "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("GiB available: lower --batch-size or the model's size"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(dir / "ck"));
}

TEST(Cli, TrainRefusesMissingGpusBeforeAnyOutput) {
  const auto r = run_gpuvs("train seed-mlp --device cuda:3 --rows 300");
  expect_usage_error(r, "--device cuda:3");
  EXPECT_TRUE(r.out.empty()) << r.out;
  expect_usage_error(run_gpuvs("train seed-mlp --gpus 64 --rows 300"), "--gpus 64");
  expect_usage_error(run_gpuvs("train seed-mlp --gpus 3 --batch-size 128 --rows 300"), "split evenly");
  expect_usage_error(run_gpuvs("train seed-mlp --memory preallocate=1.5 --rows 300"), "preallocate");
  expect_usage_error(run_gpuvs("train seed-mlp --device tpu --rows 300"), "--device 'tpu'");
  expect_usage_error(run_gpuvs("train seed-mlp --device cpu --precision amp-bf16 --rows 300"), "needs a GPU");
  expect_usage_error(run_gpuvs("train seed-mlp --steps-per-sync 0 --rows 300"), "--steps-per-sync: 0 is out of range");
  expect_usage_error(run_gpuvs("train seed-mlp --steps-per-sync many --rows 300"), "--steps-per-sync");
}

TEST(Cli, BenchRunsCanBeStoredInTheHistory) {
  TempDir dir;
  const std::string db = (dir / "h.db").string();
  const auto r = run_gpuvs("bench --quick --threads 1 --only cpu.stream.copy,cuda.mem.read --db " + db);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("stored as run 1"), std::string::npos) << r.out;
  const auto h = nlohmann::json::parse(run_gpuvs("history --json --db " + db).out);
  ASSERT_EQ(h["runs"].size(), 1u);
  EXPECT_EQ(h["runs"][0]["kind"], "bench");
  const auto run = run_gpuvs_json("report -o json --db " + db);
  EXPECT_EQ(run["payload"]["bench"]["results"].size(), 2u);
  EXPECT_FALSE(run["payload"]["devices"]["cpu"]["model"].get<std::string>().empty());
  // A foreign database is refused before anything runs.
  const auto foreign = dir / "x.db";
  gpuvs::test::write_text(foreign, "not a database");
  expect_usage_error(run_gpuvs("bench --quick --only cpu.stream.copy --db " + foreign.string()), "not a gpuvs database");
}

// ---- Issue 31: never destroy what is not yours; inputs that cannot hang or exhaust; no value that means "not given".

// NaN, infinities, zero and negatives are refused with the flag's name (they used to mean "not given", or rule
// every GPU out with exit 0); whole numbers past their range are refused, not saturated.
TEST(Cli, FlagsRefuseNanInfinityZeroAndOutOfRangeValues) {
  for (const auto& [args, needle] : std::vector<std::pair<std::string, std::string>>{
           {"advise --tokens nan", "--tokens: must be a finite number above 0, got nan"},
           {"advise --hours nan", "--hours"},
           {"advise --hours inf", "--hours: must be a finite number above 0, got inf"},
           {"advise --utilization nan", "--utilization"},
           {"advise --electricity nan", "--electricity"},
           {"advise --task infer --requests-per-s nan", "--requests-per-s"},
           {"advise --task infer --sla-p99-ms nan", "--sla-p99-ms"},
           {"advise --budget nan", "--budget: must be a finite number above 0, got nan"},
           {"advise --seq-len 2147483647", "--seq-len: 2147483647 is out of range"},
           {"graph llama-7b --seq-len 2147483647", "--seq-len: 2147483647 is out of range"},
           {"predict --gpu l4 --batch 0", "--batch: 0 is out of range"},
           {"train seed-mlp --steps 0", "--steps: 0 is out of range"},
           {"train seed-mlp --seed -1", "--seed: -1 is out of range"},
           {"diff 99999999999999999999 1", "run1: 99999999999999999999 is out of range"},
           {"bench --threads 100000", "--threads: 100000 is out of range"},
           {"evaluate --threads 100000", "--threads: 100000 is out of range"},
           {"predict --gpu l4 --workload llama-7b --options 'seq_len=4096;seq_len=8'", "--options: 'seq_len' is given twice"},
           {"advise --assume 'pue=1;pue=2'", "--assume: 'pue' is given twice"},
           {"advise --assume 'electricity_usd_per_kwh=1e300'", "past 1e15"}}) {
    SCOPED_TRACE(args);
    expect_usage_error(gpuvs::test::run_gpuvs_within(60, args), needle);
  }
}

// A FIFO, a device or a directory where a file is read is refused at once (a FIFO used to block for ever, a link
// to /dev/zero to read without end).
TEST(Cli, InputsThatAreNotRegularFilesAreRefusedAtOnce) {
  TempDir dir;
  for (const char* name : {"m.toml", "m.json", "d.csv", "s.toml", "c.toml", "b.json", "v.csv"})
    ASSERT_EQ(::mkfifo((dir / name).c_str(), 0600), 0) << name;
  std::filesystem::create_symlink("/dev/zero", dir / "zero.toml");
  std::filesystem::create_directory(dir / "folder.toml");
  const std::string d = dir.path().string() + "/";
  for (const auto& [args, needle] : std::vector<std::pair<std::string, std::string>>{
           {"graph " + d + "m.toml", "m.toml: is a FIFO, not a regular file"},
           {"graph " + d + "m.json", "m.json: is a FIFO"},
           {"train seed-mlp --data " + d + "d.csv", "--data " + d + "d.csv: is a FIFO"},
           {"advise --scenario " + d + "s.toml", "--scenario " + d + "s.toml: is a FIFO"},
           {"catalog --catalog " + d + "c.toml", "--catalog " + d + "c.toml: is a FIFO"},
           {"predict --gpu h200 --calibration " + d + "b.json", "--calibration " + d + "b.json: is a FIFO"},
           {"validate --data " + d + "v.csv", "--data " + d + "v.csv: is a FIFO"},
           {"graph " + d + "zero.toml", "zero.toml: is a character device"},
           {"advise --scenario " + d + "zero.toml", "is a character device"},
           {"advise --scenario " + d + "folder.toml", "folder.toml: is a directory"}}) {
    SCOPED_TRACE(args);
    expect_usage_error(gpuvs::test::run_gpuvs_within(30, args), needle);
  }
}

// A dotted key of 50,000 parts (a 100 KB file) overflowed the stack in every TOML reader (exit 139).
TEST(Cli, DeepTomlIsRefusedByEveryTomlReader) {
  TempDir dir;
  std::string key = "a";
  for (int i = 0; i < 50000; ++i) key += ".a";
  gpuvs::test::write_text(dir / "deep.toml", key + " = 1\n");
  const std::string f = (dir / "deep.toml").string();
  for (const auto& args : {"graph " + f, "advise --scenario " + f, "catalog --catalog " + f,
                           "validate --data " + std::string(GPUVS_SOURCE_DIR) + "/data/validation --constants " + f}) {
    SCOPED_TRACE(args);
    expect_usage_error(gpuvs::test::run_gpuvs_within(60, args), "deep.toml:1: TOML keys and tables nested more than 64 deep");
  }
}

// Control characters in a model's name (from its file) reach the terminal as \xNN, never raw (ESC could rewrite
// the screen, CR or LF forge a line).
TEST(Cli, NamesFromFilesReachTheTerminalEscaped) {
  TempDir dir;
  gpuvs::test::write_text(dir / "evil.toml", "name = \"evil\\u001b[2J\\rname\"\ninput_shape = [8]\n[[layers]]\ntype = \"dense\"\nunits = 4\n"
                                              "[[layers]]\ntype = \"dense\"\nunits = 3\nactivation = \"softmax\"\n");
  for (const auto& args : {"graph " + (dir / "evil.toml").string(), "train " + (dir / "evil.toml").string() + " --rows 40 --epochs 1 --threads 1"}) {
    SCOPED_TRACE(args);
    const auto r = run_gpuvs(args);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out.find('\x1b'), std::string::npos);
    EXPECT_EQ(r.out.find('\r'), std::string::npos);
    EXPECT_NE(r.out.find("evil\\x1b[2J\\x0dname"), std::string::npos) << r.out;
  }
  // Data files (a device catalog, validation rows, a scenario) hold no control characters: refused where read.
  std::string catalog = gpuvs::test::slurp(std::string(GPUVS_SOURCE_DIR) + "/fuzz/corpus/catalog/mine.toml");
  const auto name_at = catalog.find("name = \"");
  ASSERT_NE(name_at, std::string::npos);
  catalog.insert(name_at + 8, "\\u001b[2J");
  gpuvs::test::write_text(dir / "evil-catalog.toml", catalog);
  expect_usage_error(run_gpuvs("catalog --catalog " + (dir / "evil-catalog.toml").string()), "'name' holds a control character");
  gpuvs::test::write_text(dir / "evil.csv", "id,gpu,workload,mode,precision,batch_per_gpu,value\nr\x1b[2J,h100-sxm,resnet50,train,amp-bf16,256,1000\n");
  expect_usage_error(run_gpuvs("validate --data " + (dir / "evil.csv").string()), "evil.csv:2: a field holds a control character ('r\\x1b[2J')");
  gpuvs::test::write_text(dir / "evil-scenario.toml", "name = \"a\\u001bb\"\n");
  expect_usage_error(run_gpuvs("advise --scenario " + (dir / "evil-scenario.toml").string()), "'name' holds a control character");
}

// validate skipped rows with a value <= 0 and then said "median absolute error 0.0%"; --fit on no priced rows wrote
// a constants file and exited 0.
TEST(Cli, ValidateRefusesWhatItCannotScore) {
  TempDir dir;
  const std::string header = "id,gpu,workload,mode,precision,batch_per_gpu,value,unit,source\n";
  gpuvs::test::write_text(dir / "zero.csv", header + "r1,h100-sxm,resnet50,train,amp-bf16,256,0,images/s,test\n");
  expect_usage_error(run_gpuvs("validate --data " + (dir / "zero.csv").string()), "zero.csv:2: value 0 is not a positive measurement");
  gpuvs::test::write_text(dir / "blank.csv", header + "r1,h100-sxm,resnet50,train,amp-bf16,256,,images/s,test\n");
  const auto out = dir / "fitted.toml";
  expect_usage_error(run_gpuvs("validate --data " + (dir / "blank.csv").string() + " --fit " + out.string()), "nothing to fit");
  EXPECT_FALSE(std::filesystem::exists(out));
  const auto plain = run_gpuvs("validate --data " + (dir / "blank.csv").string());
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  EXPECT_NE(plain.out.find("no row scored"), std::string::npos) << plain.out;
  EXPECT_EQ(plain.out.find("0.0%"), std::string::npos) << plain.out;
}

// A calibration record's units were never checked (GFLOP/s read as TFLOP/s), and any size was applied.
TEST(Cli, CalibrationFiguresInOtherUnitsOrFarFromAnyCardAreRefused) {
  TempDir dir;
  const auto rec = dir / "bench.json";
  const auto record = [&](const std::string& unit, const std::string& median) {
    gpuvs::test::write_text(rec, R"J({"schema_version": 2, "quick": false, "results": [{"key": "cuda.gemm.bf16", "unit": ")J" + unit +
                                     R"J(", "status": "ok", "median": )J" + median + R"J(, "device": "cuda:0 NVIDIA H200 (h200-sxm)"}]})J");
  };
  record("GFLOP/s", "600000");
  expect_usage_error(run_gpuvs("predict --gpu h200 --calibration " + rec.string()), "cuda.gemm.bf16 is recorded in 'GFLOP/s'; gpuvs measures it in TFLOP/s");
  record("TFLOP/s", "1e-300");
  expect_usage_error(run_gpuvs("predict --gpu h200 --calibration " + rec.string()), "a failed or mis-recorded run");
  record("TFLOP/s", "600");
  EXPECT_EQ(run_gpuvs("predict --gpu h200 --calibration " + rec.string()).exit_code, 0);
}

// evaluate --rows past memory died with std::bad_alloc (exit 1) after the benchmarks; it is refused before them.
TEST(Cli, EvaluateRefusesRowsThatCannotFitBeforeWorking) {
  TempDir dir;
  const auto r = gpuvs::test::run_gpuvs_within(30, "evaluate --rows 50000000000 --db " + (dir / "h.db").string() + " --report " +
                                                       (dir / "r.html").string());
  expect_usage_error(r, "--rows 50000000000: the synthetic data");
  EXPECT_FALSE(std::filesystem::exists(dir / "h.db"));
  EXPECT_FALSE(std::filesystem::exists(dir / "r.html"));
}

// A Sequential model of 300,000 layers fits in a small file; it is refused before anything is built for it.
TEST(Cli, ModelsOfMoreLayersThanAnyRealOneAreRefused) {
  TempDir dir;
  std::string text = "input_shape = [8]\n";
  for (int i = 0; i < 10001; ++i) text += "[[layers]]\ntype = \"dense\"\nunits = 4\n";
  gpuvs::test::write_text(dir / "deep.toml", text);
  expect_usage_error(gpuvs::test::run_gpuvs_within(30, "graph " + (dir / "deep.toml").string()), "10001 layers, more than the 10000");
}

TEST(Cli, FactsFromAFileChangeThePredictionAndSaySo) {
  TempDir dir;
  const auto facts = dir / "facts.toml";
  gpuvs::test::write_text(facts, "[memory.runtime]\nvalue = 2.5\nunit = \"GiB\"\nsource = \"measured: our framework process\"\n");
  const auto base = run_gpuvs_json("predict --workload resnet50 --gpu a100-80gb-sxm --json");
  const auto r = run_gpuvs("predict --workload resnet50 --gpu a100-80gb-sxm --json --facts " + facts.string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("facts from " + facts.string() + ": memory.runtime = 2.5 GiB"), std::string::npos) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_NEAR(j["memory"]["runtime_gib"].get<double>(), 2.5, 1e-9);
  EXPECT_LT(base["memory"]["runtime_gib"].get<double>(), 2.5);
  // A bad facts file or a missing one: one line naming it, exit 2, nothing priced.
  gpuvs::test::write_text(dir / "bad.toml", "[memory.runtime]\nvalue = 2.5\nunit = \"GB\"\nsource = \"s\"\n");
  for (const std::string& cmd : std::vector<std::string>{"predict --workload resnet50 --gpu a100-80gb-sxm", "compare", "advise --workload llama3-8b --task infer",
                                                         "validate --data " + std::string(GPUVS_SOURCE_DIR) + "/data/validation/micro.csv"}) {
    const auto bad = run_gpuvs(cmd + " --facts " + (dir / "bad.toml").string());
    EXPECT_EQ(bad.exit_code, 2) << cmd;
    EXPECT_NE(bad.err.find("bad.toml:1: [memory.runtime] is in GiB, not 'GB'"), std::string::npos) << cmd << ": " << bad.err;
    EXPECT_EQ(count_lines(bad.err), 1) << bad.err;
    EXPECT_TRUE(bad.out.empty()) << cmd;
  }
  const auto missing = run_gpuvs("compare --facts " + (dir / "none.toml").string());
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.err.find("none.toml"), std::string::npos) << missing.err;
}

// Issue 33 item 1: "how fast is the seed model on an RTX 4090?" got 175.7 k (compare, batch 32, tf32), 658.7 k
// (compare with GPUs, batch 128, tf32) and 696.0 k (predict, amp-bf16). Every command now resolves a request with
// the same defaults and says what it assumed; the same question gets the same figure everywhere.
TEST(Cli, OneQuestionGetsOneAnswerFromEveryCommand) {
  const auto value = [](const nlohmann::json& t) { return t.is_object() ? t["value"].get<double>() : t.get<double>(); };
  // The seed question.
  const auto p = run_gpuvs_json("predict --gpu rtx-4090 --json");
  const double seed = value(p["throughput"]);
  EXPECT_EQ(p["batch"], 128);
  EXPECT_EQ(p["precision"], "amp-bf16");
  ASSERT_EQ(p["assumed"].size(), 2u) << p["assumed"];
  EXPECT_NE(p["assumed"][0].get<std::string>().find("batch 128"), std::string::npos);
  for (const std::string args : {"compare --json", "compare rtx-4090 a100-80gb-sxm --json"}) {
    const auto c = run_gpuvs_json(args);
    EXPECT_EQ(c["gpus"][0]["gpu"], "rtx-4090") << args;
    EXPECT_DOUBLE_EQ(value(c["gpus"][0]["throughput"]), seed) << args;
    EXPECT_EQ(c["batch"], 128) << args;
    EXPECT_EQ(c["precision"], "amp-bf16") << args;
  }
  const auto adv = run_gpuvs_json("advise --workload seed-mlp --samples 1e9 --gpu rtx-4090 --json");
  ASSERT_FALSE(adv["ranked"].empty());
  EXPECT_EQ(adv["ranked"][0]["count"], 1);
  EXPECT_DOUBLE_EQ(adv["ranked"][0]["throughput"].get<double>(), seed);
  // A card without BF16 gets the default rule's fp16, not an error the user never asked for.
  const auto v100 = run_gpuvs_json("predict --gpu v100-sxm2-16gb --json");
  EXPECT_EQ(v100["precision"], "amp-fp16");
  // The Llama question, and evaluate's table for both (one run, the Llama workload's predictions).
  const auto lp = run_gpuvs_json("predict --workload llama3-8b --gpu h100-sxm --json");
  const double llama = value(lp["throughput"]);
  EXPECT_EQ(lp["assumed"].size(), 3u) << lp["assumed"];  // batch, precision and the sequence length
  const auto lc = run_gpuvs_json("compare h100-sxm a100-80gb-sxm --workload llama3-8b --json");
  EXPECT_DOUBLE_EQ(value(lc["gpus"][0]["throughput"]), llama);
  TempDir dir;
  const std::string db = (dir / "h.db").string();
  const auto ev = run_gpuvs("evaluate --workload llama3-8b --rows 2000 --epochs 1 --threads 1 --no-report --db " + db);
  ASSERT_EQ(ev.exit_code, 0) << ev.err;
  const auto run = run_gpuvs_json("report -o json --db " + db);
  bool seen = false;
  for (const auto& e : run["payload"]["predictions"])
    if (e["gpu"] == "h100-sxm") {
      seen = true;
      EXPECT_DOUBLE_EQ(e["throughput"].get<double>(), llama);
      EXPECT_EQ(e["precision"], "amp-bf16");
    }
  EXPECT_TRUE(seen);
  // Serving: predict and compare price the same request.
  const auto sp = run_gpuvs_json("predict --workload llama3-8b --gpu h100-sxm --mode decode --json");
  const auto sc = run_gpuvs_json("compare h100-sxm a100-80gb-sxm --workload llama3-8b --mode decode --json");
  ASSERT_TRUE(sp.contains("throughput")) << sp.dump();
  EXPECT_NEAR(value(sp["throughput"]), value(sc["gpus"][0]["throughput"]), 1e-9 * value(sp["throughput"])) << sc.dump();
  // ... and says what it took for what was left unsaid, as training does: one line each, gone once named.
  const auto said = [](const nlohmann::json& j, const std::string& part) {
    for (const auto& line : j["assumed"])
      if (line.get<std::string>().find(part) != std::string::npos) return true;
    return false;
  };
  EXPECT_TRUE(said(sp, "engine vllm (the default")) << sp["assumed"];
  EXPECT_TRUE(said(sp, "weights bf16 (no --precision")) << sp["assumed"];
  EXPECT_TRUE(said(sp, "128 generated tokens per request")) << sp["assumed"];
  const auto named = run_gpuvs_json("predict --workload llama3-8b --gpu h100-sxm --mode decode --precision fp8 --batch 4 "
                                    "--options 'framework=trt-llm;gen_len=64;prompt_len=100;kv_dtype=fp16' --json");
  EXPECT_TRUE(named["assumed"].empty()) << named["assumed"];
  const auto gguf = run_gpuvs_json("predict --workload llama3-8b --gpu rtx-4090 --mode decode --precision q4_k_m --json");
  EXPECT_TRUE(said(gguf, "engine llama.cpp (vllm, the default, does not run q4_k_m weights)")) << gguf["assumed"];
  const auto st_text = run_gpuvs("predict --workload llama3-8b --gpu h100-sxm --mode decode");
  EXPECT_NE(st_text.out.find("  assumed      engine vllm (the default"), std::string::npos) << st_text.out;
  // One card, one unit of memory: serving's capacity is training's, in GiB (the serving text printed GB).
  const auto st = run_gpuvs("predict --workload llama3-8b --gpu rtx-4090 --mode infer");
  ASSERT_EQ(st.exit_code, 0) << st.err;
  EXPECT_NE(st.out.find("card 24.00 GiB"), std::string::npos) << st.out;
  EXPECT_EQ(st.out.find(" GB,"), std::string::npos) << st.out;
  const auto sj = run_gpuvs_json("predict --workload llama3-8b --gpu rtx-4090 --mode infer --json");
  const auto tj = run_gpuvs_json("predict --workload llama3-8b --gpu rtx-4090 --json");
  EXPECT_NEAR(sj["memory_per_gpu_gib"]["capacity"].get<double>(), 24.0, 0.005);
  EXPECT_GT(tj["memory"]["capacity_gib"].get<double>(), 20);  // the same unit; training's usable share of it
}

// Issue 33 item 8: the names users type. A device name as nvidia-smi prints it, PyTorch's dtype names, and a
// mistyped command named with the nearest ones.
TEST(Cli, TheNamesUsersTypeAreRead) {
  const auto byid = run_gpuvs_json("predict --gpu rtx-4090 --json");
  const auto r = run_gpuvs("predict --gpu 'NVIDIA GeForce RTX 4090' --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("read 'NVIDIA GeForce RTX 4090' as rtx-4090"), std::string::npos) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out)["throughput"], byid["throughput"]);
  const auto c = run_gpuvs("compare 'NVIDIA H100 80GB HBM3' 'NVIDIA A100-SXM4-80GB' --json");
  ASSERT_EQ(c.exit_code, 0) << c.err;
  EXPECT_EQ(nlohmann::json::parse(c.out)["gpus"][1]["gpu"], "a100-80gb-sxm");
  const auto a = run_gpuvs("advise --workload seed-mlp --gpu 'NVIDIA GeForce RTX 4090' --json");
  ASSERT_EQ(a.exit_code, 0) << a.err;
  EXPECT_EQ(nlohmann::json::parse(a.out)["ranked"][0]["gpu"], "rtx-4090");
  expect_usage_error(run_gpuvs("predict --gpu 'NVIDIA A100'"), "'NVIDIA A100' could be a100-40gb-sxm, a100-80gb-sxm: name one");  // nvidia-smi names PCIe cards so
  // PyTorch's dtype names for the same precisions.
  EXPECT_EQ(run_gpuvs_json("predict --gpu rtx-4090 --precision bfloat16 --json")["precision"], "bf16");
  EXPECT_EQ(run_gpuvs_json("predict --gpu rtx-4090 --precision half --json")["precision"], "fp16");
  EXPECT_EQ(run_gpuvs_json("predict --gpu rtx-4090 --precision float32 --json")["precision"], "fp32");
  // "did you mean".
  const auto typo = run_gpuvs("comapre rtx-4090 a100-80gb-sxm");
  EXPECT_EQ(typo.exit_code, 2);
  EXPECT_NE(typo.err.find("'comapre' is not a gpuvs command; did you mean compare"), std::string::npos) << typo.err;
  EXPECT_EQ(count_lines(typo.err), 1);
}

// Issue 33 item 7: the README's code fences balance (the command list rendered as prose and the options as code),
// every file its commands read is shipped or made by a command before it, and the commands that answer at once
// run as written from the source folder and exit 0. Those that measure this machine, write files or need a
// history, MPI or a GPU (evaluate, bench, train, history, diff, report, validate, mpirun) have tests of their own.
TEST(Readme, FencesBalanceAndItsCommandsRunAsWritten) {
  const std::filesystem::path src = GPUVS_SOURCE_DIR;
  std::istringstream in(gpuvs::test::slurp(src / "README.md"));
  int fences = 0;
  bool in_sh = false;
  std::vector<std::string> commands;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("```", 0) == 0) {
      ++fences;
      in_sh = !in_sh && line == "```sh";
      if (fences % 2 == 0) in_sh = false;
      continue;
    }
    if (in_sh && line.rfind("gpuvs ", 0) == 0) commands.push_back(line.substr(6));
  }
  EXPECT_EQ(fences % 2, 0) << "unbalanced code fences";
  ASSERT_GT(commands.size(), 40u);
  std::set<std::string> made;  // files a README command writes, which later ones may read
  const std::set<std::string> writes = {"--html", "--report", "--save", "--checkpoint", "--logdir", "--fit", "--write-band"};
  const std::set<std::string> runs_here = {"predict", "compare", "graph", "catalog", "advise", "workloads", "--version"};
  int ran = 0;
  for (const auto& c : commands) {
    std::istringstream words(c.substr(0, c.find("  #")));
    std::vector<std::string> w;
    for (std::string x; words >> x;) w.push_back(x);
    for (std::size_t i = 0; i < w.size(); ++i) {
      const bool output = i > 0 && writes.count(w[i - 1]);
      const std::string& x = w[i];
      const bool file = x.find('/') != std::string::npos || x.ends_with(".toml") || x.ends_with(".keras") || x.ends_with(".onnx") ||
                        x.ends_with(".gz") || (x.ends_with(".json") && x.find('=') == std::string::npos);
      if (output) {
        made.insert(x);
      } else if (file && x.find('\'') == std::string::npos) {
        EXPECT_TRUE(std::filesystem::exists(src / x) || made.count(x)) << "gpuvs " << c << ": " << x << " is not shipped";
      }
    }
    // Commands that read what an earlier, unrun command wrote (a bench record, a stored calibration) are not run here.
    const bool quick = runs_here.count(w.at(0)) && c.find("--measured-run") == std::string::npos && c.find("--calibration") == std::string::npos &&
                       c.find("--stack") == std::string::npos;
    if (!quick) continue;
    const auto r = gpuvs::test::run_gpuvs_with("cd '" + src.string() + "' && ", c);
    EXPECT_EQ(r.exit_code, 0) << "gpuvs " << c << "\n" << r.err.substr(0, 500);
    ++ran;
  }
  EXPECT_GT(ran, 30);
}


// Issue 33 item 2: evaluate with a LoRA scenario priced full training in its tables (23 of 24 cards "did not
// fit"), showed a serving section, called a card that does not fit "cheapest" and counted cost per billion
// sequences where the figure was per billion tokens. The scenario's question now governs all of it.
TEST(Cli, EvaluateWithAScenarioAnswersTheScenariosQuestion) {
  TempDir dir;
  const std::string db = (dir / "h.db").string();
  const std::string scenario = std::string(GPUVS_SOURCE_DIR) + "/examples/lora.toml";  // llama3-8b, LoRA, 2,048 tokens
  const auto ev = run_gpuvs("evaluate --workload llama3-8b --scenario " + scenario + " --rows 2000 --epochs 1 --threads 1 --no-report --db " + db);
  ASSERT_EQ(ev.exit_code, 0) << ev.err;
  const auto p = run_gpuvs_json("report -o json --db " + db)["payload"];
  EXPECT_TRUE(p["serving"].is_null()) << "a fine-tuning question has no serving section";
  EXPECT_NE(p["prediction_note"].get<std::string>().find("lora fine-tuning"), std::string::npos) << p["prediction_note"];
  const auto lora = run_gpuvs_json("predict --workload llama3-8b --gpu h100-sxm --options 'finetune=lora;seq_len=2048' --json");
  std::string cheapest_line;
  for (const auto& line : p["summary"])
    if (line.get<std::string>().rfind("Predicted", 0) == 0) cheapest_line = line.get<std::string>();
  EXPECT_NE(cheapest_line.find(" tokens, "), std::string::npos) << cheapest_line;  // the unit the throughput counts
  EXPECT_EQ(cheapest_line.find("sequences"), std::string::npos) << cheapest_line;
  for (const auto& e : p["predictions"]) {
    if (e["gpu"] == "h100-sxm") {
      EXPECT_DOUBLE_EQ(e["throughput"].get<double>(), lora["throughput"]["value"].get<double>());
    }
    // The headline's cheapest and fastest are cards the task fits on.
    const std::string id = e["gpu"];
    if (cheapest_line.find("cheapest: " + id + " ") != std::string::npos || cheapest_line.find("fastest " + id + " ") != std::string::npos) {
      EXPECT_TRUE(e["fits"].get<bool>()) << id << ": " << cheapest_line;
    }
  }
}

// One question, one answer: a scenario naming its workload (examples/serving.toml: llama3-8b) is what evaluate
// predicts when --workload is not given, so the report's predictions and its advice price the same model; a flag
// says over the file, for the advice too, as gpuvs advise does.
TEST(Cli, EvaluatePricesTheScenariosWorkloadUnlessAFlagSaysAnother) {
  TempDir dir;
  const std::string db = (dir / "h.db").string();
  const std::string scenario = std::string(GPUVS_SOURCE_DIR) + "/examples/serving.toml";
  const auto ev = run_gpuvs("evaluate --scenario " + scenario + " --rows 2000 --epochs 1 --threads 1 --no-report --db " + db);
  ASSERT_EQ(ev.exit_code, 0) << ev.err;
  const auto p = run_gpuvs_json("report -o json --db " + db)["payload"];
  EXPECT_EQ(p["workload"], "llama3-8b");
  EXPECT_EQ(p["advice"]["scenario"]["workload"], "llama3-8b");
  EXPECT_FALSE(p["serving"].is_null()) << "a serving question of a decoder has its serving curves";
  // No precision named: each card's weights by the default rule, said as predict says it (not "the nearest to bf16").
  EXPECT_NE(p["prediction_note"].get<std::string>().find("the default rule's 16-bit (bf16, fp16 on a card without BF16) weights"), std::string::npos)
      << p["prediction_note"];
  EXPECT_FALSE(p["advice"]["scenario"]["precision_named"].get<bool>());
  int v100 = 0;
  for (const auto& e : p["predictions"])
    if (e["gpu"] == "v100-sxm2-32gb") {
      EXPECT_EQ(e["precision"], "fp16");
      EXPECT_FALSE(e.contains("precision_note")) << e;
      ++v100;
    }
  EXPECT_EQ(v100, 1);
  const auto flag = run_gpuvs("evaluate --scenario " + scenario + " --workload mistral-7b --rows 2000 --epochs 1 --threads 1 --no-report --db " + db);
  ASSERT_EQ(flag.exit_code, 0) << flag.err;
  const auto q = run_gpuvs_json("report -o json --db " + db)["payload"];
  EXPECT_EQ(q["workload"], "mistral-7b");
  EXPECT_EQ(q["advice"]["scenario"]["workload"], "mistral-7b");
}

// One question, one answer: a serving scenario's engine, weights, lengths and release price evaluate's table, its
// serving charts and its advice alike. Its table priced vLLM at batch 8 and the default 128 generated tokens where
// the advice priced TensorRT-LLM at as many requests as fit: the report and its advice disagreed on every card.
TEST(Cli, AServingScenarioIsPricedAlikeByTheTableTheChartsAndTheAdvice) {
  TempDir dir;
  const std::string db = (dir / "h.db").string();
  const std::string scenario = (dir / "trt.toml").string();
  gpuvs::test::write_text(scenario, "workload = \"llama3-8b\"\ntask = \"infer\"\nengine = \"trt-llm\"\nprecision = \"fp8\"\n"
                             "seq_len = 1024\ngen_len = 256\nrelease = \"2024-06\"\nrequests_per_s = 5\n");
  const auto ev = run_gpuvs("evaluate --scenario " + scenario + " --rows 2000 --epochs 1 --threads 1 --no-report --db " + db);
  ASSERT_EQ(ev.exit_code, 0) << ev.err;
  const auto p = run_gpuvs_json("report -o json --db " + db)["payload"];
  const auto h100 = run_gpuvs_json("predict --workload llama3-8b --gpu h100-sxm --mode infer --precision fp8 "
                                   "--options 'framework=trt-llm;prompt_len=1024;gen_len=256;release=2024-06' --json");
  std::map<std::string, std::int64_t> in_flight;
  ASSERT_GT(p["predictions"].size(), 10u);
  for (const auto& e : p["predictions"]) {
    EXPECT_EQ(e["engine"], "trt-llm") << e["gpu"];
    EXPECT_EQ(e["prompt_len"], 1024) << e["gpu"];
    EXPECT_EQ(e["gen_len"], 256) << e["gpu"];
    in_flight[e["gpu"]] = e["in_flight"].get<std::int64_t>();
    if (e["gpu"] == "h100-sxm") {
      EXPECT_DOUBLE_EQ(e["throughput"].get<double>(), h100["throughput"]["value"].get<double>());
      EXPECT_EQ(e["in_flight"], h100["batch"]);
      EXPECT_EQ(e["precision"], "fp8");
    }
  }
  ASSERT_TRUE(in_flight.count("h100-sxm"));
  EXPECT_EQ(p["serving"]["engine"], "trt-llm");
  EXPECT_EQ(p["serving"]["gen_len"], 256);
  // No latency target: each replica of the advice holds what the table's card holds.
  ASSERT_FALSE(p["advice"]["ranked"].empty());
  int compared = 0;
  for (const auto& o : p["advice"]["ranked"])
    if (o["strategy"] == "serve-llm" && o["tp"] == 1 && in_flight.count(o["gpu"])) {
      EXPECT_EQ(o["batch"], in_flight[o["gpu"]]) << o["gpu"];
      ++compared;
    }
  EXPECT_GE(compared, 3);
  std::string line;
  for (const auto& l : p["summary"])
    if (l.get<std::string>().rfind("Predicted", 0) == 0) line = l.get<std::string>();
  EXPECT_NE(line.find("served by trt-llm, requests of 1024 + 256 tokens"), std::string::npos) << line;
  EXPECT_NE(p["prediction_note"].get<std::string>().find("trt-llm engine"), std::string::npos) << p["prediction_note"];
  // Tenants sharing cards: the advice prices graphs, and so do the table (no requests in flight) and no curves.
  const std::string shared = (dir / "shared.toml").string();
  gpuvs::test::write_text(shared, "workload = \"llama3-8b\"\ntask = \"infer\"\ntenants = 2\nrequests_per_s = 1\n");
  const auto ev2 = run_gpuvs("evaluate --scenario " + shared + " --rows 2000 --epochs 1 --threads 1 --no-report --db " + db);
  ASSERT_EQ(ev2.exit_code, 0) << ev2.err;
  const auto q = run_gpuvs_json("report -o json --db " + db)["payload"];
  EXPECT_TRUE(q["serving"].is_null());
  ASSERT_FALSE(q["predictions"].empty());
  EXPECT_FALSE(q["predictions"][0].contains("in_flight"));
  EXPECT_NE(q["prediction_note"].get<std::string>().find("tenants share the cards"), std::string::npos) << q["prediction_note"];
}

// The weight formats predict serves a decoder in (int4-awq, q4_k_m, ...) are what advise and evaluate serve it in too.
TEST(Cli, AdviseAndEvaluateServeTheWeightFormatsPredictServes) {
  const auto adv = run_gpuvs_json("advise --task infer --workload llama3-8b --precision int4-awq --requests-per-s 1 --gpu rtx-4090 --json");
  ASSERT_FALSE(adv["ranked"].empty());
  EXPECT_EQ(adv["ranked"][0]["precision"], "int4-awq");
  const auto p = run_gpuvs_json("predict --workload llama3-8b --gpu rtx-4090 --mode infer --precision int4-awq --json");
  EXPECT_EQ(adv["ranked"][0]["batch"], p["batch"]);
  expect_usage_error(run_gpuvs("advise --task infer --workload llama3-8b --precision int5"), "neither a precision policy");
  expect_usage_error(run_gpuvs("advise --workload llama3-8b --precision int4-awq"), "unknown precision 'int4-awq'");
  TempDir dir;
  const std::string db = (dir / "h.db").string();
  const auto ev = run_gpuvs("evaluate --scenario " + std::string(GPUVS_SOURCE_DIR) +
                            "/examples/serving.toml --precision q4_k_m --rows 2000 --epochs 1 --threads 1 --no-report --db " + db);
  ASSERT_EQ(ev.exit_code, 0) << ev.err;
  const auto run = run_gpuvs_json("report -o json --db " + db)["payload"];
  ASSERT_FALSE(run["predictions"].empty());
  for (const auto& e : run["predictions"]) EXPECT_EQ(e["precision"], "q4_k_m") << e["gpu"];
}

// One question, one answer: predict's --options words for a request (framework, seq_len, prompt_len, gen_len,
// release) say the same to advise and evaluate, which refused them as "not a shape option"; what advise chooses
// itself, or a flag saying otherwise, is refused naming why.
TEST(Cli, AdviseAndEvaluateTakePredictsRequestOptions) {
  const std::string serve = "advise --task infer --workload llama3-8b --precision fp8 --requests-per-s 5 --gpu l40s,h100-sxm --json ";
  auto by_options = run_gpuvs_json(serve + "--options 'framework=trt-llm;prompt_len=1024;gen_len=256;release=2024-06'");
  auto by_flags = run_gpuvs_json(serve + "--engine trt-llm --seq-len 1024 --gen-len 256 --release 2024-06");
  EXPECT_EQ(by_options["ranked"], by_flags["ranked"]);
  EXPECT_EQ(by_options["scenario"]["engine"], "trt-llm");
  EXPECT_EQ(by_options["scenario"]["gen_len"], 256);
  // Training: framework is the profile the options are priced under, as predict's.
  const auto nemo = run_gpuvs_json("advise --workload bert-large --gpu h100-sxm --options framework=nemo --json");
  EXPECT_EQ(nemo["scenario"]["framework"], "nemo");
  const auto p = run_gpuvs_json("predict --workload bert-large --gpu h100-sxm --options framework=nemo --json");
  bool found = false;
  for (const auto& o : nemo["options"])
    if (o["count"] == 1 && o["strategy"] == "single" && o["batch"] == p["batch"]) {
      EXPECT_DOUBLE_EQ(o["throughput"].get<double>(), p["throughput"]["value"].get<double>());
      found = true;
    }
  EXPECT_TRUE(found) << nemo["options"].dump().substr(0, 400);
  const std::vector<std::pair<std::string, std::string>> refused = {{"advise --task infer --workload llama3-8b --engine vllm --options framework=sglang", "framework=sglang: --engine says vllm"},
                  {"advise --task infer --workload llama3-8b --options tp=2", "advise chooses tp for each option"},
                  {"advise --workload llama3-8b --options sharding=full", "advise chooses sharding"},
                  {"advise --task infer --workload llama3-8b --options kv_dtype=fp8", "one of predict's keys"},
                  {"advise --workload llama3-8b --options finetune=lora", "--task finetune --finetune lora"},
                  {"advise --workload llama3-8b --task finetune --options framework=vllm", "a serving engine serves a decoder alone"},
                  {"advise --workload bert-large --options framework=tensorrt", "prices inference only"},
                  {"advise --task infer --workload llama3-8b --seq-len 512 --options prompt_len=1024", "say two lengths"},
                  {"advise --workload bert-large --options framework=pytorch-lightning", "has no profile"},
                  {"advise --workload bert-large --options gen_len=64", "generates none"},
                  {"advise --task infer --workload llama3-8b --options 'prompt_len=512;seq_len=1024'", "two lengths"},
                  {"advise --workload bert-large --options seq_len=0", "whole number of tokens"},
                  {"advise --workload bert-large --options release=2024-13", "must be a month as YYYY-MM"},
                  {"evaluate --workload bert-large --options tp=2 --no-report", "advise chooses tp"},
                  {"advise --workload llama2-70b --options network=infiniband-xdr", "network 'infiniband-xdr' is unknown"},
                  {"advise --workload bert-large --options network=eth-100", "network eth-100: the fabric between servers"},
                  {"advise --task infer --workload llama3-8b --options network=eth-100", "is planned inside one server"}};
  for (const auto& [command, needle] : refused) expect_usage_error(run_gpuvs(command), needle);
  // network: the fabric a plan past one server crosses, as predict's network= prices it; a scenario file says it too.
  {
    const std::string big = "advise --workload llama2-70b --tokens 1e12 --gpu h100-sxm --purchase rent --json ";
    const auto named = run_gpuvs_json(big + "--options network=eth-100");
    EXPECT_EQ(named["scenario"]["network"], "eth-100");
    ASSERT_FALSE(named["ranked"].empty());
    EXPECT_EQ(named["ranked"][0]["network"], "eth-100");
    TempDir sdir;
    const std::string file = (sdir / "cluster.toml").string();
    gpuvs::test::write_text(file, "workload = \"llama2-70b\"\ntokens = 1e12\nnetwork = \"eth-100\"\ngpu = [\"h100-sxm\"]\npurchase = \"rent\"\n");
    EXPECT_EQ(run_gpuvs_json("advise --scenario " + file + " --json")["ranked"], named["ranked"]);
    // A network that no plan crosses (at most 12 GPUs: nothing reaches two servers) is said to be idle.
    const auto idle = run_gpuvs_json("advise --workload llama3-8b --gpu h100-sxm --gpus 12 --options network=eth-100 --json");
    EXPECT_NE(idle["notes"].dump().find("network eth-100 is not crossed"), std::string::npos) << idle["notes"];
    const auto typical = run_gpuvs_json(big);
    EXPECT_EQ(typical["scenario"]["network"], nullptr);
    EXPECT_EQ(typical["ranked"][0]["network"], "ib-ndr-8x400");
  }
  // The same length said twice the same way is one length; tenants sharing cards are priced as graphs (a profile).
  EXPECT_EQ(run_gpuvs("advise --task infer --workload llama3-8b --seq-len 512 --options seq_len=0512 --gpu l4").exit_code, 0);
  EXPECT_EQ(run_gpuvs_json("advise --task infer --workload llama3-8b --tenants 2 --options framework=tensorrt --gpu h100-sxm --json")
                ["scenario"]["framework"],
            "tensorrt");
  // Options that say no shape leave a scenario file's shape as it is.
  TempDir files;
  const std::string gpt = (files / "gpt.toml").string();
  gpuvs::test::write_text(gpt, "workload = \"gpt\"\ntask = \"infer\"\noptions = \"layers=4;hidden=512;heads=8\"\n");
  const auto kept = run_gpuvs_json("advise --scenario " + gpt + " --options gen_len=64 --gpu l4 --json");
  EXPECT_EQ(kept["scenario"]["options"]["layers"], "4");
  EXPECT_EQ(kept["scenario"]["gen_len"], 64);
  // A shape key said over the file's, key by key; a flag naming another workload leaves the file's shape behind.
  const auto over = run_gpuvs_json("advise --scenario " + gpt + " --options 'seq_len=256;layers=6' --gpu l4 --json");
  EXPECT_EQ(over["scenario"]["options"]["layers"], "6");
  EXPECT_EQ(over["scenario"]["options"]["hidden"], "512");
  EXPECT_EQ(run_gpuvs_json("advise --scenario " + gpt + " --workload llama3-8b --options framework=sglang --gpu l4 --json")
                ["scenario"]["engine"],
            "sglang");
  {
    TempDir evdir;
    const auto ev = run_gpuvs("evaluate --scenario " + gpt + " --options gen_len=64 --rows 2000 --epochs 1 --threads 1 --no-report --db " +
                              (evdir / "h.db").string());
    ASSERT_EQ(ev.exit_code, 0) << ev.err;
    const auto stored = run_gpuvs_json("report -o json --db " + (evdir / "h.db").string())["payload"];
    EXPECT_EQ(stored["advice"]["scenario"]["options"]["layers"], "4");
    EXPECT_EQ(stored["advice"]["scenario"]["gen_len"], 64);
  }
  // evaluate: the same words set its scenario, so its table and its advice price them.
  TempDir dir;
  const std::string db = (dir / "h.db").string();
  const auto ev = run_gpuvs("evaluate --scenario " + std::string(GPUVS_SOURCE_DIR) +
                            "/examples/serving.toml --options 'framework=sglang;gen_len=64' --rows 2000 --epochs 1 --threads 1 --no-report --db " + db);
  ASSERT_EQ(ev.exit_code, 0) << ev.err;
  const auto run = run_gpuvs_json("report -o json --db " + db)["payload"];
  EXPECT_EQ(run["advice"]["scenario"]["engine"], "sglang");
  ASSERT_FALSE(run["predictions"].empty());
  for (const auto& e : run["predictions"]) {
    EXPECT_EQ(e["engine"], "sglang") << e["gpu"];
    EXPECT_EQ(e["gen_len"], 64) << e["gpu"];
  }
}

// A figure shown in two places is the same figure: the seed model's cost read $0.0370 per billion samples in
// evaluate's summary, $0.0000370 per million in its advice and 5.705e-05 in compare. One rule (advise::cost_scale):
// per billion where every figure is under a cent per million, dollars always as dollars.
TEST(Cli, CostsOfManyUnitsReadAlikeInCompareAdviseAndEvaluate) {
  const auto adv = run_gpuvs("advise --workload seed-mlp --gpu rtx-4090,a100-80gb-sxm");
  ASSERT_EQ(adv.exit_code, 0) << adv.err;
  const auto cmp = run_gpuvs("compare rtx-4090 a100-80gb-sxm");
  ASSERT_EQ(cmp.exit_code, 0) << cmp.err;
  const auto four = run_gpuvs_json("advise --workload seed-mlp --gpu rtx-4090 --json");
  EXPECT_EQ(four["cost_what"], "per billion samples");
  const double per_billion = four["ranked"][0]["cost_usd"].get<double>();
  const std::string shown = fmt::format("${:.4f}", per_billion).substr(0, 7);  // $0.0571
  EXPECT_NE(adv.out.find(shown + " per billion samples"), std::string::npos) << adv.out.substr(0, 800);
  std::string owned_row;
  std::istringstream lines(cmp.out);
  for (std::string line; std::getline(lines, line);)
    if (line.find("owned $ per") != std::string::npos) owned_row = line;
  EXPECT_NE(owned_row.find("owned $ per billion"), std::string::npos) << cmp.out;
  EXPECT_NE(owned_row.find(shown), std::string::npos) << owned_row << " vs " << shown;
  EXPECT_EQ(cmp.out.find("e-0"), std::string::npos) << cmp.out;  // no exponents on money
  // A served decoder's costs are cents per million output tokens: per million, as compare prints them.
  const auto llm = run_gpuvs("compare l40s h100-sxm --workload llama3-8b --mode infer");
  EXPECT_NE(llm.out.find("per million output tokens"), std::string::npos) << llm.out;
}

// Issue 33 item 8: one spelling of a flag across commands. -o/--output table|json beside --json (as bench and
// llama-bench spell it), --batch for train as for predict and compare, --dtype in --precision's and PyTorch's
// spellings.
TEST(Cli, FlagsAreSpelledAlikeAcrossCommands) {
  const auto a = run_gpuvs_json("predict --gpu rtx-4090 -o json");
  EXPECT_EQ(a, run_gpuvs_json("predict --gpu rtx-4090 --json"));
  for (const std::string cmd : {"compare --output json", "advise --workload seed-mlp -o json", "workloads -o json", "devices -o json"})
    EXPECT_NO_THROW(run_gpuvs_json(cmd)) << cmd;
  EXPECT_EQ(run_gpuvs("predict --gpu rtx-4090 -o table").out.find('{'), std::string::npos);
  expect_usage_error(run_gpuvs("predict --gpu rtx-4090 -o xml"), "--output: xml not in {table,json,csv,md}");
  const auto t = run_gpuvs("train seed-mlp --batch 64 --epochs 1 --rows 1000 --json --threads 1");
  ASSERT_EQ(t.exit_code, 0) << t.err;
  EXPECT_EQ(nlohmann::json::parse(t.out)["batch_size"], 64);
  const auto g = run_gpuvs_json("graph seed-mlp --dtype float32 --json"), f = run_gpuvs_json("graph seed-mlp --dtype f32 --json");
  EXPECT_EQ(g["total"], f["total"]);
  EXPECT_EQ(g["params"], f["params"]);
  // --gpus is a count in advise as in predict and train: no plan uses more; cards are named with --gpu.
  const auto capped = run_gpuvs_json("advise --params 7e9 --tokens 1e10 --gpu h100-sxm --gpus 8 --json");
  const auto open = run_gpuvs_json("advise --params 7e9 --tokens 1e10 --gpu h100-sxm --json");
  ASSERT_FALSE(capped["options"].empty());
  int most_capped = 0, most_open = 0;
  for (const auto& o : capped["options"]) most_capped = std::max(most_capped, o["count"].get<int>());
  for (const auto& o : open["options"]) most_open = std::max(most_open, o["count"].get<int>());
  EXPECT_LE(most_capped, 8) << capped["options"].size();
  EXPECT_GT(most_open, 8);
  const auto ids = run_gpuvs("advise --gpus rtx-4090,h100-sxm");
  expect_usage_error(ids, "--gpus rtx-4090,h100-sxm: the most GPUs a plan may use");
  EXPECT_NE(ids.err.find("--gpu rtx-4090,h100-sxm"), std::string::npos) << ids.err;
  expect_usage_error(run_gpuvs("advise --gpus 0"), "--gpus 0");
}

/// RFC 4180 lines split into cells (quotes stripped, doubled quotes undone): enough to read gpuvs's CSV back.
std::vector<std::vector<std::string>> read_csv(const std::string& text) {
  std::vector<std::vector<std::string>> rows(1);
  std::string cell;
  bool quoted = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (quoted && c == '"' && i + 1 < text.size() && text[i + 1] == '"') cell += text[++i];
    else if (c == '"') quoted = !quoted;
    else if (!quoted && c == ',') rows.back().push_back(std::exchange(cell, {}));
    else if (!quoted && c == '\n') {
      rows.back().push_back(std::exchange(cell, {}));
      rows.emplace_back();
    } else cell += c;
  }
  rows.pop_back();  // after the last line break
  return rows;
}

// Issue 33 item 8: -o/--output table|json|csv|md on every command that prints results, as llama-bench has it. csv
// and md hold the JSON's figures, a row per record, every row as wide as the header; text that a spreadsheet
// would run as a formula is defused, and a Markdown cell's "|" escaped.
TEST(Cli, EveryCommandPrintsCsvAndMarkdown) {
  TempDir dir;
  const std::string db = (dir / "h.db").string();
  ASSERT_EQ(run_gpuvs("train seed-mlp --epochs 1 --rows 500 --threads 1 --logdir " + (dir / "logs").string() + " -o csv").exit_code, 0);
  for (const std::string cmd : {"predict --gpu rtx-4090", "predict --workload llama3-8b --gpu h100-sxm --mode infer", "compare",
                                "advise --workload seed-mlp", "workloads", "devices", "catalog", "catalog show rtx-4090",
                                "graph seed-mlp --ops", "validate --data " GPUVS_SOURCE_DIR "/data/validation/micro.csv"})
    for (const std::string format : {"csv", "md"}) {
      const auto r = run_gpuvs(cmd + " -o " + format);
      ASSERT_EQ(r.exit_code, 0) << cmd << ": " << r.err;
      if (format == "md") {
        EXPECT_EQ(r.out.substr(0, 2), "| ") << cmd;
        continue;
      }
      const auto rows = read_csv(r.out);
      ASSERT_GE(rows.size(), 2u) << cmd << ": " << r.out;
      for (const auto& row : rows) EXPECT_EQ(row.size(), rows[0].size()) << cmd;
    }
  // The same figures as the JSON: a row per workload, compare's throughput cell by cell.
  const auto wj = run_gpuvs_json("workloads -o json");
  EXPECT_EQ(read_csv(run_gpuvs("workloads -o csv").out).size(), wj["workloads"].size() + 1);
  const auto cj = run_gpuvs_json("compare -o json");
  const auto cc = read_csv(run_gpuvs("compare -o csv").out);
  const auto col = std::find(cc[0].begin(), cc[0].end(), "throughput.value") - cc[0].begin();
  ASSERT_LT(col, static_cast<long>(cc[0].size()));
  EXPECT_EQ(cc[0][0], "gpu");
  EXPECT_DOUBLE_EQ(std::stod(cc[1][col]), cj["gpus"][0]["throughput"]["value"].get<double>());
  // A name from a file: a formula defused in CSV, a pipe escaped in Markdown.
  const auto model = dir / "m.toml";
  gpuvs::test::write_text(model, "name = \"=HYPERLINK(1)|x\"\ninput_shape = [4]\n[[layers]]\ntype = \"dense\"\nunits = 2\nactivation = \"softmax\"\n");
  const auto g = read_csv(run_gpuvs("graph " + model.string() + " -o csv").out);
  const auto wcol = std::find(g[0].begin(), g[0].end(), "workload") - g[0].begin();
  ASSERT_LT(wcol, static_cast<long>(g[0].size()));
  EXPECT_EQ(g[1][wcol], "'=HYPERLINK(1)|x");
  EXPECT_NE(run_gpuvs("graph " + model.string() + " -o md").out.find("=HYPERLINK(1)\\|x"), std::string::npos);
  expect_usage_error(run_gpuvs("compare -o xml"), "--output: xml not in {table,json,csv,md}");
}

// Issue 33 item 4: compare --gpus-each 2 priced two replicas of the whole model (one GPU's weights each) and, the
// first card unable to serve it, showed "ratio 0.00x" for the rest. N GPUs each now hold one copy split N ways
// unless tp= says otherwise, and ratios are to the first card that serves it.
TEST(Cli, CompareGpusEachSplitsTheModelAndRatiosSkipCardsThatCannotServe) {
  const auto r = run_gpuvs("compare rtx-4090 h100-sxm --workload llama3-70b --mode infer --gpus-each 2");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("2 GPU(s) each: 1 replica(s) of tensor parallel 2"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("0.00x"), std::string::npos) << r.out;
  const auto j = run_gpuvs_json("compare rtx-4090 h100-sxm --workload llama3-70b --mode infer --gpus-each 2 --json");
  EXPECT_TRUE(j["gpus"][0].contains("cannot_serve"));
  EXPECT_DOUBLE_EQ(j["gpus"][1]["ratio"].get<double>(), 1.0);
  const auto replicas = run_gpuvs("compare h100-sxm a100-80gb-sxm --workload llama3-8b --mode infer --gpus-each 2 --options tp=1");
  EXPECT_NE(replicas.out.find("2 replica(s) of tensor parallel 1"), std::string::npos) << replicas.out;
}


// A training run measured on the card the user has, carried to the others: the measured card reproduces it, the others
// move by the class it fixed, and what the command left unsaid is the measurement's, said so.
TEST(Cli, CompareCarriesAMeasuredTrainingRunToOtherCards) {
  const std::string spec = "'gpu=rtx-3090;workload=resnet50;mode=train;precision=amp-fp16;batch=128;value=700 images/s'";
  const auto j = run_gpuvs("compare rtx-3090 a100-80gb-sxm --json --measured " + spec);
  ASSERT_EQ(j.exit_code, 0) << j.err;
  const auto doc = nlohmann::json::parse(j.out);
  EXPECT_EQ(doc["workload"], "resnet50");
  EXPECT_EQ(doc["batch"], 128);
  EXPECT_EQ(doc["precision"], "amp-fp16");
  EXPECT_NEAR(doc["gpus"][0]["throughput"]["value"].get<double>(), 700.0, 0.5);
  const double before = doc["gpus"][0]["throughput_without_measurements"];
  EXPECT_GT(before, 700.0 * 1.05);  // the model alone is faster than this run: the stack's kernels are slower
  EXPECT_TRUE(doc["gpus"][1]["measured_applied"].get<bool>());
  EXPECT_LT(doc["gpus"][1]["throughput"]["value"].get<double>(), doc["gpus"][1]["throughput_without_measurements"].get<double>());
  ASSERT_FALSE(doc["measured"]["steps"].empty());
  EXPECT_EQ(doc["measured"]["engine"], "pytorch");
  EXPECT_EQ(doc["measured"]["format"], "amp-fp16");
  // predict says the same figure for a card as compare does.
  const auto p = run_gpuvs("predict --gpu a100-80gb-sxm --workload resnet50 --precision amp-fp16 --batch 128 --json --measured " + spec);
  ASSERT_EQ(p.exit_code, 0) << p.err;
  const auto pd = nlohmann::json::parse(p.out);
  EXPECT_DOUBLE_EQ(pd["throughput"]["value"].get<double>(), doc["gpus"][1]["throughput"]["value"].get<double>());
  EXPECT_TRUE(pd["measured"]["applied"].get<bool>());
  // Another precision is another stack: not applied, and said.
  const auto other = run_gpuvs("predict --gpu a100-80gb-sxm --workload resnet50 --precision tf32 --measured " + spec);
  ASSERT_EQ(other.exit_code, 0) << other.err;
  EXPECT_NE(other.out.find("not applied"), std::string::npos) << other.out;
  for (const auto& [args, expect] : std::vector<std::pair<std::string, std::string>>{
           {"compare rtx-3090 a100-80gb-sxm --measured 'gpu=rtx-3090;workload=resnet50;mode=train;value=700 tokens/s'",
            "the figure is in tokens/s, a prediction of resnet50 in images/s"},
           {"compare rtx-3090 a100-80gb-sxm --measured " + spec + " --measured 'gpu=rtx-3090;workload=llama3-8b;mode=decode;precision=q4_k_m;value=100 tokens/s'",
            "training figures calibrate training, served figures serving: got 1 training figure(s) among 2"},
           {"compare rtx-3090 a100-80gb-sxm --measured " + spec + " --measured 'gpu=rtx-3090;workload=resnet50;mode=train;precision=tf32;batch=64;value=300 images/s'",
            "ran pytorch tf32, and --measured ran pytorch amp-fp16: one stack at a time"},
           {"predict --gpu a100-80gb-sxm --workload resnet50 --measured 'gpu=rtx-3090;workload=resnet50;mode=train;gen_len=4;value=7 images/s'",
            "prompt_len and gen_len describe serving figures"},
           {"predict --gpu a100-80gb-sxm --workload resnet50 --measured 'gpu=rtx-3090;workload=resnet50;mode=train;precision=fp7;value=7 images/s'",
            "fp7"}}) {
    const auto bad = run_gpuvs(args);
    EXPECT_EQ(bad.exit_code, 2) << args << "\n" << bad.err;
    EXPECT_NE(bad.err.find(expect), std::string::npos) << args << "\n" << bad.err;
    EXPECT_EQ(count_lines(bad.err), 1) << bad.err;
  }
}

TEST(Cli, TwoTrainingRunsAtDifferentBatchesFixTwoClasses) {
  // Issue 35: a large batch's figure reads the stack's matrix kernels, a batch of one its memory-bound kernels or fixed
  // costs. Both figures of BERT-base on an RTX 3090, at 80% and 70% of what the model gives: each fixes its own class,
  // and together they reproduce both runs.
  const auto model = [](int batch) {
    const auto r = run_gpuvs("predict --gpu rtx-3090 --workload bert-base --precision amp-fp16 --batch " + std::to_string(batch) + " --json");
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return nlohmann::json::parse(r.out)["throughput"]["value"].get<double>();
  };
  const double big = 0.8 * model(512), small = 0.7 * model(1);
  const auto spec = [](int batch, double value) {
    return fmt::format("'gpu=rtx-3090;workload=bert-base;mode=train;precision=amp-fp16;batch={};value={:.6g} sequences/s'", batch, value);
  };
  const auto r = run_gpuvs("compare rtx-3090 a100-80gb-sxm --json --measured " + spec(512, big) + " --measured " + spec(1, small));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto doc = nlohmann::json::parse(r.out);
  const auto& steps = doc["measured"]["steps"];
  ASSERT_EQ(steps.size(), 2U) << r.out;
  EXPECT_EQ(steps[0]["kernels"], "matrix") << r.out;
  EXPECT_NE(steps[1]["kernels"], "matrix") << r.out;
  for (const auto& st : steps) EXPECT_NEAR(st["predicted_after"].get<double>() / st["measured"].get<double>(), 1.0, 0.03) << st;
  // The model finds the small batch's 30% in its memory-bound kernels; the large batch's 20% is then mostly those too.
  EXPECT_EQ(steps[1]["kernels"], "memory") << r.out;
  EXPECT_LT(doc["measured"]["memory_ratio"].get<double>(), 0.8);
  EXPECT_NE(r.out.find("fixed costs: no figure given is most sensitive to them here"), std::string::npos) << r.out;
}

// gpuvs calibrate --save: the calibration as a file; --stack FILE gives what --measured gives, without the measurements.
TEST(Cli, ACalibrationSavedAsAFileAppliesLikeTheMeasurementItCameFrom) {
  TempDir dir;
  const std::string spec = "'gpu=rtx-3090;workload=resnet50;mode=train;precision=amp-fp16;batch=128;value=700 images/s'";
  const std::string file = (dir / "stack.toml").string();
  const auto c = run_gpuvs("calibrate " + spec + " --save " + file);
  ASSERT_EQ(c.exit_code, 0) << c.err;
  EXPECT_NE(c.out.find("memory-bound kernels x0."), std::string::npos) << c.out;  // slower than the model: below 1
  const auto from_file = run_gpuvs("compare rtx-3090 a100-80gb-sxm --workload resnet50 --precision amp-fp16 --batch 128 --json --stack " + file);
  const auto from_run = run_gpuvs("compare rtx-3090 a100-80gb-sxm --json --measured " + spec);
  ASSERT_EQ(from_file.exit_code, 0) << from_file.err;
  ASSERT_EQ(from_run.exit_code, 0) << from_run.err;
  const auto a = nlohmann::json::parse(from_file.out), b = nlohmann::json::parse(from_run.out);
  for (int i = 0; i < 2; ++i)
    EXPECT_NEAR(a["gpus"][i]["throughput"]["value"].get<double>(), b["gpus"][i]["throughput"]["value"].get<double>(),
                1e-5 * b["gpus"][i]["throughput"]["value"].get<double>());
  // Another precision is another stack: the table says it was not applied, and the figures are the model's.
  const auto other = run_gpuvs("compare rtx-3090 a100-80gb-sxm --workload resnet50 --precision tf32 --batch 128 --stack " + file);
  ASSERT_EQ(other.exit_code, 0) << other.err;
  EXPECT_NE(other.out.find("Not applied: the measurement ran pytorch amp-fp16"), std::string::npos) << other.out;
  // A calibration over itself is fine; over a file gpuvs did not write, or over its own measurement file, refused.
  EXPECT_EQ(run_gpuvs("calibrate " + spec + " --save " + file).exit_code, 0);
  const std::string foreign = (dir / "notes.toml").string();
  std::ofstream(foreign) << "title = \"mine\"\n";
  for (const auto& [args, expect] : std::vector<std::pair<std::string, std::string>>{
           {"calibrate " + spec + " --save " + foreign, "--save " + foreign},
           {"calibrate " + file + " --save " + file, file},
           {"predict --gpu a100-80gb-sxm --workload resnet50 --stack " + foreign, foreign + ":1: unknown key 'title'"},
           {"compare rtx-3090 a100-80gb-sxm --stack /nonexistent/stack.toml", "/nonexistent/stack.toml"}}) {
    const auto bad = run_gpuvs(args);
    EXPECT_EQ(bad.exit_code, 2) << args << "\n" << bad.err;
    EXPECT_NE(bad.err.find(expect), std::string::npos) << args << "\n" << bad.err;
    EXPECT_EQ(count_lines(bad.err), 1) << bad.err;
  }
  EXPECT_EQ(gpuvs::test::slurp(foreign), "title = \"mine\"\n");
  EXPECT_NE(run_gpuvs("predict --gpu a100-80gb-sxm --stack " + file + " --measured " + spec).exit_code, 0);  // one or the other
}

// One question, one answer: predict takes what it leaves unsaid from the measurement as compare does (it priced its
// own defaults: the seed model where a decoder's figures came, the model's prompt where the figure's was 1 token).
TEST(Cli, PredictTakesWhatItLeavesUnsaidFromTheMeasurementAsCompareDoes) {
  const std::string decode = "'gpu=rtx-3090;workload=llama3-8b;mode=decode;precision=q4_k_m;value=100 tokens/s'";
  const auto p = run_gpuvs_json("predict --gpu h100-sxm --json --measured " + decode);
  EXPECT_EQ(p["workload"], "llama3-8b");
  EXPECT_EQ(p["mode"], "decode");
  EXPECT_EQ(p["format"], "q4_k_m");
  EXPECT_NE(p["assumed"].dump().find("workload llama3-8b (your measurement's"), std::string::npos) << p["assumed"];
  const auto own = run_gpuvs_json("predict --gpu rtx-3090 --json --measured " + decode);
  const auto c = run_gpuvs_json("compare rtx-3090 h100-sxm --json --measured " + decode);
  EXPECT_DOUBLE_EQ(c["gpus"][0]["throughput"]["value"].get<double>(), own["throughput"]["value"].get<double>());
  EXPECT_DOUBLE_EQ(c["gpus"][1]["throughput"]["value"].get<double>(), p["throughput"]["value"].get<double>());
  EXPECT_NEAR(own["throughput"]["value"].get<double>(), 100, 0.1);
  const std::string train = "'gpu=rtx-3090;workload=resnet50;mode=train;precision=amp-fp16;batch=128;value=700 images/s'";
  const auto t = run_gpuvs_json("predict --gpu a100-80gb-sxm --json --measured " + train);
  EXPECT_EQ(t["workload"], "resnet50");
  EXPECT_EQ(t["batch"], 128);
  EXPECT_EQ(t["precision"], "amp-fp16");
  const auto ct = run_gpuvs_json("compare rtx-3090 a100-80gb-sxm --json --measured " + train);
  EXPECT_DOUBLE_EQ(ct["gpus"][1]["throughput"]["value"].get<double>(), t["throughput"]["value"].get<double>());
  // What the flags say stays theirs: another test than the figure's takes none of its lengths or batch (--mode infer
  // priced one request of a 1-token prompt in flight: 55x off the same stack stored), another model none of its batch.
  const auto prefill = run_gpuvs_json("predict --gpu h100-sxm --json --mode prefill --measured " + decode);
  EXPECT_EQ(prefill["mode"], "prefill");
  EXPECT_EQ(prefill["assumed"].dump().find("prompt_len=1"), std::string::npos) << prefill["assumed"];
  TempDir dir;
  const std::string vllm = "'gpu=rtx-4090;workload=llama3-8b;mode=decode;precision=fp16;framework=vllm;batch=8;value=50 tokens/s'";
  const std::string stored = (dir / "v.toml").string();
  ASSERT_EQ(run_gpuvs("calibrate " + vllm + " --save " + stored).exit_code, 0);
  const std::string infer = "predict --gpu h100-sxm --workload llama3-8b --mode infer --precision fp16 --options 'framework=vllm;prompt_len=512' --json";
  const auto by_figures = run_gpuvs_json(infer + " --measured " + vllm), by_file = run_gpuvs_json(infer + " --stack " + stored);
  EXPECT_EQ(by_figures["batch"], by_file["batch"]);
  EXPECT_NEAR(by_figures["throughput"]["value"].get<double>(), by_file["throughput"]["value"].get<double>(),
              1e-4 * by_file["throughput"]["value"].get<double>());
  const auto at_8 = run_gpuvs_json("predict --gpu h100-sxm --json --measured " + vllm);  // the figure's own test: its batch, said
  EXPECT_EQ(at_8["batch"], 8);
  EXPECT_NE(at_8["assumed"].dump().find("batch 8 (your measurement's)"), std::string::npos) << at_8["assumed"];
  const auto bert = run_gpuvs_json("predict --gpu a100-80gb-sxm --workload bert-large --json --measured " + train);
  EXPECT_EQ(bert["batch"], run_gpuvs_json("predict --gpu a100-80gb-sxm --workload bert-large --json")["batch"]);
  // A card's name as a tool printed it is read, and said, once.
  const auto named = run_gpuvs("predict --gpu a100-80gb-sxm --json --measured 'gpu=NVIDIA GeForce RTX 3090;workload=resnet50;mode=train;"
                               "precision=amp-fp16;batch=128;value=700 images/s'");
  ASSERT_EQ(named.exit_code, 0) << named.err;
  EXPECT_EQ(count_lines(named.err), 1) << named.err;
  // Figures of another kind than the request are refused.
  expect_usage_error(run_gpuvs("predict --gpu h100-sxm --workload resnet50 --measured " + decode), "is not a decoder");
  expect_usage_error(run_gpuvs("compare rtx-3090 h100-sxm --workload resnet50 --measured " + decode), "is not a decoder");
  expect_usage_error(run_gpuvs("predict --gpu h100-sxm --workload llama3-8b --mode decode --measured " + train), "figures of a training run");
}

// A stored stack answers as the figures it was solved from: --stack takes what a command leaves unsaid from what its
// figures ran (predict --stack priced seed-mlp training, and said "not applied", where --measured with the same figure
// priced the decoder it measured); a file that does not say what they ran takes nothing, said.
TEST(Cli, AStoredStackTakesWhatItLeavesUnsaidAsItsFiguresWould) {
  TempDir dir;
  const auto same = [](const nlohmann::json& a, const nlohmann::json& b) {
    for (const char* key : {"workload", "mode", "format", "batch", "precision"}) EXPECT_EQ(a.value(key, nlohmann::json()), b.value(key, nlohmann::json())) << key;
    const double x = a["throughput"]["value"].get<double>(), y = b["throughput"]["value"].get<double>();
    EXPECT_NEAR(x, y, 1e-4 * y);  // the file keeps the ratios to 6 digits
  };
  const std::string decode = "'gpu=rtx-3090;workload=llama3-8b;mode=decode;precision=q4_k_m;value=100 tokens/s'";
  const std::string train = "'gpu=rtx-3090;workload=resnet50;mode=train;precision=amp-fp16;batch=128;value=700 images/s'";
  for (const auto& [name, spec] : {std::pair{"decode", decode}, std::pair{"train", train}}) {
    const std::string stored = (dir / (std::string(name) + ".toml")).string();
    ASSERT_EQ(run_gpuvs("calibrate " + spec + " --save " + stored).exit_code, 0);
    const auto by_file = run_gpuvs_json("predict --gpu h100-sxm --json --stack " + stored);
    same(run_gpuvs_json("predict --gpu h100-sxm --json --measured " + spec), by_file);
    EXPECT_NE(by_file["assumed"].dump().find("stored in " + stored), std::string::npos) << by_file["assumed"];
    const auto c_file = run_gpuvs_json("compare rtx-3090 h100-sxm --json --stack " + stored);
    const auto c_figures = run_gpuvs_json("compare rtx-3090 h100-sxm --json --measured " + spec);
    for (int i = 0; i < 2; ++i) same(c_figures["gpus"][i], c_file["gpus"][i]);
    EXPECT_EQ(c_file["workload"], name == std::string("train") ? "resnet50" : "llama3-8b");
  }
  const auto stored_decode = run_gpuvs_json("predict --gpu h100-sxm --json --stack " + (dir / "decode.toml").string());
  EXPECT_EQ(stored_decode["workload"], "llama3-8b");
  EXPECT_EQ(stored_decode["format"], "q4_k_m");
  // What the flags say stays theirs, as with the figures.
  const auto prefill = run_gpuvs_json("predict --gpu h100-sxm --json --mode prefill --stack " + (dir / "decode.toml").string());
  EXPECT_EQ(prefill["mode"], "prefill");
  EXPECT_EQ(prefill["assumed"].dump().find("prompt_len=1"), std::string::npos) << prefill["assumed"];
  // A file written before gpuvs kept what its figures ran: nothing taken, said.
  const std::string written = gpuvs::files::read_all((dir / "decode.toml").string(), "the stack file");
  ASSERT_NE(written.find("\n[[figure]]"), std::string::npos) << written;
  const std::string old_file = written.substr(0, written.find("\n[[figure]]"));
  const auto old_path = dir / "old.toml";
  gpuvs::test::write_text(old_path, old_file);
  const auto old = run_gpuvs_json("predict --gpu h100-sxm --json --stack " + old_path.string());
  EXPECT_EQ(old["workload"], "seed-mlp");
  EXPECT_NE(old["assumed"].dump().find("nothing from --stack " + old_path.string()), std::string::npos) << old["assumed"];
  // A hand-edited run is one line naming the file, line and key.
  gpuvs::test::write_text(dir / "bad.toml", old_file + "\n[[figure]]\nsource = \"x\"\nmode = \"decode\"\nworkload = \"llama3-8b\"\n"
                                                          "precision = \"q4_k_m\"\nbatch = -1\noptions = {}\n");
  expect_usage_error(run_gpuvs("predict --gpu h100-sxm --stack " + (dir / "bad.toml").string()), "'batch' must be a whole number");
  // Figures of another kind than the request are refused as --measured refuses them, naming the file.
  expect_usage_error(run_gpuvs("predict --gpu h100-sxm --workload resnet50 --stack " + (dir / "decode.toml").string()),
                     "--stack " + (dir / "decode.toml").string() + ": these are figures of a served decoder");
  expect_usage_error(run_gpuvs("predict --gpu h100-sxm --workload llama3-8b --mode decode --stack " + (dir / "train.toml").string()),
                     "figures of a training run");
  // A model file a figure ran is stored as an absolute path: the stack applies from any directory, and where the file
  // is gone, that is said rather than another file of that name read.
  std::filesystem::create_directories(dir / "model");
  std::filesystem::create_directories(dir / "elsewhere");
  std::filesystem::copy_file(std::string(GPUVS_TEST_DATA) + "/hf/qwen2-7b/config.json", dir / "model" / "config.json");
  const std::string in_dir = "cd " + dir.path().string() + " && ";
  const std::string by_file_spec = "'gpu=rtx-3090;workload=model/config.json;mode=decode;precision=bf16;value=30 tokens/s'";
  ASSERT_EQ(gpuvs::test::run_gpuvs_with(in_dir, "calibrate " + by_file_spec + " --save hf.toml").exit_code, 0);
  const auto from_there = gpuvs::test::run_gpuvs_with("cd " + (dir / "elsewhere").string() + " && ", "predict --gpu h100-sxm --json --stack ../hf.toml");
  ASSERT_EQ(from_there.exit_code, 0) << from_there.err;
  const auto here = gpuvs::test::run_gpuvs_with(in_dir, "predict --gpu h100-sxm --json --measured " + by_file_spec);
  ASSERT_EQ(here.exit_code, 0) << here.err;
  const auto a = nlohmann::json::parse(here.out), b = nlohmann::json::parse(from_there.out);
  EXPECT_EQ(b["workload"], (dir / "model" / "config.json").string()) << "the file as stored, absolute";
  for (const char* key : {"mode", "format", "batch"}) EXPECT_EQ(a[key], b[key]) << key;
  EXPECT_NEAR(a["throughput"]["value"].get<double>(), b["throughput"]["value"].get<double>(), 1e-4 * b["throughput"]["value"].get<double>());
  // A checkpoint folder the same way: stored relative, from elsewhere it named another folder or a hub id of that name.
  const std::string by_folder_spec = "'gpu=rtx-3090;workload=model;mode=decode;precision=bf16;value=30 tokens/s'";
  ASSERT_EQ(gpuvs::test::run_gpuvs_with(in_dir, "calibrate " + by_folder_spec + " --save folder.toml").exit_code, 0);
  const auto folder = gpuvs::test::run_gpuvs_with("cd " + (dir / "elsewhere").string() + " && ", "predict --gpu h100-sxm --json --stack ../folder.toml");
  ASSERT_EQ(folder.exit_code, 0) << folder.err;
  const auto f = nlohmann::json::parse(folder.out);
  EXPECT_EQ(f["workload"], (dir / "model").string()) << "the folder as stored, absolute";
  EXPECT_NEAR(f["throughput"]["value"].get<double>(), b["throughput"]["value"].get<double>(), 1e-4 * b["throughput"]["value"].get<double>());
  // Through a link as the system resolves it: "L/../deep" is a/deep where L is a/b (lexically it would be ./deep).
  std::filesystem::create_directories(dir / "a" / "b");
  std::filesystem::create_directories(dir / "a" / "deep");
  std::filesystem::copy_file(std::string(GPUVS_TEST_DATA) + "/hf/qwen2-7b/config.json", dir / "a" / "deep" / "config.json");
  std::filesystem::create_directory_symlink(dir / "a" / "b", dir / "L");
  ASSERT_EQ(gpuvs::test::run_gpuvs_with(in_dir, "calibrate 'gpu=rtx-3090;workload=L/../deep/;mode=decode;precision=bf16;value=30 tokens/s' --save link.toml")
                .exit_code,
            0);
  const auto linked = run_gpuvs_json("predict --gpu h100-sxm --json --stack " + (dir / "link.toml").string());
  EXPECT_EQ(linked["workload"], (dir / "a" / "deep").string()) << "resolved through the link, no trailing separator";
  std::filesystem::remove_all(dir / "model");
  expect_usage_error(run_gpuvs("predict --gpu h100-sxm --stack " + (dir / "hf.toml").string()), "which is not here: name the workload");
  expect_usage_error(run_gpuvs("predict --gpu h100-sxm --stack " + (dir / "folder.toml").string()), "which is not here: name the workload");
  // Several training figures: the first given is what --stack takes, as --measured takes it.
  const std::string bert = "'gpu=a100-80gb-sxm;workload=bert-large;mode=train;precision=amp-fp16;batch=32;value=120 sequences/s'";
  const std::string two = (dir / "two.toml").string();
  ASSERT_EQ(run_gpuvs("calibrate " + bert + " " + train + " --save " + two).exit_code, 0);
  same(run_gpuvs_json("predict --gpu h100-sxm --json --measured " + bert + " --measured " + train), run_gpuvs_json("predict --gpu h100-sxm --json --stack " + two));
}

// A stack is solved against the model the command prices with: with --calibration, the card it measured is corrected
// once (its figure reproduces the measurement), by predict, compare and advise alike; a stored stack says which record
// it was solved with and is refused with another, or without it.
TEST(Cli, AStackIsSolvedWithTheCalibrationTheCommandApplies) {
  TempDir dir;
  const auto bench_record = [&](const std::string& name, double tflops, double gbs) {
    const auto path = dir / name;
    gpuvs::test::write_text(path, fmt::format(R"J({{"schema_version": 2, "quick": false, "results": [
      {{"key": "cuda.gemm.fp16", "unit": "TFLOP/s", "status": "ok", "median": {}, "device": "cuda:0 NVIDIA GeForce RTX 3090 (rtx-3090)"}},
      {{"key": "cuda.mem.copy", "unit": "GB/s", "status": "ok", "median": {}, "device": "cuda:0 NVIDIA GeForce RTX 3090 (rtx-3090)"}}]}})J",
                                              tflops, gbs));
    return path.string();
  };
  const std::string rec = bench_record("bench.json", 45, 700), other = bench_record("other.json", 50, 800);
  const std::string spec = "'gpu=rtx-3090;workload=resnet50;mode=train;precision=amp-fp16;batch=128;value=700 images/s'";
  const std::string req = " --workload resnet50 --precision amp-fp16 --batch 128 --json";
  const auto on = [&](const std::string& gpu, const std::string& flags) {
    const auto r = run_gpuvs("predict --gpu " + gpu + req + flags);
    EXPECT_EQ(r.exit_code, 0) << flags << "\n" << r.err;
    return r.exit_code == 0 ? nlohmann::json::parse(r.out)["throughput"]["value"].get<double>() : 0.0;
  };
  // The measured card reproduces its measurement with the calibration applied, as it does without one.
  const double mine = on("rtx-3090", " --measured " + spec + " --calibration " + rec);
  EXPECT_NEAR(mine, 700, 0.7);
  EXPECT_NEAR(on("rtx-3090", " --measured " + spec), 700, 0.7);
  const double a100 = on("a100-80gb-sxm", " --measured " + spec + " --calibration " + rec);
  EXPECT_NE(a100, on("a100-80gb-sxm", " --measured " + spec)) << "the stack solved under the calibration carries other ratios";
  // compare and advise give the same figures for the same request.
  const auto c = run_gpuvs_json("compare rtx-3090 a100-80gb-sxm --batch 128 --json --measured " + spec + " --calibration " + rec);
  EXPECT_NEAR(c["gpus"][0]["throughput"]["value"].get<double>(), mine, 1e-9 * mine);
  EXPECT_NEAR(c["gpus"][1]["throughput"]["value"].get<double>(), a100, 1e-9 * a100);
  EXPECT_NE(c["assumed"].dump().find("rtx-3090's figures corrected by what was measured on it"), std::string::npos) << c["assumed"];
  EXPECT_EQ(c["measured"]["solved_with"]["measured_on"], "rtx-3090");
  const auto adv = run_gpuvs_json("advise --workload resnet50 --precision amp-fp16 --samples 1e9 --gpu rtx-3090 --gpus 1 --json --measured " +
                                  spec + " --calibration " + rec);
  int same = 0;
  for (const auto& o : adv["options"])
    if (o["gpu"] == "rtx-3090" && o["count"] == 1) {  // at the batch advise chose, predict's figure for it
      const auto at = run_gpuvs_json("predict --gpu rtx-3090 --workload resnet50 --precision amp-fp16 --json --batch " +
                                     std::to_string(o["batch"].get<int>()) + " --measured " + spec + " --calibration " + rec);
      EXPECT_NEAR(o["throughput"].get<double>(), at["throughput"]["value"].get<double>(), 1e-9 * mine);
      ++same;
    }
  EXPECT_EQ(same, 1) << adv["options"].dump().substr(0, 400);
  // A stored stack says the record it was solved with, and applies with that record only.
  const std::string solved = (dir / "solved.toml").string(), bare = (dir / "bare.toml").string();
  const auto saved = run_gpuvs("calibrate " + spec + " --calibration " + rec + " --save " + solved);
  ASSERT_EQ(saved.exit_code, 0) << saved.err;
  EXPECT_NE(saved.out.find("the stack was solved with rtx-3090's figures corrected by the calibration from " + rec), std::string::npos) << saved.out;
  ASSERT_EQ(run_gpuvs("calibrate " + spec + " --save " + bare).exit_code, 0);
  EXPECT_NEAR(on("rtx-3090", " --stack " + solved + " --calibration " + rec), mine, 1e-5 * mine);
  EXPECT_NEAR(on("a100-80gb-sxm", " --stack " + solved + " --calibration " + rec), a100, 1e-5 * a100);
  const auto h200 = dir / "h200.json";
  gpuvs::test::write_text(h200, R"J({"schema_version": 2, "quick": false, "results": [
    {"key": "cuda.mem.copy", "unit": "GB/s", "status": "ok", "median": 4200.0, "device": "cuda:0 NVIDIA H200 (h200-sxm)"}]})J");
  EXPECT_EQ(on("rtx-3090", " --stack " + bare + " --calibration " + h200.string()), on("rtx-3090", " --stack " + bare))
      << "a calibration of a card no figure ran on changes nothing the stack solved";
  // Where the measured card is not priced, the calibration still solved the stack: said, not "not applied".
  const auto others = run_gpuvs_json("compare a100-80gb-sxm h100-sxm --batch 128 --json --measured " + spec + " --calibration " + rec);
  EXPECT_NE(others["assumed"].dump().find("which is not compared: it priced only the stack's figures on it"), std::string::npos) << others["assumed"];
  EXPECT_NE(others["assumed"].dump().find("the stack was solved with rtx-3090's figures corrected by the calibration from"), std::string::npos)
      << others["assumed"];
  EXPECT_NEAR(others["gpus"][0]["throughput"]["value"].get<double>(), a100, 1e-9 * a100);
  const auto text = run_gpuvs("predict --gpu a100-80gb-sxm --workload resnet50 --precision amp-fp16 --batch 128 --measured " + spec +
                              " --calibration " + rec);
  EXPECT_NE(text.out.find("the stack was solved with rtx-3090's figures corrected by the calibration from"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("not applied here (measured on rtx-3090): it priced only the stack's figures on it"), std::string::npos)
      << "compare's words for the same case: " << text.out;
  const auto plain_json = run_gpuvs_json("calibrate " + spec + " --json --calibration " + h200.string());
  EXPECT_FALSE(plain_json["calibration"]["applied"].get<bool>());
  EXPECT_TRUE(plain_json["solved_with"].is_null());
  for (const auto& [args, expect] : std::vector<std::pair<std::string, std::string>>{
           {"predict --gpu rtx-3090" + req + " --stack " + bare + " --calibration " + rec, "would correct rtx-3090 twice"},
           {"predict --gpu a100-80gb-sxm" + req + " --stack " + solved, "name that record with --calibration"},
           {"predict --gpu rtx-3090" + req + " --stack " + solved + " --calibration " + h200.string(), "name that record with --calibration"},
           {"compare rtx-3090 a100-80gb-sxm --stack " + solved + " --calibration " + other, "corrects it differently"},
           {"advise --workload resnet50 --gpu rtx-3090 --json --stack " + bare + " --calibration " + rec, "would correct rtx-3090 twice"},
           {"evaluate --no-report --db " + (dir / "h.db").string() + " --stack " + solved, "evaluate corrects only the card it runs on"}}) {
    const auto bad = run_gpuvs(args);
    EXPECT_EQ(bad.exit_code, 2) << args << "\n" << bad.err;
    EXPECT_NE(bad.err.find(expect), std::string::npos) << args << "\n" << bad.err;
    EXPECT_EQ(count_lines(bad.err), 1) << bad.err;
  }
  EXPECT_FALSE(std::filesystem::exists(dir / "h.db")) << "a refused run creates no database";
  // A served decoder's stack the same way: the decode figure is reproduced on the calibrated card.
  const std::string decode = "'gpu=rtx-3090;workload=llama3-8b;mode=decode;precision=q4_k_m;value=100 tokens/s'";
  const auto served = run_gpuvs_json("predict --gpu rtx-3090 --workload llama3-8b --mode decode --precision q4_k_m --json --measured " + decode +
                                     " --calibration " + rec);
  EXPECT_NEAR(served["throughput"]["value"].get<double>(), 100, 0.1) << served.dump().substr(0, 600);
  EXPECT_EQ(served["measured"]["solved_with"]["source"], rec);
}

// advise --measured: every option that runs the measured stack moves by it, and a card's figure there is the figure
// compare gives for the same request (one question, one answer).
TEST(Cli, AdviseRanksWithTheMeasuredStackAndAgreesWithCompare) {
  const std::string spec = "'gpu=rtx-3090;workload=resnet50;mode=train;precision=amp-fp16;batch=128;value=700 images/s'";
  const std::string base = "advise --workload resnet50 --precision amp-fp16 --samples 1e9 --gpu rtx-3090,a100-80gb-sxm --gpus 1 --json";
  const auto with = run_gpuvs(base + " --measured " + spec), without = run_gpuvs(base);
  ASSERT_EQ(with.exit_code, 0) << with.err;
  ASSERT_EQ(without.exit_code, 0) << without.err;
  const auto a = nlohmann::json::parse(with.out), b = nlohmann::json::parse(without.out);
  EXPECT_EQ(a["measured"]["engine"], "pytorch");
  EXPECT_TRUE(b["measured"].is_null());
  bool said = false;
  for (const auto& line : a["assumed"]) said = said || line.get<std::string>().find("your measured stack, pytorch amp-fp16") != std::string::npos;
  EXPECT_TRUE(said) << a["assumed"];
  auto single = [](const nlohmann::json& doc, const std::string& gpu) {
    for (const auto& r : doc["ranked"])
      if (r["gpu"] == gpu && r["count"] == 1) return r;
    return nlohmann::json();
  };
  const auto mine = single(a, "rtx-3090"), plain = single(b, "rtx-3090");
  ASSERT_FALSE(mine.is_null());
  ASSERT_FALSE(plain.is_null());
  EXPECT_LT(mine["throughput"].get<double>(), plain["throughput"].get<double>());
  const auto c = run_gpuvs("compare rtx-3090 a100-80gb-sxm --batch " + std::to_string(mine["batch"].get<int>()) + " --json --measured " + spec);
  ASSERT_EQ(c.exit_code, 0) << c.err;
  EXPECT_NEAR(nlohmann::json::parse(c.out)["gpus"][0]["throughput"]["value"].get<double>(), mine["throughput"].get<double>(),
              1e-6 * mine["throughput"].get<double>());
  const auto both = run_gpuvs(base + " --measured " + spec + " --stack x.toml");
  EXPECT_EQ(both.exit_code, 2) << both.err;
}

// advise answers the question the measurement asks, as predict and compare do: what its flags (and no scenario file)
// leave unsaid is what the figures ran (advise --measured with a decoder's decode figure ranked seed-mlp training, the
// stack applied to nothing); it takes no batch or tp (it chooses them per option), and a scenario file says the request.
TEST(Cli, AdviseTakesWhatItLeavesUnsaidFromTheMeasurementAsPredictDoes) {
  TempDir dir;
  const std::string train = "'gpu=rtx-3090;workload=resnet50;mode=train;precision=amp-fp16;batch=128;value=700 images/s'";
  const std::string base = " --samples 1e9 --gpu rtx-3090,a100-80gb-sxm --gpus 1 --json";
  const auto said = run_gpuvs_json("advise" + base + " --measured " + train);
  const auto named = run_gpuvs_json("advise --workload resnet50 --precision amp-fp16" + base + " --measured " + train);
  EXPECT_EQ(said["scenario"]["workload"], "resnet50");
  EXPECT_EQ(said["scenario"]["task"], "train");
  EXPECT_EQ(said["scenario"]["precision"], "amp-fp16");
  EXPECT_EQ(said["ranked"], named["ranked"]);
  EXPECT_NE(said["assumed"].dump().find("workload resnet50 (your measurement's"), std::string::npos) << said["assumed"];
  EXPECT_EQ(said["assumed"].dump().find("batch 128"), std::string::npos) << "advise chooses the batch: " << said["assumed"];
  // A served decoder's figure: its model served, in its weights, whole requests (not the figure's 1-token prompt).
  const std::string decode = "'gpu=rtx-3090;workload=llama3-8b;mode=decode;precision=q4_k_m;value=100 tokens/s'";
  const auto served = run_gpuvs_json("advise --gpu rtx-3090,h100-sxm --json --measured " + decode);
  EXPECT_EQ(served["scenario"]["workload"], "llama3-8b");
  EXPECT_EQ(served["scenario"]["task"], "infer");
  EXPECT_EQ(served["scenario"]["precision"], "q4_k_m");
  EXPECT_NE(served["assumed"].dump().find("task infer (your measurement's: a served decoder)"), std::string::npos) << served["assumed"];
  EXPECT_EQ(served["assumed"].dump().find("prompt_len=1"), std::string::npos) << served["assumed"];
  const auto served_named = run_gpuvs_json("advise --workload llama3-8b --task infer --precision q4_k_m --gpu rtx-3090,h100-sxm --json --measured " + decode);
  EXPECT_EQ(served["ranked"], served_named["ranked"]);
  // --options mean what the task taken makes them: the served request's generated tokens.
  EXPECT_EQ(run_gpuvs_json("advise --gpu rtx-3090 --json --options gen_len=256 --measured " + decode)["scenario"]["gen_len"], 256);
  // The same figures stored give the same advice.
  const std::string stored = (dir / "s.toml").string();
  ASSERT_EQ(run_gpuvs("calibrate " + decode + " --save " + stored).exit_code, 0);
  const auto by_file = run_gpuvs_json("advise --gpu rtx-3090,h100-sxm --json --stack " + stored);
  ASSERT_EQ(by_file["ranked"].size(), served["ranked"].size());
  for (std::size_t i = 0; i < served["ranked"].size(); ++i)
    EXPECT_NEAR(by_file["ranked"][i]["throughput"].get<double>(), served["ranked"][i]["throughput"].get<double>(),
                1e-4 * served["ranked"][i]["throughput"].get<double>());
  // A scenario file says the request, said; figures of another kind than the request named are refused as predict refuses them.
  gpuvs::test::write_text(dir / "scenario.toml", "workload = \"bert-large\"\n");
  const auto from_file = run_gpuvs_json("advise --scenario " + (dir / "scenario.toml").string() + base + " --measured " + train);
  EXPECT_EQ(from_file["scenario"]["workload"], "bert-large");
  EXPECT_NE(from_file["assumed"].dump().find("nothing taken from your measurements"), std::string::npos) << from_file["assumed"];
  expect_usage_error(run_gpuvs("advise --workload resnet50 --gpu h100-sxm --measured " + decode), "is not a decoder");
  expect_usage_error(run_gpuvs("advise --workload llama3-8b --task infer --gpu h100-sxm --measured " + train), "figures of a training run");
  expect_usage_error(run_gpuvs("advise --workload llama3-8b --task finetune --gpu h100-sxm --measured " + decode), "llama3-8b finetune is not served");
  // Tenants sharing a card are priced under a framework profile: no engine, weight format or lengths taken for them.
  const auto tenants = run_gpuvs("advise --gpu h100-sxm --workload llama3-8b --task infer --tenants 2 --json --measured " + decode);
  ASSERT_EQ(tenants.exit_code, 0) << tenants.err;
  EXPECT_EQ(nlohmann::json::parse(tenants.out)["assumed"].dump().find("q4_k_m (your measurement's)"), std::string::npos) << tenants.out.substr(0, 2000);
}

TEST(Cli, AVllmBenchmarkRunCalibratesOnceItsCardAndModelAreSaid) {
  // Issue 35: vLLM's serving benchmark names neither the card nor (printed) the model: a spec with file= says them.
  const std::string dir = std::string(GPUVS_TEST_DATA) + "/vllm-bench/";
  const std::string model = std::string(GPUVS_TEST_DATA) + "/hf/qwen2-7b/config.json";
  const std::string json = dir + "a100-80gb-qwen2-7b-vllm-0.10.1.json";
  const auto r = run_gpuvs("compare a100-80gb-sxm h100-sxm --measured 'file=" + json + ";gpu=a100-80gb-sxm;workload=" + model + ";precision=bf16'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("infer (bf16 weights, vllm engine, 1021 + 1016 tokens)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("a100-80gb-qwen2-7b-vllm-0.10.1.json: infer 3352 output tokens/s on a100-80gb-sxm"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("without measured"), std::string::npos) << r.out;
  // Every run of a pasted log is a row validate scores.
  const auto v = run_gpuvs("validate --measured 'file=" + dir + "a100-80gb-qwen2-7b-vllm-0.10.1.txt;gpu=a100-80gb-sxm;workload=" + model + "'");
  ASSERT_EQ(v.exit_code, 0) << v.err;
  EXPECT_NE(v.out.find("a100-80gb-qwen2-7b-vllm-0.10.1    10      10      100%"), std::string::npos) << v.out;
  for (const auto& [spec, expect] : std::vector<std::pair<std::string, std::string>>{
           {"file=" + json + ";workload=" + model, "json: the output does not name the GPU (vLLM's benchmark never does"},
           {"file=" + json + ";gpu=a100-80gb-sxm", "json: the output gives no parameter count to tell the model by ('Qwen2-7B-Instruct')"},
           {"file=/nonexistent/r.json;gpu=a100-80gb-sxm", "/nonexistent/r.json"},
           {"file=" + json + ";gpu=a100-80gb-sxm;workload=" + model + ";value=3 tokens/s", "--measured: value= with file=: the file holds it"},
           {"file=" + json + ";gpu=no-such-gpu;workload=" + model, "no-such-gpu"}}) {
    const auto bad = run_gpuvs("compare a100-80gb-sxm --measured '" + spec + "'");
    EXPECT_EQ(bad.exit_code, 2) << spec << "\n" << bad.err;
    EXPECT_NE(bad.err.find(expect), std::string::npos) << bad.err;
    EXPECT_EQ(count_lines(bad.err), 1) << bad.err;
  }
  // The file a spec names is an input like any other: a calibration is not saved over it.
  TempDir tmp;
  const std::string copy = (tmp / "run.json").string();
  std::filesystem::copy_file(json, copy);
  const auto over = run_gpuvs("calibrate 'file=" + copy + ";gpu=a100-80gb-sxm;workload=" + model + "' --save " + copy + " --force");
  EXPECT_EQ(over.exit_code, 2) << over.err;
  EXPECT_NE(over.err.find("run.json"), std::string::npos) << over.err;
  EXPECT_EQ(gpuvs::test::slurp(copy), gpuvs::test::slurp(json));
}

TEST(Cli, AnSglangBenchServingRunCalibratesTheSglangEngine) {
  // Issue 35 (SGLang's bench_serving) and 34 (an engine beyond the first four): the run's backend names the engine,
  // priced by data/serving-engines.toml's sglang profile, and the figure moves that engine's kernels only.
  const std::string dir = std::string(GPUVS_TEST_DATA) + "/sglang-bench/";
  for (const char* file : {"h100x8-minimax-m2.5-sglang-0.5.9.jsonl", "h100x8-minimax-m2.5-sglang-0.5.9.txt"}) {
    const auto r = run_gpuvs(std::string("compare a100-80gb-sxm h100-sxm --measured 'file=") + dir + file + ";gpu=h100-sxm;workload=llama3-8b;precision=bf16'");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("infer (bf16 weights, sglang engine, 610 + 422 tokens)"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("Measured " + dir + file), std::string::npos) << r.out;
    EXPECT_NE(r.out.find(": infer 119.1 output tokens/s on h100-sxm"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("only the sglang kernels measured move"), std::string::npos) << r.out;
  }
  // The engine is one a request can name, and it is not vLLM's: its scheduler overlaps the host's work.
  const auto sglang = run_gpuvs("predict --workload llama3-8b --gpu h100-sxm --mode infer --precision bf16 --batch 1 --options framework=sglang --json");
  const auto vllm = run_gpuvs("predict --workload llama3-8b --gpu h100-sxm --mode infer --precision bf16 --batch 1 --options framework=vllm --json");
  ASSERT_EQ(sglang.exit_code, 0) << sglang.err;
  ASSERT_EQ(vllm.exit_code, 0) << vllm.err;
  const auto js = nlohmann::json::parse(sglang.out), jv = nlohmann::json::parse(vllm.out);
  EXPECT_GT(js["throughput"]["value"].get<double>(), jv["throughput"]["value"].get<double>());
  const auto bad = run_gpuvs("predict --workload llama3-8b --gpu h100-sxm --mode infer --precision q4_k_m --options framework=sglang");
  EXPECT_EQ(bad.exit_code, 2) << bad.err;
  EXPECT_EQ(count_lines(bad.err), 1) << bad.err;
}

TEST(Cli, ATensorBoardLogCalibratesTrainingWithTheBatchItRanAt) {
  // Issue 35: a training run's own TensorBoard log. A steps/s figure at 80% of what the model gives for resnet50 on
  // an RTX 4090 at batch 64: calibrated there, the prediction on that card is the measured figure.
  const auto plain = run_gpuvs("predict --workload resnet50 --gpu rtx-4090 --batch 64 --precision amp-fp16 --json");
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  const double model = nlohmann::json::parse(plain.out)["throughput"]["value"].get<double>();
  namespace tb = gpuvs::test::tfevents;
  TempDir tmp;
  const std::string ev = (tmp / "events.out.tfevents.1.host.1.v2").string();
  std::vector<std::string> events;
  for (int i = 0; i < 4; ++i) events.push_back(tb::event(1.7e9 + i, 100 * i, tb::tensor_value("global_step/sec", static_cast<float>(0.8 * model / 64))));
  std::ofstream(ev, std::ios::binary) << tb::events_file(events);
  const auto r = run_gpuvs("predict --workload resnet50 --gpu rtx-4090 --batch 64 --precision amp-fp16 --json --measured 'file=" + ev +
                           ";gpu=rtx-4090;workload=resnet50;batch=64;precision=amp-fp16'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_NEAR(j["throughput"]["value"].get<double>() / (0.8 * model), 1.0, 0.01) << r.out;
  EXPECT_NEAR(j["measured"]["throughput_without"].get<double>(), model, model * 1e-6);
  EXPECT_NE(j["measured"]["steps"][0]["source"].get<std::string>().find("(global_step/sec)"), std::string::npos) << r.out;
  // validate scores it as a row, in the workload's own unit.
  const auto v = run_gpuvs("validate --json --measured 'file=" + ev + ";gpu=rtx-4090;workload=resnet50;batch=64;precision=amp-fp16'");
  ASSERT_EQ(v.exit_code, 0) << v.err;
  const auto rows = nlohmann::json::parse(v.out)["rows"];
  ASSERT_EQ(rows.size(), 1U) << v.out;
  EXPECT_EQ(rows[0]["unit"], "images/s");
  EXPECT_EQ(rows[0]["status"], "ok") << v.out;
  EXPECT_NEAR(rows[0]["predicted"].get<double>() / rows[0]["measured"].get<double>(), 1.25, 0.01);  // the model, against 80% of it
  // What the log does not say is refused in one line: the batch a step rate needs; Keras's default per-epoch logs.
  const auto no_batch = run_gpuvs("predict --workload resnet50 --gpu rtx-4090 --measured 'file=" + ev + ";gpu=rtx-4090;workload=resnet50'");
  EXPECT_EQ(no_batch.exit_code, 2) << no_batch.err;
  EXPECT_NE(no_batch.err.find("is a step rate"), std::string::npos) << no_batch.err;
  EXPECT_EQ(count_lines(no_batch.err), 1) << no_batch.err;
  const auto no_model = run_gpuvs("predict --workload resnet50 --gpu rtx-4090 --measured 'file=" + ev + ";gpu=rtx-4090;batch=64'");
  EXPECT_EQ(no_model.exit_code, 2) << no_model.err;
  EXPECT_NE(no_model.err.find("the log does not name the model: say it with --measured 'file="), std::string::npos) << no_model.err;
  const std::string epochs = (tmp / "epochs.v2").string();
  std::ofstream(epochs, std::ios::binary) << tb::events_file(tb::loss_series("epoch_loss"));
  const auto per_epoch = run_gpuvs("compare rtx-4090 a100-80gb-sxm --measured 'file=" + epochs + ";gpu=rtx-4090;workload=resnet50;batch=64'");
  EXPECT_EQ(per_epoch.exit_code, 2) << per_epoch.err;
  EXPECT_NE(per_epoch.err.find("only per-epoch scalars (epoch_loss)"), std::string::npos) << per_epoch.err;
  EXPECT_EQ(count_lines(per_epoch.err), 1) << per_epoch.err;
}

TEST(Cli, NvbandwidthOutputsAreScoredAsLinkFigures) {
  // Issue 35: nvbandwidth's copy-engine figures become micro rows validate prices, like the published ones in
  // data/validation/micro.csv: the card from its Device lines (nvidia-smi's names), the link from the testcase.
  const std::string dir = std::string(GPUVS_TEST_DATA) + "/nvbandwidth/";
  const auto v = run_gpuvs("validate --json --measured " + dir + "h100x8-p2p-read-v0.4.txt --measured " + dir + "gh200-all-v0.6.txt");
  ASSERT_EQ(v.exit_code, 0) << v.err;
  const auto doc = nlohmann::json::parse(v.out);
  ASSERT_EQ(doc["rows"].size(), 3U) << v.out;
  std::map<std::string, nlohmann::json> by_id;
  for (const auto& r : doc["rows"]) by_id[r["id"].get<std::string>().substr(r["id"].get<std::string>().rfind('/') + 1)] = r;
  const nlohmann::json& p2p = by_id["h100x8-p2p-read-v0.4.txt:20"];
  EXPECT_EQ(p2p["status"], "ok") << v.out;
  EXPECT_DOUBLE_EQ(p2p["measured"].get<double>(), 370.90);
  EXPECT_NEAR(p2p["predicted"].get<double>() / 370.90, 1.0, 0.10);  // NVLink 4's copy engines, one direction
  EXPECT_EQ(by_id["gh200-all-v0.6.txt:10"]["unit"], "GB/s");
  EXPECT_EQ(by_id["gh200-all-v0.6.txt:18"]["status"], "ok");
  EXPECT_NE(v.err.find("read 'NVIDIA H100 80GB HBM3' as h100-sxm"), std::string::npos) << v.err;
  EXPECT_NE(v.err.find("read 'NVIDIA GH200 480GB' as gh200"), std::string::npos) << v.err;
  // A link figure calibrates no stack: one line, exit 2.
  const auto bad = run_gpuvs("compare h100-sxm a100-80gb-sxm --measured " + dir + "h100x8-p2p-read-v0.4.txt");
  EXPECT_EQ(bad.exit_code, 2) << bad.err;
  EXPECT_NE(bad.err.find("nvbandwidth figures (collectives, links) calibrate no stack yet"), std::string::npos) << bad.err;
  EXPECT_EQ(count_lines(bad.err), 1) << bad.err;
}

TEST(Cli, CompletionAndManualPageComeFromTheCommandTree) {
  // Issue 36: a shell completion and a manual page generated from what the binary parses (installed by cmake --install;
  // tests/scripts/install.sh runs the installed completion in bash).
  const auto bash = run_gpuvs("completion bash");
  ASSERT_EQ(bash.exit_code, 0) << bash.err;
  const auto help = run_gpuvs("--help");
  for (const char* command : {"train", "predict", "compare", "advise", "evaluate", "calibrate", "validate", "completion", "man"}) {
    EXPECT_NE(help.out.find(command), std::string::npos) << command;
    EXPECT_NE(bash.out.find(std::string("    ") + command + ") opts=\""), std::string::npos) << command;
  }
  EXPECT_NE(bash.out.find("--measured"), std::string::npos);
  EXPECT_NE(bash.out.find("h100-sxm"), std::string::npos);  // the catalog's ids after --gpu
  EXPECT_NE(bash.out.find("complete -o filenames -F _gpuvs gpuvs"), std::string::npos);
  const auto zsh = run_gpuvs("completion zsh");
  ASSERT_EQ(zsh.exit_code, 0) << zsh.err;
  EXPECT_EQ(zsh.out.rfind("#compdef gpuvs", 0), 0u);
  const auto man = run_gpuvs("man");
  ASSERT_EQ(man.exit_code, 0) << man.err;
  EXPECT_EQ(man.out.rfind(".TH GPUVS 1 ", 0), 0u);
  for (const char* section : {".SS predict\n", ".SS calibrate\n", ".SH EXIT STATUS\n"}) EXPECT_NE(man.out.find(section), std::string::npos) << section;
  EXPECT_NE(man.out.find("\\fB\\-\\-stack\\fR"), std::string::npos);  // options in bold, dashes escaped for roff
  const auto bad = run_gpuvs("completion fish");
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("fish not in {bash,zsh}"), std::string::npos) << bad.err;
  EXPECT_EQ(count_lines(bad.err), 1) << bad.err;
}

TEST(Cli, ATrtllmBenchReportCalibratesWithTheModelItNames) {
  // Issue 35: trtllm-bench names the model the Hugging Face way and never the card; the card is said, the model read.
  const std::string dir = std::string(GPUVS_TEST_DATA) + "/trtllm-bench/";
  const auto r = run_gpuvs("compare h100-sxm a100-80gb-sxm --measured 'file=" + dir + "llama-3.1-8b-pytorch-0.21.txt;gpu=h100-sxm'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("llama3.1-8b infer (bf16 weights, trt-llm engine, 128 + 128 tokens)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("infer 11.08 k output tokens/s on h100-sxm"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("read 'meta-llama/Llama-3.1-8B-Instruct' as llama3.1-8b"), std::string::npos) << r.out;
  const auto v = run_gpuvs("validate --measured 'file=" + dir + "llama-2-7b-fp8-0.12.txt;gpu=h100-sxm'");
  ASSERT_EQ(v.exit_code, 0) << v.err;
  EXPECT_NE(v.out.find("llama2-7b"), std::string::npos) << v.out;
  const auto bad = run_gpuvs("compare h100-sxm --measured " + dir + "llama-2-7b-fp8-0.12.txt");
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("llama-2-7b-fp8-0.12.txt:30: the output does not name the GPU"), std::string::npos) << bad.err;
  EXPECT_EQ(count_lines(bad.err), 1) << bad.err;
}

TEST(Cli, CompareCarriesARealLlamaBenchRunToOtherCardsInOneCommand) {
  // Issue 35: "this is what I get on the card I have; what would I get on that one?" from llama-bench's own output.
  const std::string file = std::string(GPUVS_TEST_DATA) + "/llama-bench/rtx3090-qwen2.5-coder-32b.md";
  const auto r = run_gpuvs("compare rtx-3090 h100-sxm --measured " + file);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("decoder-32.8b decode (q4_k_m weights, llama.cpp engine"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("without measured"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("rtx3090-qwen2.5-coder-32b.md:8: decode 37.71 tokens/s on rtx-3090"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("assumed: read 'qwen2 32B Q4_K - Medium'"), std::string::npos) << r.out;
  EXPECT_EQ(count_lines(r.err), 1) << r.err;  // the card's name read once, said once
  // JSON: the calibration, each card with and without it.
  const auto j = run_gpuvs("compare rtx-3090 h100-sxm --json --measured 'gpu=rtx-3090;workload=llama3-8b;mode=decode;precision=q4_k_m;"
                           "framework=llama.cpp;gen_len=128;value=110 tokens/s'");
  ASSERT_EQ(j.exit_code, 0) << j.err;
  const auto doc = nlohmann::json::parse(j.out);
  EXPECT_EQ(doc["measured"]["engine"], "llama.cpp");
  EXPECT_LT(doc["measured"]["memory_ratio"].get<double>(), 1.0);
  EXPECT_NEAR(doc["gpus"][0]["throughput"]["value"].get<double>(), 110.0, 0.6);  // the measured card gives the measurement
  EXPECT_GT(doc["gpus"][0]["throughput_without_measurements"].get<double>(), 110.0);
  EXPECT_EQ(doc["workload"], "llama3-8b");
  // Unreadable measurements: one line naming what and where, exit 2.
  for (const auto& [args, expect] : std::vector<std::pair<std::string, std::string>>{
           {"compare rtx-3090 --measured " + std::string(GPUVS_TEST_DATA) + "/llama-bench/readme.json", "readme.json: result 1: unknown GPU 'NVIDIA GeForce RTX 4080'"},
           {"compare rtx-3090 --measured " + std::string(GPUVS_TEST_DATA) + "/llama-bench/readme-md.md", "readme-md.md:3: the output does not name the GPU"},
           {"compare rtx-3090 --measured " + std::string(GPUVS_TEST_DATA) + "/llama-bench/readme-threads.md", "the output does not name the GPU"},
           {"compare rtx-3090 --measured 'gpu=rtx-3090;workload=llama3-8b;mode=decode;value=fast'", "--measured: value 'fast' has no unit"},
           {"compare rtx-3090 --measured /nonexistent/bench.json", "/nonexistent/bench.json"},
           {"predict --gpu rtx-3090 --workload resnet50 --measured 'gpu=rtx-3090;workload=llama3-8b;mode=decode;value=1 tokens/s'",
            "--measured: these are figures of a served decoder"}}) {
    const auto bad = run_gpuvs(args);
    EXPECT_EQ(bad.exit_code, 2) << args << "\n" << bad.err;
    EXPECT_NE(bad.err.find(expect), std::string::npos) << args << "\n" << bad.err;
    EXPECT_EQ(count_lines(bad.err), 1) << bad.err;
  }
}

// ---- in process (cli/app.hpp's run_json: what `import gpuvs` runs) ----

TEST(InProcess, TheDocumentIsTheOneTheBinaryPrints) {
  const auto r = run_gpuvs("compare rtx-4090 a100-80gb-sxm --workload llama3-8b --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(gpuvs::cli::run_json({"compare", "rtx-4090", "a100-80gb-sxm", "--workload", "llama3-8b"}), nlohmann::json::parse(r.out));
  const auto g = run_gpuvs("catalog show h100-sxm --json");
  ASSERT_EQ(g.exit_code, 0) << g.err;
  EXPECT_EQ(gpuvs::cli::run_json({"catalog", "show", "--", "h100-sxm"}), nlohmann::json::parse(g.out));
}

TEST(InProcess, ErrorsAreThrownWithTheLineTheBinaryPrints) {
  for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
           {"predict", "--workload", "llama3-8b", "--gpu", "rtx-9999"}, {"comapre"}, {"predict", "--gpu", "rtx-4090", "--batch", "0"},
           {"advise", "--hours", "nan"}}) {
    std::string line;
    for (const auto& a : args) line += " " + a;
    const auto r = run_gpuvs(line.substr(1));
    ASSERT_EQ(r.exit_code, 2) << line;
    std::string said = r.err.substr(0, r.err.find('\n'));
    ASSERT_EQ(said.rfind("gpuvs: error: ", 0), 0u) << said;
    try {
      gpuvs::cli::run_json(args);
      ADD_FAILURE() << line << ": no exception";
    } catch (const gpuvs::InputError& e) {
      EXPECT_EQ(e.what(), said.substr(std::string("gpuvs: error: ").size())) << line;
    }
  }
  EXPECT_THROW(gpuvs::cli::run_json({}), gpuvs::InputError);
  EXPECT_THROW(gpuvs::cli::run_json({"man"}), gpuvs::InputError);  // prints no JSON document
}

TEST(InProcess, WhatOneRunInstallsEndsWithIt) {
  gpuvs::test::TempDir dir;
  const auto facts = dir.path() / "facts.toml";
  gpuvs::test::write_text(facts, "[memory.runtime]\nvalue = 30\nunit = \"GiB\"\nsource = \"measured: a test\"\n");
  const std::vector<std::string> args = {"predict", "--workload", "resnet50", "--gpu", "a100-80gb-sxm"};
  const auto base = gpuvs::cli::run_json(args);
  auto with_facts = args;
  with_facts.insert(with_facts.end(), {"--facts", facts.string()});
  EXPECT_NE(gpuvs::cli::run_json(with_facts)["memory"], base["memory"]);
  EXPECT_EQ(gpuvs::cli::run_json(args), base);
  EXPECT_TRUE(gpuvs::cli::run_json({"predict", "--help"}).get<std::string>().find("Usage: gpuvs predict") != std::string::npos);
}

// ---- standing assumptions (advise/user_config.hpp, issue 36) ----

TEST(UserConfig, StandingAssumptionsSitUnderTheScenarioAndTheFlagsAndAreSaid) {
  gpuvs::test::TempDir dir;
  std::filesystem::create_directories(dir.path() / "gpuvs");
  const std::string config = (dir.path() / "gpuvs" / "config.toml").string();
  gpuvs::test::write_text(config, "# ours\n[assume]\nelectricity_usd_per_kwh = 0.5\nprice.rtx-4090 = 1000\n");
  const std::string env = "env -u GPUVS_CONFIG XDG_CONFIG_HOME=" + dir.path().string() + " ";
  const auto r = gpuvs::test::run_gpuvs_with(env, "compare rtx-4090 a100-80gb-sxm --workload resnet50 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("assumptions from " + config + ": electricity_usd_per_kwh=0.5; price.rtx-4090=1000\n"), std::string::npos) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out)["cost_assumptions"]["electricity_usd_per_kwh"], 0.5);
  // The flag is narrower than the standing assumption.
  const auto flag = gpuvs::test::run_gpuvs_with(env, "compare rtx-4090 a100-80gb-sxm --workload resnet50 --json --electricity 0.3");
  ASSERT_EQ(flag.exit_code, 0) << flag.err;
  EXPECT_EQ(nlohmann::json::parse(flag.out)["cost_assumptions"]["electricity_usd_per_kwh"], 0.3);
  // A scenario file's [assume] is this question's: over the config, under the flags.
  gpuvs::test::write_text(dir.path() / "s.toml", "workload = \"resnet50\"\n[assume]\nelectricity_usd_per_kwh = 0.4\n");
  const auto adv = gpuvs::test::run_gpuvs_with(env, "advise --scenario " + (dir.path() / "s.toml").string() + " --json");
  ASSERT_EQ(adv.exit_code, 0) << adv.err;
  bool seen = false;
  const auto advice = nlohmann::json::parse(adv.out);
  for (const auto& x : advice["assumptions"])
    if (x["key"] == "electricity_usd_per_kwh") {
      seen = true;
      EXPECT_EQ(x["value"], 0.4);
      EXPECT_EQ(x["overridden"], true);
    }
  EXPECT_TRUE(seen) << adv.out;
  // GPUVS_CONFIG names another file, or none; the same question then prices with the defaults.
  const auto none = gpuvs::test::run_gpuvs_with("GPUVS_CONFIG=none XDG_CONFIG_HOME=" + dir.path().string() + " ",
                                                "compare rtx-4090 a100-80gb-sxm --workload resnet50 --json");
  ASSERT_EQ(none.exit_code, 0) << none.err;
  EXPECT_EQ(none.err.find("assumptions from"), std::string::npos) << none.err;
  EXPECT_NE(nlohmann::json::parse(none.out)["cost_assumptions"]["electricity_usd_per_kwh"], 0.5);
}

TEST(UserConfig, ABadConfigIsOneLineNamingItsLine) {
  gpuvs::test::TempDir dir;
  const auto c = dir.path() / "c.toml";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"[assume]\npue = 0.5\n", c.string() + ":2: --assume pue=0.5: impossible value"},
      {"[assume]\nelectricty_usd_per_kwh = 0.2\n", "did you mean 'electricity_usd_per_kwh'?"},
      {"engine = \"vllm\"\n", c.string() + ":1: unknown key 'engine' (a gpuvs config holds an [assume] table"},
      {"[assume\n", c.string() + ":1: malformed TOML"},
      {"[assume]\nprice.rtx-9999 = 5\n", "rtx-9999"},
      {"[serving]\nengine = \"lmdeploy\"\n", c.string() + ":2: serving engine 'lmdeploy' is unknown (known: trt-llm, vllm, llama.cpp"},
      {"[serving]\nengines = \"vllm\"\n", c.string() + ":2: [serving] holds engine only, not 'engines'"},
      {"serving = 3\n", c.string() + ":1: 'serving' must be a table"}};
  for (const auto& [text, want] : cases) {
    gpuvs::test::write_text(c, text);
    const auto r = gpuvs::test::run_gpuvs_with("GPUVS_CONFIG=" + c.string() + " ", "compare --json");
    EXPECT_EQ(r.exit_code, 2) << text;
    EXPECT_EQ(gpuvs::test::count_lines(r.err), 1) << r.err;
    EXPECT_NE(r.err.find(want), std::string::npos) << text << " -> " << r.err;
    EXPECT_TRUE(r.out.empty());
  }
  const auto missing = gpuvs::test::run_gpuvs_with("GPUVS_CONFIG=" + (dir.path() / "none.toml").string() + " ", "advise --json");
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.err.find("none.toml: no such file (\"none\" reads no config)"), std::string::npos) << missing.err;
}

// A preferred engine in the config is every pricing command's default; a named one still wins; validate's rows keep
// what their sources ran.
TEST(UserConfig, APreferredEngineIsTheDefaultEverywhereAndSaid) {
  gpuvs::test::TempDir dir;
  const auto c = (dir.path() / "c.toml").string();
  gpuvs::test::write_text(c, "[serving]\nengine = \"llama.cpp\"\n");
  const std::string env = "GPUVS_CONFIG=" + c + " ";
  const auto predicted = gpuvs::test::run_gpuvs_with(env, "predict --workload llama3-8b --gpu rtx-4090 --mode decode --json");
  ASSERT_EQ(predicted.exit_code, 0) << predicted.err;
  EXPECT_EQ(nlohmann::json::parse(predicted.out)["engine"], "llama.cpp");
  EXPECT_NE(predicted.err.find("serving engine from " + c + ": llama.cpp (framework=ENGINE names another)"), std::string::npos) << predicted.err;
  const auto named = gpuvs::test::run_gpuvs_with(env, "predict --workload llama3-8b --gpu rtx-4090 --mode decode --options framework=vllm --json");
  ASSERT_EQ(named.exit_code, 0) << named.err;
  EXPECT_EQ(nlohmann::json::parse(named.out)["engine"], "vllm");
  const auto compared = gpuvs::test::run_gpuvs_with(env, "compare rtx-4090 a100-80gb-sxm --workload llama3-8b --mode decode --json");
  ASSERT_EQ(compared.exit_code, 0) << compared.err;
  EXPECT_NE(compared.out.find("\"llama.cpp\""), std::string::npos) << compared.out;
  const std::string rows = " --data " + std::string(GPUVS_SOURCE_DIR) + "/data/validation/llamacpp-4090.csv --json";
  const auto plain = run_gpuvs_json("validate" + rows);
  const auto configured = gpuvs::test::run_gpuvs_with(env, "validate" + rows);
  ASSERT_EQ(configured.exit_code, 0) << configured.err;
  EXPECT_EQ(nlohmann::json::parse(configured.out), plain);
  EXPECT_EQ(configured.err.find("serving engine from"), std::string::npos) << configured.err;
}

#include "gguf_builder.hpp"

// A GGUF download as people hold it: a 4 GB Llama-2-7B Q4_K_M file (sparse here: its header written, its weights
// zeros the reader never reads) is priced from its header as stored, and says what it ran; a partial copy is
// named, never priced.
TEST(Gguf, ADownloadIsReadFromItsHeaderAndPricedAsStored) {
  TempDir dir;
  gpuvs::test::LlamaShape s;
  s.layers = 32;
  s.hidden = 4096;
  s.heads = s.kv_heads = 32;
  s.ffn = 11008;
  s.vocab = 32000;
  const auto b = gpuvs::test::llama_q4_k_m(s);
  const auto path = dir / "llama-2-7b.Q4_K_M.gguf";
  const std::string header = b.header_bytes();
  gpuvs::test::write_text(path, header);
  std::filesystem::resize_file(path, header.size() + b.padded_data_bytes());
  // TheBloke/Llama-2-7B-GGUF's llama-2-7b.Q4_K_M.gguf is 4,081,004,224 bytes with its 32,000-token vocabulary
  // (about 0.7 MB this file lacks); llama.cpp's loader lists its tensors as f32 65, q4_K 193, q6_K 33.
  EXPECT_NEAR(static_cast<double>(std::filesystem::file_size(path)) / 4081004224.0, 1.0, 5e-4);
  const auto file = run_gpuvs_json("predict --workload " + path.string() + " --gpu rtx-4090 --mode decode --json");
  const auto preset = run_gpuvs_json("predict --workload llama2-7b --gpu rtx-4090 --mode decode --precision q4_k_m --json");
  EXPECT_EQ(file["engine"], "llama.cpp");
  EXPECT_EQ(file["format"], "q4_k_m");
  EXPECT_NEAR(file["throughput"]["value"].get<double>() / preset["throughput"]["value"].get<double>(), 1.0, 1e-9) << file.dump();
  EXPECT_NE(file["notes"].dump().find("weights as stored in " + path.string() + " (Q4_K 193, F32 65, Q6_K 33 tensors)"), std::string::npos)
      << file["notes"].dump();
  expect_usage_error(run_gpuvs("predict --workload " + path.string() + " --gpu rtx-4090 --mode decode --precision q8_0"),
                     "--precision q8_0 names other weights");
  const auto graph = run_gpuvs("graph " + path.string());
  EXPECT_EQ(graph.exit_code, 0) << graph.err;
  EXPECT_NE(graph.out.find("Tiny Llama (GGUF llama) from llama-2-7b.Q4_K_M.gguf (32 layers, hidden 4096, 32 heads / 32 KV, MLP 11008, vocabulary 32000)"),
            std::string::npos)
      << graph.out;
  std::filesystem::resize_file(path, std::filesystem::file_size(path) - 4096);
  expect_usage_error(run_gpuvs("predict --workload " + path.string() + " --gpu rtx-4090 --mode decode"),
                     "tensor 'output.weight' ends at byte 4080281024, past the end of the file (4080276928 bytes): a partial download");
}

// Fusing changes no byte: a Phi-3 file (Q, K and V in one tensor, the MLP's gate and up in another) is priced as the
// llama-layout file with the same shapes and types, end to end through predict.
TEST(Gguf, AFusedLayoutPricesAsTheSameWeightsUnfused) {
  TempDir dir;
  gpuvs::test::GgufBuilder llama = gpuvs::test::tiny_llama_q4_k_m(2), phi = gpuvs::test::tiny_llama_q4_k_m(2);
  phi.str("general.architecture", "phi3");
  for (const char* k : {"context_length", "embedding_length", "block_count", "feed_forward_length", "attention.head_count", "attention.head_count_kv"}) {
    const std::string key = std::string("llama.") + k;
    phi.drop(key);
  }
  phi.u32("phi3.context_length", 4096).u32("phi3.embedding_length", 256).u32("phi3.block_count", 2).u32("phi3.feed_forward_length", 512);
  phi.u32("phi3.attention.head_count", 4).u32("phi3.attention.head_count_kv", 2);
  for (int l = 0; l < 2; ++l) {
    const std::string p = "blk." + std::to_string(l) + ".";
    for (const char* role : {"attn_q", "attn_k", "attn_v", "ffn_gate", "ffn_up"}) {
      llama.drop_tensor(p + role + ".weight");
      phi.drop_tensor(p + role + ".weight");
    }
    // Q/K/V in Q8_0 beside a file mostly Q5_K: a projection left unpriced would fall back to the main type.
    llama.tensor(p + "attn_q.weight", {256, 256}, "Q8_0").tensor(p + "attn_k.weight", {256, 128}, "Q8_0").tensor(p + "attn_v.weight", {256, 128}, "Q8_0");
    llama.tensor(p + "ffn_gate.weight", {256, 512}, "Q5_K").tensor(p + "ffn_up.weight", {256, 512}, "Q5_K");
    phi.tensor(p + "attn_qkv.weight", {256, 512}, "Q8_0").tensor(p + "ffn_up.weight", {256, 1024}, "Q5_K");
  }
  gpuvs::test::write_text(dir / "llama.gguf", llama.bytes());
  gpuvs::test::write_text(dir / "phi.gguf", phi.bytes());
  const auto a = run_gpuvs_json("predict --workload " + (dir / "llama.gguf").string() + " --gpu rtx-4090 --mode decode --json");
  const auto b = run_gpuvs_json("predict --workload " + (dir / "phi.gguf").string() + " --gpu rtx-4090 --mode decode --json");
  EXPECT_EQ(b["engine"], "llama.cpp");
  EXPECT_EQ(b["format"], "q5_k_m");
  EXPECT_DOUBLE_EQ(a["throughput"]["value"].get<double>(), b["throughput"]["value"].get<double>());
  EXPECT_DOUBLE_EQ(a["memory_per_gpu_gib"]["weights"].get<double>(), b["memory_per_gpu_gib"]["weights"].get<double>());
}

// A hub id is a workload wherever one goes, found in the cache the environment names, priced as its config.json.
TEST(HfCheckpoint, AHubIdIsAWorkloadLikeItsConfig) {
  TempDir cache;
  const std::string commit = "89abcdef0123456789abcdef0123456789abcdef";
  const auto snapshot = cache / "models--acme--tiny" / "snapshots" / commit;
  std::filesystem::create_directories(snapshot);
  std::filesystem::create_directories(cache / "models--acme--tiny" / "refs");
  gpuvs::test::write_text(cache / "models--acme--tiny" / "refs" / "main", commit);
  gpuvs::test::write_text(snapshot / "config.json",
                          R"({"architectures": ["LlamaForCausalLM"], "hidden_size": 512, "num_hidden_layers": 4, "num_attention_heads": 8,
                              "num_key_value_heads": 8, "intermediate_size": 1024, "vocab_size": 1000, "max_position_embeddings": 2048})");
  const std::string env = "HF_HUB_CACHE=" + cache.path().string() + " ";
  const auto by_id = gpuvs::test::run_gpuvs_with(env, "predict --workload acme/tiny --gpu rtx-4090 --mode decode --json");
  ASSERT_EQ(by_id.exit_code, 0) << by_id.err;
  const auto by_file = run_gpuvs_json("predict --workload " + (snapshot / "config.json").string() + " --gpu rtx-4090 --mode decode --json");
  EXPECT_EQ(nlohmann::json::parse(by_id.out)["throughput"], by_file["throughput"]);
  EXPECT_EQ(nlohmann::json::parse(by_id.out)["workload"], "acme/tiny");
  const auto compared = gpuvs::test::run_gpuvs_with(env, "compare rtx-4090 a100-80gb-sxm --workload acme/tiny --json");
  EXPECT_EQ(compared.exit_code, 0) << compared.err;
  expect_usage_error(gpuvs::test::run_gpuvs_with(env, "predict --workload acme/absent --gpu rtx-4090"),
                     "acme/absent is not in the Hugging Face cache (" + cache.path().string() + "), nor a file or folder here");
}

// --save-weights is checked before any training, refuses a file it did not write, and replaces its own.
TEST(Train, SaveWeightsIsCheckedFirstAndReplacesOnlyItsOwnFile) {
  TempDir dir;
  const std::string w = (dir / "w.safetensors").string();
  expect_usage_error(run_gpuvs("train seed-mlp" + kQuick + "--save-weights " + (dir / "w.bin").string()),
                     "--save-weights " + (dir / "w.bin").string() + ": the file must end .safetensors");
  gpuvs::test::write_text(w, "someone else's weights");
  const auto foreign = run_gpuvs("train seed-mlp" + kQuick + "--save-weights " + w);
  expect_usage_error(foreign, "--save-weights");
  EXPECT_EQ(foreign.out.find("Epoch"), std::string::npos) << "trained before refusing: " << foreign.out;
  EXPECT_EQ(gpuvs::test::slurp(w), "someone else's weights");
  std::filesystem::remove(w);
  for (int run = 0; run < 2; ++run) {  // the second run replaces the file the first wrote
    const auto r = run_gpuvs("train seed-mlp" + kQuick + "--save-weights " + w);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("weights: " + w + " (safetensors;"), std::string::npos) << r.out;
  }
  EXPECT_EQ(gpuvs::test::slurp(w).substr(8).find("{\"__metadata__\":{\"format\":\"pt\",\"gpuvs_weights\""), 0u);
}
