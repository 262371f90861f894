// SPDX-License-Identifier: Apache-2.0
#include "report/svg.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

namespace gpuvs::report {

namespace {

const char* const kPalette[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b",
                                "#e377c2", "#17becf", "#7f7f7f", "#bcbd22"};
const char* color(int i) { return kPalette[static_cast<std::size_t>(std::abs(i)) % std::size(kPalette)]; }

// Advance widths of DejaVu Sans Book for ASCII 32..126, in 1/2048 em (the font's own units).
constexpr int kDejaVuAdvance[95] = {
    651,  821,  942,  1716, 1303, 1946, 1597, 563,  799,  799,  1024, 1716, 651,  739,  651,  690,  1303, 1303, 1303,
    1303, 1303, 1303, 1303, 1303, 1303, 1303, 690,  690,  1716, 1716, 1716, 1087, 2048, 1401, 1405, 1430, 1577, 1294,
    1178, 1587, 1540, 604,  604,  1343, 1141, 1767, 1532, 1612, 1235, 1612, 1423, 1300, 1251, 1499, 1401, 2025, 1403,
    1251, 1403, 799,  690,  799,  1716, 1024, 1024, 1255, 1300, 1126, 1300, 1260, 721,  1300, 1298, 569,  569,  1186,
    569,  1995, 1298, 1253, 1300, 1300, 842,  1067, 803,  1298, 1212, 1675, 1212, 1212, 1075, 1303, 690,  1303, 1716};

std::string num(double v) {
  if (v == 0) return "0";
  const double a = std::fabs(v);
  // Three significant digits with an SI prefix; a value that rounds up to the next prefix takes it (999.7 is
  // "1k", not "1e+03").
  static const std::pair<double, const char*> prefixes[] = {{1e12, "T"}, {1e9, "G"}, {1e6, "M"}, {1e3, "k"}, {1, ""}};
  for (const auto& [scale, prefix] : prefixes)
    if (a >= scale * 0.9995 || scale == 1) {
      const std::string s = fmt::format("{:.3g}{}", v / scale, prefix);
      if (s.find('e') == std::string::npos || scale == 1e12) return s;
    }
  return fmt::format("{:.3g}", v);
}

constexpr double kTitlePx = 14, kSmallPx = 11, kAxisPx = 12, kTitleLine = 18;

/// The title, wrapped to the chart's width, one <text> per line from y = 20; returns the lines' count.
/// Each chart carries its own namespace, font, colours and text alternative, so that one copied out of the report
/// (into slides, another page) renders the same and reads the same to a screen reader. The rules are scoped to
/// svg.chart: inside the report's HTML a <style> in an SVG applies to the whole page.
constexpr const char* kChartStyle =
    "svg.chart .title{font-weight:600;font-size:14px}svg.chart .tick,svg.chart .legend,svg.chart .label,svg.chart .value"
    "{font-size:11px;fill:#333}svg.chart .axis{font-size:12px;fill:#333}svg.chart .grid{stroke:#eee}"
    "svg.chart rect.bar{fill:#4e79a7}svg.chart rect.bar.hl{fill:#e15759}svg.chart rect.bar.measured{fill:#59a14f}"
    "svg.chart path.line{fill:none;stroke-width:2}svg.chart .marker{stroke:#222;stroke-width:2}";

std::string chart_open(const std::string& id, double width, double height, const std::string& title, const std::string& desc) {
  return fmt::format(R"(<svg xmlns="http://www.w3.org/2000/svg" class="chart" id="{0}" viewBox="0 0 {1} {2}" role="img" )"
                     R"(aria-labelledby="{0}-title {0}-desc" font-family="system-ui,-apple-system,'Segoe UI',Roboto,'DejaVu Sans',sans-serif">)"
                     R"(<title id="{0}-title">{3}</title><desc id="{0}-desc">{4}</desc><style>{5}</style>)",
                     escape(id), width, height, escape(title), escape(desc), kChartStyle);
}

std::string title_lines(const std::string& title, double width, int& lines) {
  const auto wrapped = wrap_to_width(title, width - 20, kTitlePx, true);
  std::string s;
  for (std::size_t i = 0; i < wrapped.size(); ++i)
    s += fmt::format(R"(<text x="10" y="{:.0f}" class="title">{}</text>)", 20 + kTitleLine * static_cast<double>(i), escape(wrapped[i]));
  lines = static_cast<int>(wrapped.size());
  return s;
}

struct Scale {
  double lo, hi;
  bool log;
  double px0, px1;
  /// The pixel of `v`: finite always, and held within a million pixels of the plot (a stored value of -1e308
  /// past the axis's end would print "-inf", or 300 digits, into the SVG).
  double operator()(double v) const {
    const double t = log ? (std::log10(v) - std::log10(lo)) / (std::log10(hi) - std::log10(lo)) : (v - lo) / (hi - lo);
    const double p = px0 + t * (px1 - px0);
    constexpr double kFar = 1e6;
    return std::isfinite(p) ? std::clamp(p, -kFar, kFar) : t > 0 ? kFar : -kFar;
  }
  std::vector<double> ticks() const {
    std::vector<double> t;
    if (log) {
      // A tick a decade, or every few decades over a range of dozens (make_scale keeps both ends finite and
      // positive: from 0, or up to infinity, this loop never ended; found by fuzz_history).
      const double decades = std::log10(hi) - std::log10(lo);
      const double stride = std::pow(10, std::max(1.0, std::ceil(decades / 12)));
      for (double d = lo; d <= hi * 1.0001; d *= stride) t.push_back(d);
    } else {
      const double step = std::pow(10, std::floor(std::log10((hi - lo) / 4)));
      const double nice = (hi - lo) / step > 8 ? step * 2 : step;
      for (double d = std::ceil(lo / nice) * nice; d <= hi * 1.0001; d += nice) t.push_back(d);
    }
    return t;
  }
};

/// The ends of an axis over [lo, hi] (finite; positive on a log axis), rounded out to whole decades (log) or
/// from zero with 5% headroom. Held to 1e-300 and 1e300, so that rounding out stays finite and non-zero
/// whatever a stored record holds (points beyond are drawn past the plot's edge).
Scale make_scale(double lo, double hi, bool log, double px0, double px1) {
  constexpr double kTiny = 1e-300, kHuge = 1e300;
  if (log) {
    lo = std::pow(10, std::floor(std::log10(std::clamp(lo, kTiny, kHuge))));
    hi = std::max(std::pow(10, std::ceil(std::log10(std::clamp(hi, kTiny, kHuge)))), lo * 10);
  } else {
    lo = std::clamp(std::min(lo, 0.0), -kHuge, 0.0);
    hi = std::clamp(hi, -kHuge, kHuge);
    // Headroom above the data; an empty range (all at -1e300 after the clamp, where lo + 1 == lo) gets one.
    if (hi > 0) hi *= 1.05;
    else if (hi > lo) hi += 0.05 * (hi - lo);
    else hi = lo + std::max(1.0, 0.05 * std::fabs(lo));
  }
  return {lo, hi, log, px0, px1};
}

}  // namespace

std::string escape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      case '\t': case '\n': case '\r': out += c; break;
      default:
        // XML allows no other control character, not even as a reference (an inline SVG is XML): shown as text.
        if (static_cast<unsigned char>(c) < 0x20 || c == 0x7F) out += fmt::format("\\x{:02X}", static_cast<unsigned char>(c));
        else out += c;
    }
  }
  return out;
}


double text_width(std::string_view text, double font_px, bool bold) {
  double em = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c >= 32 && c < 127) em += kDejaVuAdvance[c - 32] / 2048.0;
    else if ((c & 0xC0) != 0x80) em += 1.0;  // a non-ASCII code point (dash, ×, µ, …): a full em
  }
  // The bold face's advances are ~10% wider; 3% more covers hinting and the faces a browser may pick instead.
  return em * font_px * (bold ? 1.12 : 1.0) * 1.03;
}

std::vector<std::string> wrap_to_width(std::string_view text, double max_px, double font_px, bool bold) {
  std::vector<std::string> lines;
  std::string line;
  std::size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && text[i] == ' ') ++i;
    const std::size_t j = std::min(text.find(' ', i), text.size());
    if (j == i) break;
    const std::string_view word = text.substr(i, j - i);
    i = j;
    const std::string candidate = line.empty() ? std::string(word) : line + " " + std::string(word);
    if (!line.empty() && text_width(candidate, font_px, bold) > max_px) {
      lines.push_back(line);
      line = std::string(word);
    } else {
      line = candidate;
    }
  }
  if (!line.empty() || lines.empty()) lines.push_back(line);
  return lines;
}

namespace {

/// A figure for a table cell: as the chart prints it, but never in exponent notation (a small intensity, 0.00012).
std::string cell_num(double v) {
  const double a = std::fabs(v);
  if (v == 0 || !std::isfinite(v) || a >= 1e-3) return num(v);
  return fmt::format("{:.{}f}", v, std::min(12, 2 - static_cast<int>(std::floor(std::log10(a)))));
}

/// A chart's figures as a table beside it (collapsed under it): the same figures, for a reader who wants the
/// number, a screen reader, or a copy into a spreadsheet (the report embeds each table as a CSV too).
std::string figures_table(const std::vector<std::string>& header, const std::vector<std::vector<std::string>>& rows) {
  std::string s = "<details class=\"figures\"><summary>The figures in this chart</summary><table><tr>";
  for (const auto& h : header) s += "<th>" + escape(h) + "</th>";
  s += "</tr>";
  for (const auto& row : rows) {
    s += "<tr>";
    for (const auto& cell : row) s += "<td>" + escape(cell) + "</td>";
    s += "</tr>";
  }
  return s + "</table></details>";
}

}  // namespace

std::string bar_chart(const std::string& id, const std::string& title, const std::vector<Bar>& bars, const std::string& unit,
                      const std::string& marker_label) {
  const double width = 720, row = 22;
  std::vector<std::string> values;
  double label_w = text_width(unit, kAxisPx), value_w = 0, hi = 0;
  for (const auto& b : bars) {
    values.push_back(b.value_text.empty() ? num(b.value) : b.value_text);
    label_w = std::max(label_w, text_width(b.label, kSmallPx));
    value_w = std::max(value_w, text_width(values.back(), kSmallPx));
    hi = std::max({hi, b.value, b.marker.value_or(0)});
  }
  const double left = std::min(360.0, std::max(120.0, label_w + 16));
  const double right = std::max(40.0, value_w + 16);
  int lines = 1;
  const std::string heading = title_lines(title, width, lines);
  const double top = 34 + kTitleLine * (lines - 1);
  const double height = top + row * static_cast<double>(bars.size()) + 30;
  const Scale x = make_scale(0, hi > 0 ? hi : 1, false, left, width - right);
  // The text alternative: every bar's figure, and what its colour means.
  std::string desc = fmt::format("Bar chart, {}:", unit);
  for (std::size_t i = 0; i < bars.size(); ++i)
    desc += fmt::format(" {}{} {}{};", bars[i].label, bars[i].measured ? " (measured)" : "", values[i],
                        bars[i].marker ? fmt::format(" ({} {})", marker_label, num(*bars[i].marker)) : "");
  std::string s = chart_open(id, width, height, title, desc);
  s += heading;
  for (double t : x.ticks())
    s += fmt::format(R"(<line x1="{0:.1f}" x2="{0:.1f}" y1="{1}" y2="{2}" class="grid"/><text x="{0:.1f}" y="{3}" class="tick" text-anchor="middle">{4}</text>)",
                     x(t), top - 4, height - 26, height - 12, num(t));
  // The unit sits in the label column on the tick row, clear of every tick label.
  s += fmt::format(R"(<text x="{}" y="{}" class="axis" text-anchor="end">{}</text>)", left - 12, height - 12, escape(unit));
  for (std::size_t i = 0; i < bars.size(); ++i) {
    const Bar& b = bars[i];
    const double y = top + row * static_cast<double>(i);
    s += fmt::format(R"(<text x="{}" y="{:.1f}" class="label" text-anchor="end">{}</text>)", left - 6, y + row * 0.65, escape(b.label));
    s += fmt::format(R"(<rect class="mark bar{}" x="{}" y="{:.1f}" width="{:.1f}" height="{:.1f}"><title>{}: {} {}{}</title></rect>)",
                     b.measured ? " measured" : b.highlight ? " hl" : "", left, y + 3, std::max(0.5, x(b.value) - left), row - 6,
                     escape(b.label), escape(values[i]), escape(unit), b.note.empty() ? "" : " — " + escape(b.note));
    // The value goes right of the bar and of its marker, so the two never cover each other.
    const double end = std::max(x(b.value), b.marker ? x(*b.marker) + 1 : 0.0);
    s += fmt::format(R"(<text x="{:.1f}" y="{:.1f}" class="value">{}</text>)", end + 5, y + row * 0.65, escape(values[i]));
    if (b.marker)
      s += fmt::format(R"(<line class="marker" x1="{0:.1f}" x2="{0:.1f}" y1="{1:.1f}" y2="{2:.1f}"><title>{3}: {4}</title></line>)",
                       x(*b.marker), y + 1, y + row - 1, escape(marker_label), num(*b.marker));
  }
  s += "</svg>";
  std::vector<std::string> header = {"bar", fmt::format("value ({})", unit)};
  const bool markers = std::any_of(bars.begin(), bars.end(), [](const Bar& b) { return b.marker.has_value(); });
  if (markers) header.push_back(marker_label.empty() ? "marker" : marker_label);
  header.push_back("note");
  std::vector<std::vector<std::string>> rows;
  for (std::size_t i = 0; i < bars.size(); ++i) {
    std::vector<std::string> cells = {bars[i].label + (bars[i].measured ? " (measured)" : ""), values[i]};
    if (markers) cells.push_back(bars[i].marker ? cell_num(*bars[i].marker) : "");
    cells.push_back(bars[i].note);
    rows.push_back(std::move(cells));
  }
  return s + figures_table(header, rows);
}

namespace {

/// Series drawn once per distinct line: a series whose points coincide with an earlier one's (within
/// `tol_y` in y, exactly in x) joins it, its label appended.
std::vector<Series> merge_coincident(const std::vector<Series>& series, double tol_y) {
  std::vector<Series> out;
  for (const auto& se : series) {
    bool merged = false;
    for (auto& kept : out) {
      if (kept.points.size() != se.points.size() || kept.points.empty() || kept.lines != se.lines) continue;
      bool same = true;
      for (std::size_t i = 0; i < se.points.size() && same; ++i)
        same = kept.points[i].first == se.points[i].first && std::fabs(kept.points[i].second - se.points[i].second) <= tol_y;
      if (same) {
        kept.label += " = " + se.label;
        merged = true;
        break;
      }
    }
    if (!merged) out.push_back(se);
  }
  return out;
}

/// A point of series `k`: a circle, square, triangle or diamond in turn, so that series are told apart by shape as
/// well as by colour (readers who do not see the colours, a page printed in grey).
std::string marker(std::size_t k, double cx, double cy, double r, const std::string& fill, const std::string& inner,
                   const char* cls = "mark") {
  switch (k % 4) {
    case 1:
      return fmt::format(R"(<rect class="{}" x="{:.1f}" y="{:.1f}" width="{:.1f}" height="{:.1f}" fill="{}">{}</rect>)", cls,
                         cx - r * 0.9, cy - r * 0.9, r * 1.8, r * 1.8, fill, inner);
    case 2:
      return fmt::format(R"(<path class="{}" d="M{:.1f},{:.1f} L{:.1f},{:.1f} L{:.1f},{:.1f} Z" fill="{}">{}</path>)", cls, cx, cy - r * 1.2,
                         cx + r * 1.1, cy + r * 0.8, cx - r * 1.1, cy + r * 0.8, fill, inner);
    case 3:
      return fmt::format(R"(<path class="{}" d="M{:.1f},{:.1f} L{:.1f},{:.1f} L{:.1f},{:.1f} L{:.1f},{:.1f} Z" fill="{}">{}</path>)", cls, cx,
                         cy - r * 1.2, cx + r * 1.2, cy, cx, cy + r * 1.2, cx - r * 1.2, cy, fill, inner);
    default:
      return fmt::format(R"(<circle class="{}" cx="{:.1f}" cy="{:.1f}" r="{}" fill="{}">{}</circle>)", cls, cx, cy, r, fill, inner);
  }
}

}  // namespace

std::string line_chart(const std::string& id, const std::string& title, const std::vector<Series>& in, const Axis& xa,
                       const Axis& ya) {
  const double width = 820, right = 250, bottom = 50;
  double xlo = std::numeric_limits<double>::max(), xhi = std::numeric_limits<double>::lowest(), ylo = xlo, yhi = xhi;
  for (const auto& se : in)
    for (const auto& [px, py] : se.points) {
      if ((xa.log && px <= 0) || (ya.log && py <= 0) || !std::isfinite(px) || !std::isfinite(py)) continue;
      xlo = std::min(xlo, px);
      xhi = std::max(xhi, px);
      ylo = std::min(ylo, py);
      yhi = std::max(yhi, py);
    }
  if (xlo > xhi) xlo = xhi = ylo = yhi = 1;
  if (xlo == xhi) xhi = xlo * 2;
  if (ylo == yhi) yhi = ylo * 2;
  const std::vector<Series> series = merge_coincident(in, ya.log ? 0.0 : 0.005 * (yhi - std::min(ylo, 0.0)));
  // The legend: each entry wrapped to the legend column, 14 px a line.
  const double legend_text_w = right - 44;
  std::vector<std::vector<std::string>> legend;
  double legend_h = 0;
  for (const auto& se : series) {
    legend.push_back(wrap_to_width(se.label, legend_text_w, kSmallPx));
    legend_h += 14 * static_cast<double>(legend.back().size()) + 4;
  }
  int lines = 1;
  const std::string heading = title_lines(title, width, lines);
  const double top = 34 + kTitleLine * (lines - 1);
  const double height = std::max(400.0 + kTitleLine * (lines - 1), top + legend_h + 20);
  // The y tick labels sit right-aligned before the plot; the rotated axis label needs ~20 px left of them.
  Scale y = make_scale(ylo, yhi, ya.log, height - bottom, top);
  double tick_w = 0;
  for (double t : y.ticks()) tick_w = std::max(tick_w, text_width(num(t), kSmallPx));
  const double left = std::max(70.0, tick_w + 32);
  const Scale x = make_scale(xlo, xhi, xa.log, left, width - right);
  std::string desc = fmt::format("Line chart, x: {}{}, y: {}{}; series:", xa.label, xa.log ? " (log scale)" : "", ya.label,
                                 ya.log ? " (log scale)" : "");
  for (const auto& se : series) {
    desc += " " + se.label + " (";
    for (std::size_t i = 0; i < se.points.size(); ++i) desc += fmt::format("{}{} {}", i ? ", " : "", num(se.points[i].first), num(se.points[i].second));
    desc += ");";
  }
  std::string s = chart_open(id, width, height, title, desc);
  s += heading;
  for (double t : x.ticks())
    s += fmt::format(R"(<line x1="{0:.1f}" x2="{0:.1f}" y1="{1}" y2="{2}" class="grid"/><text x="{0:.1f}" y="{3}" class="tick" text-anchor="middle">{4}</text>)",
                     x(t), top, height - bottom, height - bottom + 20, num(t));
  for (double t : y.ticks())
    s += fmt::format(R"(<line x1="{0}" x2="{1}" y1="{2:.1f}" y2="{2:.1f}" class="grid"/><text x="{3}" y="{4:.1f}" class="tick" text-anchor="end">{5}</text>)",
                     left, width - right, y(t), left - 6, y(t) + 4, num(t));
  s += fmt::format(R"(<text x="{}" y="{}" class="axis" text-anchor="middle">{}</text>)", (left + width - right) / 2, height - 10,
                   escape(xa.label));
  s += fmt::format(R"SVG(<text transform="translate(16,{}) rotate(-90)" class="axis" text-anchor="middle">{}</text>)SVG",
                   (top + height - bottom) / 2, escape(ya.label));
  double ly = top + 14;
  for (std::size_t k = 0; k < series.size(); ++k) {
    const Series& se = series[k];
    std::string path;
    for (const auto& [px, py] : se.points) {
      if ((xa.log && px <= 0) || (ya.log && py <= 0) || !std::isfinite(px) || !std::isfinite(py)) continue;  // as the extents
      path += fmt::format("{}{:.1f},{:.1f}", path.empty() ? "M" : " L", x(px), y(py));
    }
    if (se.lines && !path.empty())
      s += fmt::format(R"(<path class="mark line" d="{}" stroke="{}"{}><title>{}</title></path>)", path, color(se.color),
                       se.dashed ? R"( stroke-dasharray="6 4")" : "", escape(se.label));
    for (std::size_t i = 0; i < se.points.size() && se.markers; ++i) {
      const auto [px, py] = se.points[i];
      if ((xa.log && px <= 0) || (ya.log && py <= 0) || !std::isfinite(px) || !std::isfinite(py)) continue;
      const std::string tip = i < se.point_labels.size() ? se.point_labels[i] : se.label;
      s += marker(k, x(px), y(py), se.lines ? 3 : 4.5, color(se.color),
                  fmt::format("<title>{}: x {} y {}</title>", escape(tip), num(px), num(py)));
    }
    s += fmt::format(R"(<line x1="{0}" x2="{1}" y1="{2:.1f}" y2="{2:.1f}" stroke="{3}" stroke-width="2"{4}/>)", width - right + 10,
                     width - right + 30, ly, color(se.color), se.dashed ? R"( stroke-dasharray="6 4")" : "");
    if (se.markers) s += marker(k, width - right + 20, ly, 4, color(se.color), "", "key");  // the legend shows the series' shape too
    for (const auto& text : legend[k]) {
      s += fmt::format(R"(<text x="{}" y="{:.1f}" class="legend">{}</text>)", width - right + 34, ly + 4, escape(text));
      ly += 14;
    }
    ly += 4;
  }
  s += "</svg>";
  std::vector<std::vector<std::string>> rows;
  for (const auto& se : in)
    for (std::size_t i = 0; i < se.points.size(); ++i)
      rows.push_back({se.label, cell_num(se.points[i].first), cell_num(se.points[i].second), i < se.point_labels.size() ? se.point_labels[i] : ""});
  return s + figures_table({"series", xa.label, ya.label, "point"}, rows);
}

}  // namespace gpuvs::report
