#include "perf/validation.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <map>

#include "core/error.hpp"
#include "core/stats.hpp"
#include "core/strings.hpp"
#include "perf/predict.hpp"

namespace gpuvs::perf {

namespace {

// One CSV record (RFC 4180 quoting); returns false at the end of the text.
bool next_record(const std::string& t, std::size_t& pos, int& line, std::vector<std::string>& cells, int& start_line,
                 const std::string& where) {
  cells.clear();
  if (pos >= t.size()) return false;
  start_line = line;
  std::string cell;
  bool quoted = false;
  while (pos < t.size()) {
    const char c = t[pos++];
    if (quoted) {
      if (c == '"') {
        if (pos < t.size() && t[pos] == '"') {
          cell += '"';
          ++pos;
        } else {
          quoted = false;
        }
      } else {
        if (c == '\n') ++line;
        cell += c;
      }
    } else if (c == '"' && cell.empty()) {
      quoted = true;
    } else if (c == ',') {
      cells.push_back(cell);
      cell.clear();
    } else if (c == '\n') {
      ++line;
      break;
    } else if (c != '\r') {
      cell += c;
    }
  }
  if (quoted) throw InputError(fmt::format("{}:{}: unterminated quoted field", where, start_line));
  cells.push_back(cell);
  return true;
}

double to_number(const std::string& s, const std::string& what, const std::string& where, int line) {
  double v = 0;
  const auto r = std::from_chars(s.data(), s.data() + s.size(), v);
  if (r.ec != std::errc() || r.ptr != s.data() + s.size() || !std::isfinite(v))
    throw InputError(fmt::format("{}:{}: {} '{}' is not a number", where, line, what, strings::printable(s)));
  return v;
}

std::string per_second_unit(const std::string& u) { return u; }

}  // namespace

std::vector<PublishedRow> read_published(const std::string& text, const std::string& where) {
  std::size_t pos = 0;
  int line = 1, start = 1;
  std::vector<std::string> header, cells;
  if (!next_record(text, pos, line, header, start, where)) throw InputError(fmt::format("{}: empty file", where));
  std::map<std::string, std::size_t> col;
  for (std::size_t i = 0; i < header.size(); ++i) col[strings::lower(header[i])] = i;
  for (const char* need : {"id", "gpu", "workload", "mode", "precision", "batch_per_gpu"})
    if (!col.count(need)) throw InputError(fmt::format("{}:1: missing column '{}'", where, need));
  std::vector<PublishedRow> rows;
  while (next_record(text, pos, line, cells, start, where)) {
    if (cells.size() == 1 && cells[0].empty()) continue;  // blank line
    if (cells.size() < header.size())
      throw InputError(fmt::format("{}:{}: {} fields, the header has {}", where, start, cells.size(), header.size()));
    auto get = [&](const char* name) -> std::string {
      auto it = col.find(name);
      return it == col.end() ? std::string() : cells[it->second];
    };
    PublishedRow r;
    r.line = start;
    r.id = get("id");
    r.gpu = get("gpu");
    r.workload = get("workload");
    r.mode = get("mode");
    r.precision = get("precision");
    r.options = get("options");
    r.unit = get("unit");
    r.source = get("source");
    const std::string n = get("n_gpus");
    r.n_gpus = n.empty() ? 1 : static_cast<int>(to_number(n, "n_gpus", where, start));
    r.batch = static_cast<std::int64_t>(to_number(get("batch_per_gpu"), "batch_per_gpu", where, start));
    const std::string v = get("value");
    if (!v.empty()) r.value = to_number(v, "value", where, start);
    if (r.id.empty()) throw InputError(fmt::format("{}:{}: empty id", where, start));
    rows.push_back(std::move(r));
  }
  return rows;
}

ValidationReport validate(const catalog::Catalog& cat, const std::vector<PublishedRow>& rows) {
  ValidationReport rep;
  for (const auto& r : rows) {
    ValidatedRow v;
    v.row = r;
    try {
      PredictRequest req;
      req.workload = r.workload;
      req.gpu = r.gpu;
      req.gpus = r.n_gpus;
      req.batch = r.batch;
      req.precision = parse_precision(r.precision);
      if (r.mode != "train" && r.mode != "infer")
        throw InputError(fmt::format("mode '{}' is not train or infer", strings::printable(r.mode)));
      req.training = r.mode == "train";
      req.options = parse_options(r.options);
      const Prediction p = predict(cat, req);
      v.status = "ok";
      v.predicted = p.throughput;
      v.predicted_unit = p.unit;
      if (!r.unit.empty() && per_second_unit(r.unit) != p.unit) {
        v.status = "unsupported";
        v.reason = fmt::format("row unit {} differs from the prediction's {}", r.unit, p.unit);
      } else if (r.value && *r.value > 0) {
        v.ape = std::fabs(p.throughput - *r.value) / *r.value;
      }
    } catch (const InputError& e) {
      v.status = "unsupported";
      v.reason = e.what();
    }
    rep.rows.push_back(std::move(v));
  }
  std::vector<double> apes, logs;
  for (const auto& v : rep.rows)
    if (v.ape) {
      apes.push_back(*v.ape);
      logs.push_back(std::log(v.predicted / *v.row.value));
    }
  const auto s = stats::summarize(apes);
  rep.median_ape = s.median;
  rep.mean_ape = s.mean;
  rep.log_err_p10 = stats::quantile(logs, 0.1);
  rep.log_err_p90 = stats::quantile(logs, 0.9);
  // Cross-GPU ratios: rows of the same workload, precision, mode and source on different GPUs.
  std::vector<double> ratio_apes;
  for (std::size_t i = 0; i < rep.rows.size(); ++i)
    for (std::size_t j = i + 1; j < rep.rows.size(); ++j) {
      const auto& a = rep.rows[i];
      const auto& b = rep.rows[j];
      if (!a.ape || !b.ape) continue;
      if (a.row.workload != b.row.workload || a.row.precision != b.row.precision || a.row.mode != b.row.mode ||
          a.row.source != b.row.source || a.row.options != b.row.options || a.row.gpu == b.row.gpu)
        continue;
      RatioError e;
      e.a = a.row.id;
      e.b = b.row.id;
      e.measured = *a.row.value / *b.row.value;
      e.predicted = a.predicted / b.predicted;
      e.ape = std::fabs(e.predicted / e.measured - 1.0);
      ratio_apes.push_back(e.ape);
      rep.ratios.push_back(e);
    }
  const auto rs = stats::summarize(ratio_apes);
  rep.ratio_median_ape = rs.median;
  rep.ratio_mean_ape = rs.mean;
  return rep;
}

}  // namespace gpuvs::perf
