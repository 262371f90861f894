// gpuvs bench: microbenchmarks of this machine, each self-checked; an aligned table with a units row,
// or JSON / CSV / Markdown. Exit 1 when any benchmark fails its own check.
#include <fmt/format.h>

#include <nlohmann/json.hpp>
#include <sstream>

#include "bench/registry.hpp"
#include "cli/commands.hpp"
#include "core/error.hpp"
#include "core/strings.hpp"

namespace gpuvs::cli {

namespace {

struct BenchArgs {
  bool quick = false;
  std::string only, format = "table";
  int threads = 0;
};

std::string num(const bench::Measurement& m, double v) { return m.status == "waived" ? "N/A" : fmt::format("{:.1f}", v); }

int run_bench(const BenchArgs& a) {
  if (a.format != "table" && a.format != "json" && a.format != "csv" && a.format != "md")
    throw InputError(fmt::format("-o '{}' is not a format (expected table, json, csv or md)", strings::printable(a.format)));
  if (a.threads < 0) throw InputError(fmt::format("--threads must be positive, got {}", a.threads));
  std::vector<std::string> keys;
  std::stringstream ss(a.only);
  for (std::string k; std::getline(ss, k, ',');)
    if (!k.empty()) keys.push_back(k);
  const auto results = bench::run_benchmarks(keys, {a.quick, a.threads});
  bool failed = false;
  for (const auto& m : results) failed = failed || m.status == "FAILED";
  if (a.format == "json") {
    nlohmann::json arr = nlohmann::json::array();
    for (const auto& m : results)
      arr.push_back({{"key", m.key}, {"description", m.description}, {"unit", m.unit}, {"status", m.status},
                     {"median", m.status == "waived" ? nlohmann::json(nullptr) : nlohmann::json(m.median)},
                     {"min", m.min}, {"max", m.max}, {"spread", m.spread}, {"repetitions", m.repetitions}, {"note", m.note}});
    fmt::print("{}\n", nlohmann::json{{"schema_version", 1}, {"quick", a.quick}, {"results", arr}}.dump(2));
  } else if (a.format == "csv") {
    fmt::print("key,unit,status,median,min,max,spread,repetitions\n");
    for (const auto& m : results)
      fmt::print("{},{},{},{},{},{},{:.4f},{}\n", m.key, m.unit, m.status, num(m, m.median), num(m, m.min), num(m, m.max),
                 m.spread, m.repetitions);
  } else {
    const bool md = a.format == "md";
    const char* row = md ? "| {} | {} | {} | {} | {} | {} |\n" : "{:<20} {:>10} {:>10} {:>10} {:>8}  {}\n";
    fmt::print(fmt::runtime(row), "benchmark", "median", "min", "max", "spread", "status / note");
    if (md) fmt::print("|---|---|---|---|---|---|\n");
    fmt::print(fmt::runtime(row), "", "unit", "", "", "%", "");
    for (const auto& m : results)
      fmt::print(fmt::runtime(row), m.key, num(m, m.median) + (m.status == "waived" ? "" : " " + m.unit), num(m, m.min),
                 num(m, m.max), m.status == "waived" ? "N/A" : fmt::format("{:.1f}", 100 * m.spread),
                 m.status == "ok" ? m.note : m.status + ": " + m.note);
  }
  return failed ? 1 : 0;
}

}  // namespace

Runner add_bench_command(CLI::App& app) {
  auto a = std::make_shared<BenchArgs>();
  auto* sub = app.add_subcommand("bench", "Run self-checked microbenchmarks of this machine");
  sub->add_flag("--quick", a->quick, "Smaller sizes and fewer repetitions");
  sub->add_option("--only", a->only, "Comma-separated benchmark keys");
  sub->add_option("-o", a->format, "table, json, csv or md")->capture_default_str();
  sub->add_option("--threads", a->threads, "CPU threads (default: every core)");
  return [a] { return run_bench(*a); };
}

}  // namespace gpuvs::cli
