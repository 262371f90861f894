// SPDX-License-Identifier: Apache-2.0
#include "perf/sequence_lengths.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "core/error.hpp"
#include "core/strings.hpp"
#include "core/toml_input.hpp"

namespace gpuvs::embedded {
extern const char* const kSequenceLengths;
}

namespace gpuvs::perf {

namespace {

// Longer than any sequence the model builders accept (models::kMaxSeqLen) would be no histogram of a real data set.
constexpr std::int64_t kMaxHistogramLen = 1 << 20;

}  // namespace

std::int64_t LengthHistogram::samples() const {
  std::int64_t n = 0;
  for (const auto c : counts) n += c;
  return n;
}

double LengthHistogram::mean_len() const {
  double tokens = 0;
  for (std::size_t i = 0; i < counts.size(); ++i) tokens += static_cast<double>(counts[i]) * static_cast<double>(i + 1);
  return tokens / static_cast<double>(samples());
}

std::vector<LengthHistogram> parse_length_histograms(const std::string& text, const std::string& where) {
  const toml::table t = parse_toml(text, where);
  for (const auto& [k, v] : t)
    if (k.str() != "lengths") throw InputError(fmt::format("{}: unknown table '{}' (expected [[lengths]])", where, strings::printable(k.str())));
  const auto* arr = t["lengths"].as_array();
  if (!arr) throw InputError(fmt::format("{}: no [[lengths]] tables", where));
  std::vector<LengthHistogram> out;
  for (const auto& node : *arr) {
    const int line = static_cast<int>(node.source().begin.line);
    const auto* e = node.as_table();
    if (!e) throw InputError(fmt::format("{}:{}: [[lengths]] must be a table", where, line));
    LengthHistogram h;
    h.line = line;
    for (const auto& [k, v] : *e) {
      const std::string key(k.str());
      if (key == "id" || key == "name" || key == "source") {
        const auto s = v.value<std::string>();
        if (!s || s->empty()) throw InputError(fmt::format("{}:{}: {} must be a non-empty string", where, line, key));
        (key == "id" ? h.id : key == "name" ? h.name : h.source) = *s;
      } else if (key == "max_len") {
        const auto n = v.as_integer();
        if (!n || n->get() < 1 || n->get() > kMaxHistogramLen)
          throw InputError(fmt::format("{}:{}: max_len must be a whole number in [1, {}]", where, line, kMaxHistogramLen));
        h.max_len = n->get();
      } else if (key == "counts") {
        const auto* list = v.as_array();
        if (!list) throw InputError(fmt::format("{}:{}: counts must be a list of whole numbers", where, line));
        if (static_cast<std::int64_t>(list->size()) > kMaxHistogramLen)
          throw InputError(fmt::format("{}:{}: counts holds {} entries, more than {}", where, line, list->size(), kMaxHistogramLen));
        for (const auto& item : *list) {
          const auto* c = item.as_integer();
          if (!c || c->get() < 0) throw InputError(fmt::format("{}:{}: counts must be whole numbers of samples, none negative", where, line));
          h.counts.push_back(c->get());
        }
      } else {
        throw InputError(fmt::format("{}:{}: unknown key '{}' (expected id, name, max_len, counts, source)", where, line, strings::printable(key)));
      }
    }
    if (h.id.empty() || h.name.empty() || h.source.empty() || h.max_len == 0 || h.counts.empty())
      throw InputError(fmt::format("{}:{}: [[lengths]] needs id, name, max_len, counts and source", where, line));
    if (static_cast<std::int64_t>(h.counts.size()) != h.max_len)
      throw InputError(fmt::format("{}:{}: counts holds {} entries; max_len {} needs one per length 1..{}", where, line, h.counts.size(), h.max_len,
                                   h.max_len));
    // Integer overflow of the total: counts are data sets' sample counts, far below 2^63 / 2^20 each.
    for (const auto c : h.counts)
      if (c > (std::int64_t{1} << 42)) throw InputError(fmt::format("{}:{}: a count above 2^42 samples is no data set", where, line));
    if (h.samples() == 0) throw InputError(fmt::format("{}:{}: counts hold no sample", where, line));
    for (const auto& other : out)
      if (other.id == h.id) throw InputError(fmt::format("{}:{}: id '{}' is listed twice (line {})", where, line, strings::printable(h.id), other.line));
    out.push_back(std::move(h));
  }
  return out;
}

const std::vector<LengthHistogram>& length_histograms() {
  static const std::vector<LengthHistogram> table = parse_length_histograms(embedded::kSequenceLengths, "built-in data/sequence-lengths.toml");
  return table;
}

const LengthHistogram& length_histogram(const std::string& id) {
  std::vector<std::string> known;
  for (const auto& h : length_histograms()) {
    if (h.id == id) return h;
    known.push_back(h.id);
  }
  throw InputError(fmt::format("option lengths: unknown data set '{}' (known: {})", strings::printable(id), strings::join(known, ", ")));
}

std::vector<PaddedBin> padded_bins(const LengthHistogram& h, std::int64_t bin_size, std::int64_t batch, std::int64_t multiple) {
  if (bin_size < 1 || batch < 1 || multiple < 1) throw std::invalid_argument("padded_bins: bin_size, batch and multiple must be at least 1");
  const double total = static_cast<double>(h.samples());
  std::vector<PaddedBin> out;
  for (std::int64_t lo = 1; lo <= h.max_len; lo += bin_size) {
    const std::int64_t hi = std::min(h.max_len, lo + bin_size - 1);
    double in_bin = 0;
    for (std::int64_t l = lo; l <= hi; ++l) in_bin += static_cast<double>(h.counts[static_cast<std::size_t>(l - 1)]);
    if (in_bin == 0) continue;
    // The longest of `batch` samples drawn from the bin is at most l with probability F(l)^batch (F: the bin's CDF).
    double below = 0, p_prev = 0, expected = 0;
    for (std::int64_t l = lo; l <= hi; ++l) {
      below += static_cast<double>(h.counts[static_cast<std::size_t>(l - 1)]);
      const double p = std::pow(below / in_bin, static_cast<double>(batch));
      const std::int64_t padded = std::min(h.max_len, (l + multiple - 1) / multiple * multiple);
      expected += (p - p_prev) * static_cast<double>(padded);
      p_prev = p;
    }
    out.push_back({lo, hi, in_bin / total, expected});
  }
  return out;
}

}  // namespace gpuvs::perf
