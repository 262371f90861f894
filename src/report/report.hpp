// SPDX-License-Identifier: Apache-2.0
// The report of a stored run (gpuvs evaluate's record): one self-contained HTML file that works offline
// — inline CSS, inline SVG charts, a few lines of script that only check the charts — or Markdown.
// Charts: the local device's roofline with the measured benchmark points and the workload's ops;
// throughput and cost per GPU; multi-GPU scaling (NVLink vs PCIe); memory fit per GPU; and the advice
// table. Text from devices, model files and users is escaped.
#pragma once
#include <nlohmann/json.hpp>
#include <string>

#include "core/files.hpp"

namespace gpuvs::report {

/// `run` is {"id", "created_utc", "payload": <evaluate record>}.
std::string render_html(const nlohmann::json& run);
std::string render_markdown(const nlohmann::json& run);
/// The output policy's view of an HTML report named by `flag`: a file holding a gpuvs report's title is one to
/// replace; anything else needs `force`.
files::OutputSpec html_output(const std::string& flag, bool force);
/// The report's only script: it checks the page after layout and writes what it found into <body>'s
/// attributes — data-charts / data-charts-ok (charts with data marks), data-layout-problems (text leaving
/// its chart, text over text or over a marker, a line drawn exactly over another) and data-layout-detail.
std::string layout_check_script();

}  // namespace gpuvs::report
