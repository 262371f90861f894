// SPDX-License-Identifier: Apache-2.0
#include "perf/maturity.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "core/error.hpp"
#include "core/strings.hpp"
#include "core/toml_input.hpp"

namespace gpuvs::embedded {
extern const char* const kSoftwareMaturity;
}

namespace gpuvs::perf {

int parse_month(std::string_view text, std::string_view what) {
  const auto bad = [&] { return InputError(fmt::format("{} must be a month as YYYY-MM, got '{}'", what, strings::printable(std::string(text)))); };
  if (text.size() != 7 || text[4] != '-') throw bad();
  for (std::size_t i : {0u, 1u, 2u, 3u, 5u, 6u})
    if (text[i] < '0' || text[i] > '9') throw bad();
  const int year = std::stoi(std::string(text.substr(0, 4)));
  const int month = std::stoi(std::string(text.substr(5, 2)));
  if (year < 1990 || year > 2100 || month < 1 || month > 12) throw bad();
  return year * 12 + month - 1;
}

std::string month_text(int month) { return fmt::format("{:04d}-{:02d}", month / 12, month % 12 + 1); }

int release_of(const std::map<std::string, std::string>& options, int profile_released) {
  const auto it = options.find("release");
  return it == options.end() ? profile_released : parse_month(it->second, "option release");
}

std::vector<KernelMaturity> parse_kernel_maturity(const std::string& text, const std::string& where) {
  const toml::table t = parse_toml(text, where);
  for (const auto& [k, v] : t)
    if (k.str() != "kernels") throw InputError(fmt::format("{}: unknown table '{}' (expected [[kernels]])", where, strings::printable(k.str())));
  const auto* arr = t["kernels"].as_array();
  if (!arr) throw InputError(fmt::format("{}: no [[kernels]] tables", where));
  std::vector<KernelMaturity> out;
  for (const auto& node : *arr) {
    const int line = static_cast<int>(node.source().begin.line);
    const auto* e = node.as_table();
    if (!e) throw InputError(fmt::format("{}:{}: [[kernels]] must be a table", where, line));
    KernelMaturity m;
    m.line = line;
    bool have_share = false, have_since = false;
    for (const auto& [k, v] : *e) {
      const std::string key(k.str());
      const auto str = v.value<std::string>();
      if (key == "kernels" || key == "architecture" || key == "native_release" || key == "source") {
        if (!str || str->empty()) throw InputError(fmt::format("{}:{}: {} must be a non-empty string", where, line, key));
        (key == "kernels" ? m.kernels : key == "architecture" ? m.architecture : key == "native_release" ? m.native_release : m.source) = *str;
      } else if (key == "native_since") {
        if (!str) throw InputError(fmt::format("{}:{}: native_since must be a month as YYYY-MM", where, line));
        try {
          m.native_since = parse_month(*str, "native_since");
        } catch (const InputError& bad) {
          throw InputError(fmt::format("{}:{}: {}", where, line, bad.what()));
        }
        have_since = true;
      } else if (key == "share_before") {
        const auto d = v.value<double>();
        if (!d || !std::isfinite(*d) || *d <= 0 || *d > 1) throw InputError(fmt::format("{}:{}: share_before must be a number in (0, 1]", where, line));
        m.share_before = *d;
        have_share = true;
      } else if (key == "compute_capabilities") {
        const auto* list = v.as_array();
        if (!list || list->empty()) throw InputError(fmt::format("{}:{}: compute_capabilities must be a list of strings", where, line));
        for (const auto& item : *list) {
          const auto cc = item.value<std::string>();
          if (!cc || cc->empty()) throw InputError(fmt::format("{}:{}: compute_capabilities must be a list of strings", where, line));
          m.compute_capabilities.push_back(*cc);
        }
      } else {
        throw InputError(fmt::format("{}:{}: unknown key '{}' (expected kernels, architecture, compute_capabilities, native_since, native_release, "
                                     "share_before, source)",
                                     where, line, strings::printable(key)));
      }
    }
    if (m.kernels != "matrix" && m.kernels != "attention")
      throw InputError(fmt::format("{}:{}: kernels must be matrix or attention", where, line));
    if (m.architecture.empty() || m.compute_capabilities.empty() || !have_since || !have_share || m.native_release.empty() || m.source.empty())
      throw InputError(fmt::format("{}:{}: [[kernels]] needs kernels, architecture, compute_capabilities, native_since, native_release, share_before "
                                   "and source",
                                   where, line));
    for (const auto& other : out)
      for (const auto& cc : m.compute_capabilities)
        if (other.kernels == m.kernels && std::count(other.compute_capabilities.begin(), other.compute_capabilities.end(), cc))
          throw InputError(fmt::format("{}:{}: {} kernels on compute capability {} are listed twice (line {})", where, line, m.kernels, cc, other.line));
    out.push_back(std::move(m));
  }
  return out;
}

const std::vector<KernelMaturity>& kernel_maturity() {
  static const std::vector<KernelMaturity> table = parse_kernel_maturity(embedded::kSoftwareMaturity, "built-in data/software-maturity.toml");
  return table;
}

MaturityEffect maturity_effect(const catalog::Gpu& gpu, const std::string& stack, int released, bool fused_attention) {
  MaturityEffect out;
  if (released <= 0) return out;
  for (const auto& m : kernel_maturity()) {
    const auto& ccs = m.compute_capabilities;
    if (std::find(ccs.begin(), ccs.end(), gpu.compute_capability) == ccs.end() || released >= m.native_since) continue;
    if (m.kernels == "attention" && !fused_attention) continue;  // explicit attention is matrix work
    (m.kernels == "matrix" ? out.matrix_share : out.attention_share) = m.share_before;
    out.notes.push_back(fmt::format("{} ({}) predates {}'s native {} kernels ({}: {}), priced at {:g} of a native stack's", stack,
                                    month_text(released), m.architecture, m.kernels, month_text(m.native_since), m.native_release,
                                    m.share_before));
  }
  return out;
}

void apply_maturity(EfficiencyParams& eff, const MaturityEffect& m) {
  eff.gemm_max *= m.matrix_share;
  eff.conv_max *= m.matrix_share;
  eff.attention_max *= m.attention_share;
}

}  // namespace gpuvs::perf
