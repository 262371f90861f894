// Small, dependency-free SVG charts for the self-contained HTML report: horizontal bar charts and
// line/scatter charts with linear or log axes. Every data mark carries class "mark" and a <title>
// tooltip; all text is escaped. Charts are plain strings so the report stays one offline file.
#pragma once
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gpuvs::report {

/// HTML/XML text escaping for element content and attribute values.
std::string escape(std::string_view s);

struct Bar {
  std::string label;
  double value = 0;
  std::optional<double> marker;  // e.g. capacity drawn as a tick over the bar
  std::string note;              // tooltip text after the value
  bool highlight = false;
};

std::string bar_chart(const std::string& id, const std::string& title, const std::vector<Bar>& bars, const std::string& unit,
                      const std::string& marker_label = "");

struct Series {
  std::string label;
  std::vector<std::pair<double, double>> points;
  bool lines = true;     // connect the points; false: scatter
  bool dashed = false;
  int color = 0;         // palette index
  std::vector<std::string> point_labels;  // tooltips per point (optional)
  bool markers = true;   // a circle per point
};

struct Axis {
  std::string label;
  bool log = false;
};

std::string line_chart(const std::string& id, const std::string& title, const std::vector<Series>& series, const Axis& x,
                       const Axis& y);

}  // namespace gpuvs::report
