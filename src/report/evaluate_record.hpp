// SPDX-License-Identifier: Apache-2.0
// The record `gpuvs evaluate` stores in the history and the report renders: one definition of its sections,
// written by the CLI and read back by the report.
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace gpuvs::report {

/// One evaluate run. The sections other modules produce keep those modules' JSON records (devices from hw, bench
/// from bench, advice from advise, calibration and predictions from perf); this type says where each one lives.
struct EvaluateRecord {
  /// 2: the calibration classes as predict --json writes them (benchmark, unit, measured_over_predicted, note; 1 had
  /// ratio), and the advice's scenario with every request field. The report reads both.
  static constexpr int kSchemaVersion = 2;
  std::string gpuvs;  ///< the version (and git revision) that wrote it
  std::string workload, precision;
  nlohmann::json devices;        ///< the probe: cpu, nvidia, cuda_plugin
  nlohmann::json bench;          ///< the quick benchmarks' results record
  nlohmann::json training;       ///< what trained here: throughput, step time, epoch history
  nlohmann::json calibration;    ///< measured / predicted per op class, or null
  nlohmann::json measured;       ///< your own measurement's stack calibration (--measured, --stack), or null
  nlohmann::json predictions;    ///< one entry per catalog GPU
  nlohmann::json measured_here;  ///< this machine beside the predictions, or null when it trained something else
  nlohmann::json cluster;        ///< an MPI run's nodes, collectives and pairs, or null
  nlohmann::json network;        ///< the measured fabric multi-node predictions used, or null
  nlohmann::json roofline;       ///< the local device's roof with the measured points and the workload's ops
  nlohmann::json advice;         ///< the advisor's ranked options, ruled-out list and assumptions
  nlohmann::json serving;        ///< latency against load per card (decoders), or null
  std::string measured_here_note;  ///< why no measured bar stands beside the predictions, when none does
  std::string prediction_note;     ///< what the predictions assumed
  std::vector<std::string> summary;  ///< the run's headline lines
};

nlohmann::json to_json(const EvaluateRecord& r);

/// A stored payload read back. Any JSON reaches here (the history is a file others can write): a missing section
/// is null, a section of another kind is kept for the report to skip, a text field of another kind reads as "",
/// and a summary line that is not text reads as its JSON.
EvaluateRecord evaluate_record_from(const nlohmann::json& payload);

}  // namespace gpuvs::report
