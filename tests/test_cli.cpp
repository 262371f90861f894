// The gpuvs binary end to end: exit codes 0/1/2, one-line errors, JSON on stdout, nothing half-written.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "test_util.hpp"

using gpuvs::test::count_lines;
using gpuvs::test::run_gpuvs;
using gpuvs::test::TempDir;

namespace {
void expect_usage_error(const gpuvs::test::CommandResult& r, const std::string& needle) {
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_EQ(count_lines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find(needle), std::string::npos) << r.err;
}
const std::string kQuick = " --rows 600 --epochs 1 --threads 1 ";
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
}

TEST(Cli, UsageErrorsExitTwo) {
  EXPECT_EQ(run_gpuvs("").exit_code, 2);
  expect_usage_error(run_gpuvs("frobnicate"), "error");
  expect_usage_error(run_gpuvs("train seed-mlp --epochs abc"), "--epochs");
  expect_usage_error(run_gpuvs("train seed-mlp --gemm mkl"), "--gemm 'mkl'");
  expect_usage_error(run_gpuvs("train seed-mlp --epochs 0"), "--epochs must be at least 1");
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
  const auto r = run_gpuvs("train seed-mlp --json --profile --batch-size 64" + kQuick);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
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
  ASSERT_EQ(run_gpuvs("train seed-mlp" + kQuick + "--checkpoint " + ck).exit_code, 0);
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
  expect_usage_error(run_gpuvs("catalog show rtx-4900"), "did you mean: rtx-4090");
  expect_usage_error(run_gpuvs("catalog show a100"), "ambiguous");
  TempDir dir;
  gpuvs::test::write_text(dir / "bad.toml", "[[gpu]]\nid = \"x\"\nname = 3\n");
  expect_usage_error(run_gpuvs("catalog --catalog " + (dir / "bad.toml").string()), "bad.toml:3: 'name' must be a string");
}

TEST(Cli, PredictJsonAndErrors) {
  const auto r = run_gpuvs("predict --workload bert-large --gpu a100-80gb-sxm --batch 16 --precision amp-fp16 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
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
  expect_usage_error(run_gpuvs("predict --workload resnet50 --gpu a100-80gb-sxm --precision amp-fp8"), "no FP8");
  expect_usage_error(run_gpuvs("predict --workload resnet50 --gpu rtx-4900"), "did you mean: rtx-4090");
  expect_usage_error(run_gpuvs("predict --workload resnet-50 --gpu rtx-4090"), "closest: resnet50");
  expect_usage_error(run_gpuvs("predict --workload bert-base --gpu rtx-4090 --options 'seq_len=99999'"), "seq_len");
  expect_usage_error(run_gpuvs("predict --workload bert-base --gpu rtx-4090 --precision fp64"), "unknown precision");
}

TEST(Cli, ValidateTableAndJson) {
  const std::string data = std::string(GPUVS_SOURCE_DIR) + "/data/validation/lambda-pytorch-2023.csv";
  const auto r = run_gpuvs("validate --data " + data);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("median absolute error"), std::string::npos);
  const auto j = run_gpuvs("validate --json --data " + data);
  ASSERT_EQ(j.exit_code, 0);
  const auto arr = nlohmann::json::parse(j.out);
  ASSERT_EQ(arr.size(), 72u);
  for (const char* k : {"id", "predicted", "unit", "status", "reason"}) EXPECT_TRUE(arr[0].contains(k)) << k;
  expect_usage_error(run_gpuvs("validate --data /nonexistent.csv"), "cannot open");
}

TEST(Cli, CompareAnswersTheSeedQuestion) {
  const auto r = run_gpuvs("compare");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("RTX 4090 or A100 80GB SXM"), std::string::npos);
  EXPECT_NE(r.out.find("[refuted]"), std::string::npos);
  const auto j = run_gpuvs("compare h100-sxm 4090 --workload bert-base --precision amp-fp16 --batch 16 --json");
  ASSERT_EQ(j.exit_code, 0) << j.err;
  const auto doc = nlohmann::json::parse(j.out);
  EXPECT_EQ(doc["gpus"].size(), 2u);
  EXPECT_EQ(doc["gpus"][1]["gpu"], "rtx-4090");
  expect_usage_error(run_gpuvs("compare h100-sxm a100-80gb-sxm --precision amp-fp8"), "no FP8");
  expect_usage_error(run_gpuvs("compare h100-sxm"), "at least two GPUs");
}

TEST(Cli, DevicesListsTheCpuAndSaysWhatOfGpus) {
  const auto r = run_gpuvs("devices --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
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
  const auto r = run_gpuvs("bench --quick --threads 1 --only cpu.stream.triad -o json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["results"].size(), 1u);
  EXPECT_EQ(j["results"][0]["status"], "ok");
  const auto md = run_gpuvs("bench --quick --threads 1 --only cpu.stream.copy -o md");
  EXPECT_NE(md.out.find("|---|"), std::string::npos);
  expect_usage_error(run_gpuvs("bench --only cpu.nothing"), "valid: cpu.stream.copy");
  expect_usage_error(run_gpuvs("bench -o xml"), "-o 'xml'");
  expect_usage_error(run_gpuvs("bench --device -1 --only cpu.stream.copy"), "--device -1");
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
  const auto r = run_gpuvs("graph seed-mlp --batch 1024 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
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
  const auto r = run_gpuvs("predict --workload resnet50 --gpu h200 --json --calibration " + rec.string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_TRUE(j["calibration"]["applied"].get<bool>());
  EXPECT_EQ(j["calibration"]["measured_on"], "h200-sxm");
  ASSERT_EQ(j["calibration"]["classes"].size(), 2u);
  EXPECT_LT(j["calibration"]["classes"][0]["measured_over_predicted"].get<double>(), 0.85);
  const auto plain = nlohmann::json::parse(run_gpuvs("predict --workload resnet50 --gpu h200 --json").out);
  EXPECT_LT(j["throughput"]["value"].get<double>(), plain["throughput"]["value"].get<double>());
  // Bad records: one line, exit 2, naming the file.
  const auto empty = dir / "empty.json";
  gpuvs::test::write_text(empty, R"({"schema_version": 2, "results": []})");
  expect_usage_error(run_gpuvs("predict --gpu h200 --calibration " + empty.string()), "no GPU figures");
  const auto junk = dir / "junk.json";
  gpuvs::test::write_text(junk, "{not json");
  expect_usage_error(run_gpuvs("predict --gpu h200 --calibration " + junk.string()), "not JSON");
  expect_usage_error(run_gpuvs("predict --gpu h200 --calibration " + (dir / "missing.json").string()), "--calibration");
}

TEST(Cli, AdviseRanksAndRefusesContradictions) {
  const auto r = run_gpuvs("advise --workload llama-7b --task finetune --finetune lora --tokens 1e7 --gpus rtx-4090,h100-sxm --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["ranked"].size(), 2u);
  EXPECT_EQ(j["ranked"][0]["rank"], 1);
  EXPECT_FALSE(j["ranked"][0]["reason"].get<std::string>().empty());
  EXPECT_GT(j["assumptions"].size(), 10u);
  const auto text = run_gpuvs("advise --params 7e9 --task finetune --tokens 1e7 --gpus rtx-4090 --assume electricity_usd_per_kwh=0.3");
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("llama-7b"), std::string::npos);
  EXPECT_NE(text.out.find("[set]"), std::string::npos);
  expect_usage_error(run_gpuvs("advise --task dance"), "task 'dance'");
  expect_usage_error(run_gpuvs("advise --task infer --tenants 0"), "--tenants");
  expect_usage_error(run_gpuvs("advise --assume nothing=1"), "unknown assumption");
  expect_usage_error(run_gpuvs("advise --workload llama-7b --params 7e9"), "--params");
  expect_usage_error(run_gpuvs("advise --gpus rtx-9090"), "rtx-9090");
  expect_usage_error(run_gpuvs("advise --sla-p99-ms 5"), "--task infer");
  expect_usage_error(run_gpuvs("advise --scenario /nonexistent.toml"), "/nonexistent.toml");
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
  EXPECT_GT(nlohmann::json::parse(d.out)["figures"].size(), 5u);
  const auto rep = run_gpuvs("report -o json --db " + db);
  ASSERT_EQ(rep.exit_code, 0) << rep.err;
  const auto run = nlohmann::json::parse(rep.out);
  EXPECT_EQ(run["id"], 1);
  EXPECT_FALSE(run["payload"]["predictions"].empty());
  EXPECT_FALSE(run["payload"]["advice"]["ranked"].empty());
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
  expect_usage_error(run_gpuvs("diff 0 1 --db " + db), "positive");
  expect_usage_error(run_gpuvs("history --db " + (dir / "none.db").string()), "no such database");
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

TEST(Cli, TrainRefusesMissingGpusBeforeAnyOutput) {
  const auto r = run_gpuvs("train seed-mlp --device cuda:3 --rows 300");
  expect_usage_error(r, "--device cuda:3");
  EXPECT_TRUE(r.out.empty()) << r.out;
  expect_usage_error(run_gpuvs("train seed-mlp --gpus 64 --rows 300"), "--gpus 64");
  expect_usage_error(run_gpuvs("train seed-mlp --gpus 3 --batch-size 128 --rows 300"), "split evenly");
  expect_usage_error(run_gpuvs("train seed-mlp --memory preallocate=1.5 --rows 300"), "preallocate");
  expect_usage_error(run_gpuvs("train seed-mlp --device tpu --rows 300"), "--device 'tpu'");
  expect_usage_error(run_gpuvs("train seed-mlp --device cpu --precision amp-bf16 --rows 300"), "needs a GPU");
  expect_usage_error(run_gpuvs("train seed-mlp --steps-per-sync 0 --rows 300"), "--steps-per-sync must be at least 1");
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
  const auto rep = run_gpuvs("report -o json --db " + db);
  ASSERT_EQ(rep.exit_code, 0) << rep.err;
  const auto run = nlohmann::json::parse(rep.out);
  EXPECT_EQ(run["payload"]["bench"]["results"].size(), 2u);
  EXPECT_FALSE(run["payload"]["devices"]["cpu"]["model"].get<std::string>().empty());
  // A foreign database is refused before anything runs.
  const auto foreign = dir / "x.db";
  gpuvs::test::write_text(foreign, "not a database");
  expect_usage_error(run_gpuvs("bench --quick --only cpu.stream.copy --db " + foreign.string()), "not a gpuvs database");
}
