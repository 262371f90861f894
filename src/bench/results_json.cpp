// SPDX-License-Identifier: Apache-2.0
#include "bench/results_json.hpp"

#include <fmt/format.h>

#include <chrono>
#include <ctime>
#include <limits>

#include "bench/gpu_benchmarks.hpp"
#include "core/clock.hpp"
#include "core/error.hpp"
#include "hw/cpu.hpp"

namespace gpuvs::bench {

namespace {

nlohmann::json opt_num(const std::optional<double>& v) { return v ? nlohmann::json(*v) : nlohmann::json(nullptr); }

}  // namespace

nlohmann::json measurement_json(const Measurement& m) {
  const bool has = m.status == "ok";
  nlohmann::json env = nlohmann::json::object();
  for (const auto& [k, v] : m.env) env[k] = v;
  return {{"key", m.key},
          {"description", m.description},
          {"device", m.device},
          {"unit", m.unit},
          {"status", m.status},
          {"median", has ? nlohmann::json(m.median) : nlohmann::json(nullptr)},
          {"min", has ? nlohmann::json(m.min) : nlohmann::json(nullptr)},
          {"max", has ? nlohmann::json(m.max) : nlohmann::json(nullptr)},
          {"spread", has ? nlohmann::json(m.spread) : nlohmann::json(nullptr)},
          {"repetitions", m.repetitions},
          {"spec", opt_num(m.spec)},
          {"spec_what", m.spec_what},
          {"pct_of_spec", opt_num(m.pct_of_spec())},
          {"env", env},
          {"note", m.note},
          {"detail", m.detail}};
}

nlohmann::json results_json(const std::vector<Measurement>& results, bool quick, const std::string& gpuvs_version) {
  const hw::CpuInfo cpu = hw::probe_cpu();
  nlohmann::json arr = nlohmann::json::array();
  for (const auto& m : results) arr.push_back(measurement_json(m));
  return {{"schema_version", kResultsSchema},
          {"created_utc", clock::utc_now()},
          {"gpuvs", gpuvs_version},
          {"quick", quick},
          {"machine",
           {{"cpu", cpu.model}, {"cores", cpu.cores}, {"threads", cpu.threads}, {"memory_bytes", cpu.memory_bytes},
            {"gpu", gpu_status()}}},
          {"results", arr}};
}

files::OutputSpec record_output(const std::string& flag, bool force) { return {flag, "bench record", "\"gpuvs\": \"", force}; }

std::vector<Measurement> measurements_from_json(const nlohmann::json& record, const std::string& where) {
  if (!record.is_object() || !record.contains("schema_version") || !record.contains("results"))
    throw InputError(fmt::format("{}: not a gpuvs bench record (no schema_version/results)", where));
  if (!record["schema_version"].is_number_integer() || record["schema_version"].get<std::int64_t>() != kResultsSchema)  // not cut to int: 2^32 + 2 is not 2
    throw InputError(fmt::format("{}: bench record schema_version {} is not supported (expected {})", where,
                                 record["schema_version"].dump(), kResultsSchema));
  if (!record["results"].is_array()) throw InputError(fmt::format("{}: 'results' is not an array", where));
  std::vector<Measurement> out;
  std::size_t i = 0;
  for (const auto& r : record["results"]) {
    const std::string at = fmt::format("{}: results[{}]", where, i++);
    try {
      Measurement m;
      m.key = r.at("key").get<std::string>();
      m.unit = r.at("unit").get<std::string>();
      m.status = r.at("status").get<std::string>();
      m.device = r.value("device", std::string());
      m.description = r.value("description", std::string());
      m.note = r.value("note", std::string());
      if (m.status == "ok") {
        m.median = r.at("median").get<double>();
        m.min = r.value("min", m.median);
        m.max = r.value("max", m.median);
        m.spread = r.value("spread", 0.0);
        if (!(m.median > 0)) throw InputError(fmt::format("{}: median must be positive", at));
      }
      if (r.contains("repetitions")) {  // read as a double, 1e308 made int's conversion undefined (UBSan; fuzz_bench_record)
        const auto& n = r["repetitions"];
        if (!n.is_number_integer() || n.get<std::int64_t>() < 0 || n.get<std::int64_t>() > std::numeric_limits<int>::max())
          throw InputError(fmt::format("{}: repetitions must be a whole number in [0, 2^31)", at));
        m.repetitions = static_cast<int>(n.get<std::int64_t>());
      }
      if (r.contains("spec") && r["spec"].is_number()) m.spec = r["spec"].get<double>();
      m.spec_what = r.value("spec_what", std::string());
      if (r.contains("env") && r["env"].is_object())
        for (const auto& [k, v] : r["env"].items()) m.env.emplace_back(k, v.is_string() ? v.get<std::string>() : v.dump());
      out.push_back(std::move(m));
    } catch (const nlohmann::json::exception& e) {
      throw InputError(fmt::format("{}: {}", at, e.what()));
    }
  }
  return out;
}

}  // namespace gpuvs::bench
