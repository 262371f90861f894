// SPDX-License-Identifier: Apache-2.0
// Small, dependency-free SVG charts for the self-contained HTML report: horizontal bar charts and
// line/scatter charts with linear or log axes. Every data mark carries class "mark" and a <title>
// tooltip; all text is escaped. Charts are plain strings so the report stays one offline file. Each chart is a
// document of its own (its xmlns, font, a <style> of its colours scoped to svg.chart, a <title> and a <desc> that
// names every figure), so one copied out of the report renders and reads the same.
//
// Layout contract (checked in headless Chromium by the report test): no text leaves its chart and no two
// text elements overlap. Text is measured with `text_width`, a per-character estimate of DejaVu Sans (the
// widest of the common sans-serif faces, and what system-ui resolves to on Debian), so titles and legend
// entries wrap at word boundaries instead of running off the edge, and margins grow to fit their labels.
#pragma once
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gpuvs::report {

/// HTML/XML text escaping for element content and attribute values; control bytes other than tab and line
/// breaks (which XML forbids, even as references) are written as the text \xNN.
std::string escape(std::string_view s);

/// Estimated rendered width in px of UTF-8 `text` at `font_px` (bold: the bold face's wider advances).
/// Errs wide, never narrow, for the faces a browser picks for the report's font stack.
double text_width(std::string_view text, double font_px, bool bold = false);

/// `text` broken at spaces into lines no wider than `max_px` (a word wider than that gets a line of its own).
std::vector<std::string> wrap_to_width(std::string_view text, double max_px, double font_px, bool bold = false);

struct Bar {
  std::string label;
  double value = 0;
  std::optional<double> marker;  // e.g. capacity drawn as a tick over the bar
  std::string note;              // tooltip text after the value
  bool highlight = false;        // drawn in the warning colour (e.g. does not fit)
  bool measured = false;         // a measured figure among predicted ones: its own colour
  std::string value_text;        // the label printed after the bar; empty: the value with SI prefix
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

/// Series whose points coincide (within 0.5% of the axis span) are drawn once, with their labels
/// joined in one legend entry, so no line hides under another.
std::string line_chart(const std::string& id, const std::string& title, const std::vector<Series>& series, const Axis& x,
                       const Axis& y);

}  // namespace gpuvs::report
