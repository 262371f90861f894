// SPDX-License-Identifier: Apache-2.0
#include "measured/nvbandwidth.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <sstream>

#include "core/error.hpp"
#include "core/strings.hpp"
#include "measured/fields.hpp"

namespace gpuvs::measured {

namespace {

using fields::trim;

// gpuvs's name for what a testcase measures, and the GPUs one figure spans; empty for a testcase it has no figure of.
std::pair<std::string, int> priced(const std::string& testcase) {
  if (testcase == "host_to_device_memcpy_ce") return {"h2d", 1};
  if (testcase == "device_to_host_memcpy_ce") return {"d2h", 1};
  if (testcase == "device_to_device_memcpy_read_ce" || testcase == "device_to_device_memcpy_write_ce") return {"p2p-copy", 2};
  return {"", 0};
}

std::vector<std::string> words(const std::string& line) {
  std::istringstream in(line);
  std::vector<std::string> out;
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

bool whole(const std::string& w) { return !w.empty() && w.size() <= 6 && std::all_of(w.begin(), w.end(), [](char c) { return c >= '0' && c <= '9'; }); }

}  // namespace

bool looks_like_nvbandwidth(const std::string& text) {
  if (text.find("nvbandwidth Version:") != std::string::npos) return true;
  const std::size_t run = text.find("Running ");
  return run != std::string::npos && text.find("bandwidth (GB/s)", run) != std::string::npos && text.find("_memcpy_", run) != std::string::npos;
}

std::vector<Measurement> read_nvbandwidth(const std::string& text, const std::string& where) {
  std::vector<Measurement> out;
  std::vector<std::string> devices;
  std::string version;
  std::istringstream in(text);
  int line_no = 0;
  // The testcase being read: its name, the line it started on, whether its description says GB/s, its figures.
  std::string testcase;
  int started = 0;
  bool in_gbs = false, header_seen = false;
  std::vector<double> figures;
  std::vector<int> columns;  // the matrix's column labels
  const auto finish = [&] {
    if (testcase.empty()) return;
    const auto [workload, gpus] = priced(testcase);
    // A testcase the machine cannot run (waived: one GPU, no peer access) prints no matrix, or one of N/A only.
    if (!workload.empty() && in_gbs && !figures.empty()) {
      std::vector<double> f = figures;
      std::sort(f.begin(), f.end());
      const std::size_t h = f.size() / 2;
      const double median = f.size() % 2 ? f[h] : (f[h - 1] + f[h]) / 2;
      Measurement m;
      m.tool = "nvbandwidth";
      m.where = fmt::format("{}:{}", where, started);
      m.mode = "micro";
      m.workload = workload;
      m.metric = strings::printable(testcase);
      m.gpus = gpus;
      m.value = median;
      m.unit = "GB/s";
      m.samples = figures;
      out.push_back(std::move(m));
    }
    testcase.clear();
    figures.clear();
    in_gbs = header_seen = false;
  };
  for (std::string raw; std::getline(in, raw);) {
    ++line_no;
    const std::string line = trim(raw);
    const auto at = [&] { return fmt::format("{}:{}", where, line_no); };
    if (line.rfind("nvbandwidth Version:", 0) == 0) {
      version = trim(line.substr(20));
      continue;
    }
    if (line.rfind("Device ", 0) == 0 && line.find(": ") != std::string::npos && testcase.empty()) {
      std::string name = trim(line.substr(line.find(": ") + 2));
      if (const std::size_t bus = name.rfind(" ("); bus != std::string::npos && name.back() == ')') name = trim(name.substr(0, bus));
      if (!name.empty() && std::find(devices.begin(), devices.end(), name) == devices.end()) devices.push_back(name);
      continue;
    }
    if (line.rfind("Running ", 0) == 0 && line.size() > 9 && line.back() == '.') {
      finish();
      testcase = line.substr(8, line.size() - 9);
      started = line_no;
      continue;
    }
    if (testcase.empty()) continue;
    if (line.empty() || line.rfind("Waived", 0) == 0 || line.rfind("NOTE", 0) == 0 || line.rfind("Performance can vary", 0) == 0) continue;
    if (line.rfind("SUM ", 0) == 0 || line.rfind("COEFFICIENT_OF_VARIATION ", 0) == 0) {
      if (line.rfind("SUM ", 0) == 0) finish();
      continue;
    }
    if (!in_gbs && line.find("(GB/s)") != std::string::npos) {
      in_gbs = true;
      continue;
    }
    if (!in_gbs) continue;  // a latency testcase's "(ns)", or lines this reader does not know before a description
    const std::vector<std::string> w = words(line);
    const std::string name = strings::printable(testcase);
    if (!header_seen) {  // the column indices
      if (w.empty() || !std::all_of(w.begin(), w.end(), whole))
        throw InputError(fmt::format("{}: {}'s column indices '{}' are not whole numbers", at(), name, strings::printable(line)));
      columns.clear();
      for (const auto& c : w) columns.push_back(std::stoi(c));
      header_seen = true;
      continue;
    }
    if (w.size() < 2 || !whole(w[0]) || w.size() - 1 > columns.size())
      throw InputError(fmt::format("{}: {}'s row '{}' is not a row index and at most {} figures", at(), name, strings::printable(line), columns.size()));
    const int row = std::stoi(w[0]);
    for (std::size_t i = 1; i < w.size(); ++i) {
      if (w[i] == "N/A") continue;
      const auto v = fields::number(w[i]);
      // Releases before v0.5 print a GPU's copy to itself as 0.00 in the device-to-device matrices: not a measurement.
      if (v && *v == 0 && priced(testcase).second == 2 && columns[i - 1] == row) continue;
      if (!v || !(*v > 0) || *v > 1e6)
        throw InputError(fmt::format("{}: {}'s figure '{}' is not a positive bandwidth (GB/s)", at(), name, strings::printable(w[i])));
      figures.push_back(*v);
    }
  }
  finish();
  if (out.empty())
    throw InputError(fmt::format("{}: no testcase gpuvs prices (host_to_device_memcpy_ce, device_to_host_memcpy_ce, "
                                 "device_to_device_memcpy_read_ce or _write_ce)",
                                 where));
  const std::string gpu = strings::join(devices, ", ");
  for (auto& m : out) {
    m.gpu = gpu;
    m.library_version = version;
  }
  return out;
}

}  // namespace gpuvs::measured
