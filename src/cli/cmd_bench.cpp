// SPDX-License-Identifier: Apache-2.0
// gpuvs bench: microbenchmarks of this machine, each self-checked and scored against the catalog's spec
// where one exists; an aligned table with a units row and N/A cells, or JSON / CSV / Markdown; --save
// stores the JSON record for calibration and reports. Exit 1 when any benchmark fails its own check.
#include <fmt/format.h>

#include <filesystem>
#include <limits>
#include <optional>
#include <nlohmann/json.hpp>
#include <sstream>

#include "bench/cluster_benchmarks.hpp"
#include "bench/gpu_benchmarks.hpp"
#include "bench/registry.hpp"
#include "bench/results_json.hpp"
#include "catalog/catalog.hpp"
#include "cli/commands.hpp"
#include "cli/output.hpp"
#include "cli/validators.hpp"
#include "cli/devices_json.hpp"
#include "hw/cpu.hpp"
#include "hw/match.hpp"
#include "hw/nvidia.hpp"
#include "core/error.hpp"
#include "dist/world.hpp"
#include "core/files.hpp"
#include "core/strings.hpp"
#include "gpuvs_revision.hpp"
#include "store/store.hpp"

namespace gpuvs::cli {

namespace {

struct BenchArgs {
  bool quick = false, store = false, force = false;
  std::string only, save, db;
  Output out = Output::table;
  int threads = 0;
  int device = std::numeric_limits<int>::min();  // unset
};

std::string num(const bench::Measurement& m, double v) {
  if (m.status != "ok") return "N/A";
  return std::fabs(v) >= 100 ? fmt::format("{:.0f}", v) : fmt::format("{:.3g}", v);
}
std::string spec_cell(const bench::Measurement& m) { return m.spec ? fmt::format("{:.4g}", *m.spec) : "N/A"; }
std::string pct_cell(const bench::Measurement& m) {
  const auto p = m.pct_of_spec();
  return p ? fmt::format("{:.1f}", *p) : "N/A";
}
std::string note_cell(const bench::Measurement& m) {
  std::string s = m.status == "ok" ? m.note : m.status + ": " + m.note;
  for (const auto& [k, v] : m.env) s += fmt::format("; {}={}", k, v);
  return s;
}
std::string csv_quote(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string q = "\"";
  for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}

int run_bench(const BenchArgs& a) {
  const bool lead = dist::world().rank == 0;
  if (a.store || !a.db.empty()) files::note_input(a.db.empty() ? store::default_path() : std::filesystem::path(a.db));
  if (!a.save.empty() && lead) files::check_output(a.save, bench::record_output("--save", a.force));
  std::optional<store::Store> history;
  if (a.store || !a.db.empty()) history.emplace(store::Store::open(a.db.empty() ? store::default_path() : std::filesystem::path(a.db), true));
  std::vector<std::string> keys, cluster_parts;
  std::stringstream ss(a.only);
  for (std::string k; std::getline(ss, k, ',');)
    if (!k.empty()) (k.rfind("mpi.", 0) == 0 || k.rfind("nccl.", 0) == 0 ? cluster_parts : keys).push_back(k);
  // Under MPI: the cluster's probes and collectives on every rank; rank 0 then measures its own machine
  // too (unless --only named cluster benchmarks alone) and alone writes, stores and prints.
  const dist::World& world = dist::world();
  if (!cluster_parts.empty() && world.size == 1)
    throw InputError(fmt::format("--only {}: the cluster benchmarks need an MPI launch of two ranks or more (mpirun -np N gpuvs bench)",
                                 strings::join(cluster_parts, ",")));
  nlohmann::json cluster;
  if (world.size > 1) {
    const hw::NvidiaReport here = hw::probe_nvidia_matched(catalog::Catalog::builtin());
    cluster = bench::run_cluster_benchmarks({a.quick, cluster_parts}, devices_record(hw::probe_cpu(), here));
    if (world.rank != 0) return 0;
  }
  const bool local = world.size == 1 || !keys.empty() || cluster_parts.empty();
  bench::BenchOptions opt{a.quick, a.threads, std::nullopt};
  if (a.device != std::numeric_limits<int>::min()) opt.device = a.device;
  const auto results = local ? bench::run_benchmarks(keys, opt) : std::vector<bench::Measurement>{};
  bool failed = false;
  for (const auto& m : results) failed = failed || m.status == "FAILED";
  nlohmann::json record = bench::results_json(results, a.quick, fmt::format("{} (git {})", GPUVS_VERSION, GPUVS_GIT_REVISION));
  if (!cluster.is_null()) {
    record["cluster"] = cluster;
    for (const auto& c : cluster["collectives"]) failed = failed || c["wrong"].get<std::int64_t>() != 0;
  }
  if (!a.save.empty()) files::write_output(a.save, bench::record_output("--save", a.force), record.dump(2) + "\n");
  std::int64_t run_id = 0;
  if (history) {  // a bench run in the results history: `gpuvs report` and `gpuvs diff` read it like any run
    store::Run run;
    run.created_utc = record["created_utc"].get<std::string>();
    run.kind = "bench";
    run.gpuvs_version = record["gpuvs"].get<std::string>();
    run.host = record["machine"]["cpu"].get<std::string>();
    run.gpu = "none";
    for (const auto& m : results)
      if (m.key.rfind("cuda.", 0) == 0 && m.status == "ok") {
        run.gpu = m.device;
        break;
      }
    const hw::CpuInfo cpu = hw::probe_cpu();
    const hw::NvidiaReport nv = hw::probe_nvidia_matched(catalog::Catalog::builtin());
    std::size_t ok = 0;
    for (const auto& m : results) ok += m.status == "ok" ? 1 : 0;
    run.summary = fmt::format("{} benchmarks, {} measured{}", results.size(), ok, a.quick ? " (quick)" : "");
    if (!cluster.is_null())
      run.summary += fmt::format("; cluster of {} ranks on {} node{}", cluster["ranks"].get<int>(), cluster["nodes"].get<int>(),
                                 cluster["nodes"].get<int>() == 1 ? "" : "s");
    run.payload = {{"schema_version", 1}, {"kind", "bench"}, {"gpuvs", record["gpuvs"]}, {"bench", record},
                   {"devices", devices_record(cpu, nv)},
                   {"summary", nlohmann::json::array({run.summary})}};
    for (const auto& m : results) run.figures.push_back({m.key, m.device, m.unit, m.status, m.median, m.spec});
    run_id = history->add(run);
  }
  if (a.out == Output::json) {
    print_json(record);
  } else if (a.out == Output::csv) {
    fmt::print("key,device,unit,status,median,min,max,spread,repetitions,spec,pct_of_spec,note\n");
    for (const auto& m : results)
      fmt::print("{},{},{},{},{},{},{},{},{},{},{},{}\n", m.key, csv_quote(m.device), m.unit, m.status, num(m, m.median),
                 num(m, m.min), num(m, m.max), m.status == "ok" ? fmt::format("{:.4f}", m.spread) : "N/A", m.repetitions,
                 spec_cell(m), pct_cell(m), csv_quote(note_cell(m)));
  } else {
    const bool md = a.out == Output::md;
    const char* row = md ? "| {} | {} | {} | {} | {} | {} | {} | {} | {} |\n"
                         : "{:<24} {:>8} {:>8} {:>8} {:>8} {:>7} {:>8} {:>7}  {}\n";
    if (!cluster.is_null()) fmt::print("{}\n", bench::cluster_text(cluster));
    if (local) {
      fmt::print("{}\n", bench::gpu_status());
      fmt::print(fmt::runtime(row), "benchmark", "median", "min", "max", "unit", "spread", "spec", "of spec", "status / note");
      if (md) fmt::print("|---|---|---|---|---|---|---|---|---|\n");
      fmt::print(fmt::runtime(row), "", "", "", "", "", "%", "", "%", "");
    }
    for (const auto& m : results)
      fmt::print(fmt::runtime(row), m.key, num(m, m.median), num(m, m.min), num(m, m.max), m.unit,
                 m.status == "ok" ? fmt::format("{:.1f}", 100 * m.spread) : "N/A", spec_cell(m), pct_cell(m), note_cell(m));
    for (const auto& m : results)
      if (!m.detail.empty()) fmt::print("\n{} ({}):\n{}", m.key, m.device, m.detail);
    if (!a.save.empty()) fmt::print("saved to {}\n", a.save);
    if (history) fmt::print("stored as run {} in {}\n", run_id, history->path().string());
  }
  return failed ? 1 : 0;
}

}  // namespace

Runner add_bench_command(CLI::App& app) {
  auto a = std::make_shared<BenchArgs>();
  auto* sub = app.add_subcommand("bench", "Run self-checked microbenchmarks of this machine (CPU, and CUDA GPUs when present)");
  sub->add_flag("--quick", a->quick, "Smaller sizes and fewer repetitions");
  sub->add_option("--only", a->only, "Comma-separated benchmark keys");
  add_output_option(sub, a->out);
  sub->add_option("--threads", a->threads, "CPU threads (default: every core)")->check(threads());
  sub->add_option("--device", a->device, "CUDA ordinal for the GPU benchmarks (default 0)")->check(whole_in(0, 1023));
  sub->add_flag("--store", a->store, "Also store the run in the results history (gpuvs history / report / diff)");
  sub->add_option("--db", a->db, "Results database for --store (default $XDG_DATA_HOME/gpuvs/history.db)");
  sub->add_option("--save", a->save, "Also write the JSON record to this file (for predict --calibration and reports)");
  sub->add_flag("--force", a->force, "Replace a --save file that gpuvs did not write (or that has other hard links)");
  return [a] { return run_bench(*a); };
}

}  // namespace gpuvs::cli
