// SPDX-License-Identifier: Apache-2.0
#include "report/evaluate_record.hpp"

namespace gpuvs::report {

using json = nlohmann::json;

namespace {

/// Every section by its key, for writing and reading alike.
template <typename Record, typename F>
void for_each_section(Record& r, F&& f) {
  f("devices", r.devices);
  f("bench", r.bench);
  f("training", r.training);
  f("calibration", r.calibration);
  f("measured", r.measured);
  f("predictions", r.predictions);
  f("measured_here", r.measured_here);
  f("cluster", r.cluster);
  f("network", r.network);
  f("roofline", r.roofline);
  f("advice", r.advice);
  f("serving", r.serving);
}

template <typename Record, typename F>
void for_each_text(Record& r, F&& f) {
  f("gpuvs", r.gpuvs);
  f("workload", r.workload);
  f("precision", r.precision);
  f("measured_here_note", r.measured_here_note);
  f("prediction_note", r.prediction_note);
}

}  // namespace

json to_json(const EvaluateRecord& r) {
  json j = {{"schema_version", EvaluateRecord::kSchemaVersion}, {"kind", "evaluate"}, {"summary", r.summary}};
  for_each_section(r, [&](const char* key, const json& v) { j[key] = v; });
  for_each_text(r, [&](const char* key, const std::string& v) { j[key] = v; });
  return j;
}

EvaluateRecord evaluate_record_from(const json& payload) {
  EvaluateRecord r;
  if (!payload.is_object()) return r;
  for_each_section(r, [&](const char* key, json& v) { v = payload.contains(key) ? payload[key] : json(nullptr); });
  for_each_text(r, [&](const char* key, std::string& v) { v = payload.contains(key) && payload[key].is_string() ? payload[key].get<std::string>() : ""; });
  if (payload.contains("summary") && payload["summary"].is_array())
    for (const auto& line : payload["summary"]) r.summary.push_back(line.is_string() ? line.get<std::string>() : line.dump());
  return r;
}

}  // namespace gpuvs::report
