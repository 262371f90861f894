// SPDX-License-Identifier: Apache-2.0
#include "measured/nccl_tests.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <map>
#include <set>
#include <sstream>

#include "core/error.hpp"
#include "core/strings.hpp"

namespace gpuvs::measured {

namespace {

std::vector<std::string> tokens(const std::string& line) {
  std::vector<std::string> out;
  std::istringstream in(line);
  for (std::string t; in >> t;) out.push_back(t);
  return out;
}

bool all_digits(const std::string& s) { return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; }); }

double number(const std::string& s, const char* what, const std::string& at) {
  double v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || !std::isfinite(v) || v < 0)
    throw InputError(fmt::format("{}: {} '{}' is not a non-negative number", at, what, strings::printable(s)));
  return v;
}

// nccl-tests' program name ("all_reduce_perf") as gpuvs's collective ("allreduce").
std::string collective_of(std::string program) {
  if (program.size() > 5 && program.compare(program.size() - 5, 5, "_perf") == 0) program.resize(program.size() - 5);
  program.erase(std::remove(program.begin(), program.end(), '_'), program.end());
  return program;
}

// NCCL_VERSION_CODE (major x 10000 + minor x 100 + patch since 2.9; major x 1000 + minor x 100 + patch before) as text.
std::string version_of(const std::string& code) {
  if (!all_digits(code) || code.size() > 9) return "";
  const long v = std::stol(code);
  if (v >= 20900) return fmt::format("{}.{}.{}", v / 10000, v / 100 % 100, v % 100);
  return fmt::format("{}.{}.{}", v / 1000, v / 100 % 10, v % 100);
}

std::string precision_of(const std::string& type) {
  static const std::map<std::string, std::string> names = {{"float", "fp32"},  {"half", "fp16"},   {"bfloat16", "bf16"},
                                                           {"double", "fp64"}, {"int8", "int8"},   {"uint8", "uint8"},
                                                           {"int32", "int32"}, {"uint32", "uint32"}, {"int64", "int64"},
                                                           {"uint64", "uint64"}, {"fp8_e4m3", "fp8"}, {"fp8_e5m2", "fp8-e5m2"}};
  const auto it = names.find(type);
  return it == names.end() ? type : it->second;
}

struct Section {
  std::string collective;  // named by the header, or empty
  std::vector<std::string> columns;
  std::size_t size_col = 0, type_col = 0, redop_col = 0, time_col = 0, algbw_col = 0, busbw_col = 0, wrong_col = 0;
  bool has_redop = false, has_wrong = false;
  std::string redop;  // the rows' reduction ("sum", "none"), where the header has the column: tells an unnamed collective
  std::vector<std::string> devices, hosts;
  std::vector<Measurement> rows;
  std::vector<std::pair<double, double>> factors;  // (algbw, busbw) per row, for telling an unnamed collective
  int first_row_line = 0;
};

// Fills in the collective of a section that did not name it, from its bus factor; InputError where it cannot.
void settle_collective(Section& s, const std::string& where) {
  if (s.rows.empty()) return;
  std::string name = s.collective;
  if (name.empty()) {
    const auto best = std::max_element(s.factors.begin(), s.factors.end());
    const double n = static_cast<double>(s.devices.size());
    const std::string at = fmt::format("{}:{}", where, s.first_row_line);
    if (best == s.factors.end() || best->first <= 0 || n < 2)
      throw InputError(fmt::format("{}: the output does not name its collective (nccl-tests before 2.13 print none) and its figures "
                                   "cannot tell it",
                                   at));
    const double factor = best->second / best->first;
    auto near = [&](double want) { return std::fabs(factor / want - 1.0) < 0.03; };
    if (near(2.0 * (n - 1) / n)) {
      name = "allreduce";
    } else if (near((n - 1) / n) && s.redop != "none" && !s.redop.empty()) {
      name = "reducescatter";
    } else {
      throw InputError(fmt::format("{}: the output does not name its collective (nccl-tests before 2.13 print none), and a bus factor of "
                                   "{:.3f} over {} ranks {}",
                                   at, factor, s.devices.size(),
                                   near((n - 1) / n) ? "is an all-gather's or an all-to-all's" : "matches none gpuvs tells apart"));
    }
  }
  for (auto& m : s.rows) m.workload = name;
}

}  // namespace

bool looks_like_nccl_tests(const std::string& text) {
  std::istringstream in(text.substr(0, 4096));
  int seen = 0;
  for (std::string line; std::getline(in, line) && seen < 40; ++seen)
    if (line.rfind("# nThread ", 0) == 0 || line.rfind("# nccl-tests version", 0) == 0 || line.rfind("# rccl-tests version", 0) == 0 ||
        line.rfind("# Collective test starting:", 0) == 0)
      return true;
  return false;
}

std::vector<Measurement> read_nccl_tests(const std::string& text, const std::string& where) {
  std::vector<Measurement> out;
  Section s;
  std::string version;
  bool in_devices = false;
  auto close = [&] {
    settle_collective(s, where);
    for (auto& m : s.rows) out.push_back(std::move(m));
    s = Section();
  };
  std::istringstream in(text);
  int n = 0;
  for (std::string line; std::getline(in, line);) {
    ++n;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    const std::string at = fmt::format("{}:{}", where, n);
    if (strings::has_control(line)) throw InputError(fmt::format("{}: a control character in the output", at));
    if (line.rfind("#", 0) == 0) {
      const std::vector<std::string> t = tokens(line.substr(1));
      if (t.empty()) continue;
      if (line.rfind("# nccl-tests version", 0) == 0 || line.rfind("# rccl-tests version", 0) == 0) {
        for (const auto& word : t)
          if (word.rfind("nccl-library=", 0) == 0) version = version_of(word.substr(13));
      } else if (line.rfind("# Collective test starting:", 0) == 0) {
        if (!s.rows.empty() || !s.columns.empty()) close();
        s.collective = t.size() >= 4 ? collective_of(t[3]) : "";
      } else if (line.rfind("# Collective test concluded", 0) == 0) {
        close();
      } else if (t.size() >= 2 && t[0] == "Using" && t[1] == "devices") {
        if (!s.rows.empty()) close();
        in_devices = true;
        s.devices.clear();
        s.hosts.clear();
      } else if (in_devices && t[0] == "Rank") {
        const auto on = std::find(t.begin(), t.end(), "on");
        const std::size_t bracket = line.find("] ");
        if (on == t.end() || on + 1 == t.end() || bracket == std::string::npos)
          throw InputError(fmt::format("{}: a device line without its host or name", at));
        s.hosts.push_back(*(on + 1));
        std::string name = line.substr(bracket + 2);
        while (!name.empty() && name.back() == ' ') name.pop_back();
        s.devices.push_back(name);
      } else if (std::find(t.begin(), t.end(), "size") != t.end() && std::find(t.begin(), t.end(), "busbw") != t.end()) {
        in_devices = false;
        if (!s.rows.empty()) close();
        s.columns = t;
        auto first = [&](std::initializer_list<const char*> names, std::size_t& col) {
          for (std::size_t i = 0; i < t.size(); ++i)
            for (const char* name : names)
              if (t[i] == name) {
                col = i;
                return true;
              }
          return false;
        };
        std::size_t dummy = 0;
        if (!first({"size"}, s.size_col) || !first({"time"}, s.time_col) || !first({"algbw"}, s.algbw_col) || !first({"busbw"}, s.busbw_col) ||
            !first({"type"}, s.type_col) || !first({"count"}, dummy))
          throw InputError(fmt::format("{}: a column header without size, count, type, time, algbw and busbw", at));
        s.has_redop = first({"redop"}, s.redop_col);
        s.has_wrong = first({"#wrong", "error"}, s.wrong_col);
      }
      continue;
    }
    const std::vector<std::string> t = tokens(line);
    if (t.empty() || !all_digits(t[0])) continue;  // NCCL's own log lines (NCCL_DEBUG=INFO), MPI's, the shell's
    if (s.columns.empty()) throw InputError(fmt::format("{}: a figure before the column header", at));
    if (t.size() != s.columns.size())
      throw InputError(fmt::format("{}: {} fields, the header has {}", at, t.size(), s.columns.size()));
    if (s.devices.empty()) throw InputError(fmt::format("{}: no device list (\"# Using devices\") before the figures", at));
    Measurement m;
    m.tool = "nccl-tests";
    m.where = at;
    m.mode = "micro";
    m.unit = "GB/s busbw";
    m.message_bytes = number(t[s.size_col], "size", at);
    m.precision = precision_of(t[s.type_col]);
    (void)number(t[s.time_col], "time", at);  // checked as a figure; the bandwidths are what is used
    const double algbw = number(t[s.algbw_col], "algbw", at);
    m.value = number(t[s.busbw_col], "busbw", at);
    if (s.has_wrong && t[s.wrong_col] != "N/A") {
      const double wrong = number(t[s.wrong_col], s.columns[s.wrong_col] == "error" ? "error" : "#wrong", at);
      if (s.columns[s.wrong_col] == "#wrong" && wrong > 0)
        throw InputError(fmt::format("{}: {} wrong values: nccl-tests' own check failed, so its figures are not a measurement", at, t[s.wrong_col]));
    }
    m.gpus = static_cast<int>(s.devices.size());
    std::vector<std::string> names = s.devices;
    std::sort(names.begin(), names.end());
    names.erase(std::unique(names.begin(), names.end()), names.end());
    m.gpu = strings::join(names, ", ");
    m.nodes = static_cast<int>(std::set<std::string>(s.hosts.begin(), s.hosts.end()).size());
    m.library_version = version;
    m.framework = "nccl";
    m.backend = "NCCL";
    if (s.has_redop) s.redop = t[s.redop_col];
    if (s.rows.empty()) s.first_row_line = n;
    s.factors.emplace_back(algbw, m.value);
    // Below print resolution (0.00 GB/s at a few bytes) a row carries no bandwidth: it stays out.
    if (m.value > 0) s.rows.push_back(std::move(m));
  }
  close();
  if (out.empty()) throw InputError(fmt::format("{}: no nccl-tests figures (a size row with a bus bandwidth above 0)", where));
  return out;
}

}  // namespace gpuvs::measured
