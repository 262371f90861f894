// The report of a stored run (gpuvs evaluate's record): one self-contained HTML file that works offline
// — inline CSS, inline SVG charts, a few lines of script that only check the charts — or Markdown.
// Charts: the local device's roofline with the measured benchmark points and the workload's ops;
// throughput and cost per GPU; multi-GPU scaling (NVLink vs PCIe); memory fit per GPU; and the advice
// table. Text from devices, model files and users is escaped.
#pragma once
#include <nlohmann/json.hpp>
#include <string>

namespace gpuvs::report {

/// `run` is {"id", "created_utc", "payload": <evaluate record>}.
std::string render_html(const nlohmann::json& run);
std::string render_markdown(const nlohmann::json& run);

}  // namespace gpuvs::report
