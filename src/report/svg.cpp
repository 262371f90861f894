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

std::string num(double v) {
  if (v == 0) return "0";
  const double a = std::fabs(v);
  if (a >= 1e9) return fmt::format("{:.3g}G", v / 1e9);
  if (a >= 1e6) return fmt::format("{:.3g}M", v / 1e6);
  if (a >= 1e3) return fmt::format("{:.3g}k", v / 1e3);
  return fmt::format("{:.3g}", v);
}

struct Scale {
  double lo, hi;
  bool log;
  double px0, px1;
  double operator()(double v) const {
    const double t = log ? (std::log10(v) - std::log10(lo)) / (std::log10(hi) - std::log10(lo)) : (v - lo) / (hi - lo);
    return px0 + t * (px1 - px0);
  }
  std::vector<double> ticks() const {
    std::vector<double> t;
    if (log) {
      for (double d = std::pow(10, std::floor(std::log10(lo))); d <= hi * 1.0001; d *= 10)
        if (d >= lo * 0.9999) t.push_back(d);
    } else {
      const double step = std::pow(10, std::floor(std::log10((hi - lo) / 4)));
      const double nice = (hi - lo) / step > 8 ? step * 2 : step;
      for (double d = std::ceil(lo / nice) * nice; d <= hi * 1.0001; d += nice) t.push_back(d);
    }
    return t;
  }
};

Scale make_scale(double lo, double hi, bool log, double px0, double px1) {
  if (log) {
    lo = std::pow(10, std::floor(std::log10(lo)));
    hi = std::pow(10, std::ceil(std::log10(hi)));
  } else {
    lo = std::min(lo, 0.0);
    hi = hi > lo ? hi * 1.05 : lo + 1;
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
      default: out += c;
    }
  }
  return out;
}

std::string bar_chart(const std::string& id, const std::string& title, const std::vector<Bar>& bars, const std::string& unit,
                      const std::string& marker_label) {
  const double row = 22, left = 170, width = 720, right = 90, top = 34;
  const double height = top + row * static_cast<double>(bars.size()) + 30;
  double hi = 0;
  for (const auto& b : bars) hi = std::max({hi, b.value, b.marker.value_or(0)});
  const Scale x = make_scale(0, hi > 0 ? hi : 1, false, left, width - right);
  std::string s = fmt::format(R"(<svg class="chart" id="{}" viewBox="0 0 {} {}" role="img" aria-label="{}">)", escape(id), width,
                              height, escape(title));
  s += fmt::format(R"(<text x="{}" y="20" class="title">{}</text>)", left, escape(title));
  for (double t : x.ticks())
    s += fmt::format(R"(<line x1="{0:.1f}" x2="{0:.1f}" y1="{1}" y2="{2}" class="grid"/><text x="{0:.1f}" y="{3}" class="tick" text-anchor="middle">{4}</text>)",
                     x(t), top - 4, height - 26, height - 12, num(t));
  s += fmt::format(R"(<text x="{}" y="{}" class="axis" text-anchor="end">{}</text>)", width - 10, height - 12, escape(unit));
  for (std::size_t i = 0; i < bars.size(); ++i) {
    const Bar& b = bars[i];
    const double y = top + row * static_cast<double>(i);
    s += fmt::format(R"(<text x="{}" y="{:.1f}" class="label" text-anchor="end">{}</text>)", left - 6, y + row * 0.65, escape(b.label));
    s += fmt::format(R"(<rect class="mark{}" x="{}" y="{:.1f}" width="{:.1f}" height="{:.1f}"><title>{}: {} {}{}</title></rect>)",
                     b.highlight ? " hl" : "", left, y + 3, std::max(0.5, x(b.value) - left), row - 6, escape(b.label), num(b.value),
                     escape(unit), b.note.empty() ? "" : " — " + escape(b.note));
    s += fmt::format(R"(<text x="{:.1f}" y="{:.1f}" class="value">{}</text>)", x(b.value) + 4, y + row * 0.65, num(b.value));
    if (b.marker)
      s += fmt::format(R"(<line class="marker" x1="{0:.1f}" x2="{0:.1f}" y1="{1:.1f}" y2="{2:.1f}"><title>{3}: {4}</title></line>)",
                       x(*b.marker), y + 1, y + row - 1, escape(marker_label), num(*b.marker));
  }
  return s + "</svg>";
}

std::string line_chart(const std::string& id, const std::string& title, const std::vector<Series>& series, const Axis& xa,
                       const Axis& ya) {
  const double width = 820, height = 400, left = 70, right = 250, top = 34, bottom = 50;
  double xlo = std::numeric_limits<double>::max(), xhi = std::numeric_limits<double>::lowest(), ylo = xlo, yhi = xhi;
  for (const auto& se : series)
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
  const Scale x = make_scale(xlo, xhi, xa.log, left, width - right);
  const Scale y = make_scale(ylo, yhi, ya.log, height - bottom, top);
  std::string s = fmt::format(R"(<svg class="chart" id="{}" viewBox="0 0 {} {}" role="img" aria-label="{}">)", escape(id), width,
                              height, escape(title));
  s += fmt::format(R"(<text x="{}" y="20" class="title">{}</text>)", left, escape(title));
  for (double t : x.ticks())
    s += fmt::format(R"(<line x1="{0:.1f}" x2="{0:.1f}" y1="{1}" y2="{2}" class="grid"/><text x="{0:.1f}" y="{3}" class="tick" text-anchor="middle">{4}</text>)",
                     x(t), top, height - bottom, height - bottom + 16, num(t));
  for (double t : y.ticks())
    s += fmt::format(R"(<line x1="{0}" x2="{1}" y1="{2:.1f}" y2="{2:.1f}" class="grid"/><text x="{3}" y="{4:.1f}" class="tick" text-anchor="end">{5}</text>)",
                     left, width - right, y(t), left - 6, y(t) + 4, num(t));
  s += fmt::format(R"(<text x="{}" y="{}" class="axis" text-anchor="middle">{}</text>)", (left + width - right) / 2, height - 12,
                   escape(xa.label));
  s += fmt::format(R"SVG(<text transform="translate(16,{}) rotate(-90)" class="axis" text-anchor="middle">{}</text>)SVG",
                   (top + height - bottom) / 2, escape(ya.label));
  for (std::size_t k = 0; k < series.size(); ++k) {
    const Series& se = series[k];
    std::string path;
    for (const auto& [px, py] : se.points) {
      if ((xa.log && px <= 0) || (ya.log && py <= 0)) continue;
      path += fmt::format("{}{:.1f},{:.1f}", path.empty() ? "M" : " L", x(px), y(py));
    }
    if (se.lines && !path.empty())
      s += fmt::format(R"(<path class="mark line" d="{}" stroke="{}"{}><title>{}</title></path>)", path, color(se.color),
                       se.dashed ? R"( stroke-dasharray="6 4")" : "", escape(se.label));
    for (std::size_t i = 0; i < se.points.size() && se.markers; ++i) {
      const auto [px, py] = se.points[i];
      if ((xa.log && px <= 0) || (ya.log && py <= 0)) continue;
      const std::string tip = i < se.point_labels.size() ? se.point_labels[i] : se.label;
      s += fmt::format(R"(<circle class="mark" cx="{:.1f}" cy="{:.1f}" r="{}" fill="{}"><title>{}: x {} y {}</title></circle>)", x(px),
                       y(py), se.lines ? 3 : 4.5, color(se.color), escape(tip), num(px), num(py));
    }
    const double ly = top + 14 + 18 * static_cast<double>(k);
    s += fmt::format(R"(<line x1="{0}" x2="{1}" y1="{2:.1f}" y2="{2:.1f}" stroke="{3}" stroke-width="2"{4}/><text x="{5}" y="{6:.1f}" class="legend">{7}</text>)",
                     width - right + 10, width - right + 30, ly, color(se.color), se.dashed ? R"( stroke-dasharray="6 4")" : "",
                     width - right + 34, ly + 4, escape(se.label));
  }
  return s + "</svg>";
}

}  // namespace gpuvs::report
