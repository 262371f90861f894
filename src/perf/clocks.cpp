// SPDX-License-Identifier: Apache-2.0
#include "perf/clocks.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <vector>

#include "core/error.hpp"
#include "core/stats.hpp"
#include "core/strings.hpp"
#include "core/toml_input.hpp"

namespace gpuvs::embedded {
extern const char* const kClocks;
}

namespace gpuvs::perf {

const BaseClock* ClockData::find(const std::string& gpu_id) const {
  for (const auto& c : clocks)
    if (c.gpu == gpu_id) return &c;
  return nullptr;
}

ClockData parse_clocks(const std::string& text, const std::string& where, const catalog::Catalog& cat) {
  const toml::table t = parse_toml(text, where);
  for (const auto& [k, v] : t)
    if (k.str() != "gpu") throw InputError(fmt::format("{}: unknown table '{}' (expected [[gpu]])", where, strings::printable(k.str())));
  const auto* arr = t["gpu"].as_array();
  if (!arr) throw InputError(fmt::format("{}: no [[gpu]] tables", where));
  ClockData out;
  for (const auto& node : *arr) {
    const int line = static_cast<int>(node.source().begin.line);
    const auto* g = node.as_table();
    if (!g) throw InputError(fmt::format("{}:{}: a [[gpu]] entry must be a table", where, line));
    BaseClock c;
    c.line = line;
    for (const auto& [k, v] : *g) {
      const std::string key(k.str());
      if (key == "id" || key == "source") {
        const auto s = v.value<std::string>();
        if (!s || s->empty()) throw InputError(fmt::format("{}:{}: {} must be a non-empty string", where, line, key));
        (key == "id" ? c.gpu : c.source) = *s;
      } else if (key == "base_mhz" || key == "peak_mhz") {
        const auto d = v.value<double>();
        if (!d || !std::isfinite(*d) || *d <= 0) throw InputError(fmt::format("{}:{}: {} must be a positive number", where, line, key));
        (key == "base_mhz" ? c.base_mhz : c.peak_mhz) = *d;
      } else if (key != "note") {
        throw InputError(fmt::format("{}:{}: unknown key '{}' (expected id, base_mhz, peak_mhz, source, note)", where, line, strings::printable(key)));
      }
    }
    if (c.gpu.empty() || c.base_mhz == 0 || c.source.empty())
      throw InputError(fmt::format("{}:{}: a [[gpu]] entry needs id, base_mhz and source", where, line));
    const catalog::Gpu* gpu = nullptr;
    try {
      gpu = &cat.find(c.gpu);
    } catch (const InputError& e) {
      throw InputError(fmt::format("{}:{}: {}", where, line, e.what()));
    }
    c.gpu = gpu->id;
    if (gpu->boost_mhz <= 0)
      throw InputError(fmt::format("{}:{}: '{}' has no boost clock in the catalog to compare with", where, line, c.gpu));
    if (c.base_mhz > gpu->boost_mhz)
      throw InputError(fmt::format("{}:{}: base_mhz {} is above '{}''s boost clock {} MHz", where, line, c.base_mhz, c.gpu, gpu->boost_mhz));
    if (c.peak_mhz > gpu->boost_mhz || (c.peak_mhz > 0 && c.peak_mhz < c.base_mhz))
      throw InputError(fmt::format("{}:{}: peak_mhz {} must lie between base_mhz and '{}''s boost clock {} MHz", where, line, c.peak_mhz,
                                   c.gpu, gpu->boost_mhz));
    if (out.find(c.gpu)) throw InputError(fmt::format("{}:{}: '{}' listed twice", where, line, c.gpu));
    out.clocks.push_back(c);
  }
  return out;
}

const ClockData& builtin_clocks() {
  static const ClockData d = parse_clocks(embedded::kClocks, "built-in data/clocks.toml", catalog::Catalog::builtin());
  return d;
}

namespace {

// A card's clocks as fractions of its boost: its own entry, else its chip's (see clocks.hpp).
struct ClockShape {
  double base = 0, peak = 0;  // base_mhz / boost, peak_mhz / boost (0: rated at the boost)
};

std::optional<ClockShape> shape_of(const catalog::Gpu& gpu, const ClockData& data) {
  if (gpu.boost_mhz <= 0) return std::nullopt;
  if (const BaseClock* c = data.find(gpu.id)) return ClockShape{c->base_mhz / gpu.boost_mhz, c->peak_mhz / gpu.boost_mhz};
  if (gpu.chip.empty()) return std::nullopt;
  // No figure of its own: the boards of its chip with the most power not above its own (a GH200's GH100 at up to
  // 1,000 W takes the 700 W SXM boards', not the 350 W PCIe card's), the median of their shapes.
  static const catalog::Catalog builtin = catalog::Catalog::builtin();
  double best_tdp = -1;
  std::vector<ClockShape> kin;
  for (const auto& other : builtin.gpus()) {
    const BaseClock* c = data.find(other.id);
    if (!c || other.id == gpu.id || other.chip != gpu.chip || other.boost_mhz <= 0 || other.tdp_w > gpu.tdp_w) continue;
    if (other.tdp_w > best_tdp) {
      best_tdp = other.tdp_w;
      kin.clear();
    }
    if (other.tdp_w == best_tdp) kin.push_back({c->base_mhz / other.boost_mhz, c->peak_mhz / other.boost_mhz});
  }
  if (kin.empty()) return std::nullopt;
  std::vector<double> base, peak;
  for (const auto& k : kin) base.push_back(k.base), peak.push_back(k.peak);
  return ClockShape{stats::median(base), stats::median(peak)};
}

}  // namespace

double sustained_clock_fraction(const catalog::Gpu& gpu, double headroom, const ClockData& data) {
  const auto s = shape_of(gpu, data);
  if (!s) return 1.0;
  const double boost = gpu.boost_mhz, base = s->base * boost;
  const double rated = s->peak > 0 ? s->peak * boost : boost;
  return std::clamp((base + headroom * (boost - base)) / rated, 1e-3, 1.0);
}

double rated_clock_mhz(const catalog::Gpu& gpu, const ClockData& data) {
  const auto s = shape_of(gpu, data);
  return s && s->peak > 0 ? s->peak * gpu.boost_mhz : gpu.boost_mhz;
}

}  // namespace gpuvs::perf
