// SPDX-License-Identifier: Apache-2.0
#include "core/csv.hpp"

#include <fmt/format.h>

#include <charconv>
#include <cmath>

#include "core/error.hpp"
#include "core/strings.hpp"

namespace gpuvs::csv {

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

}  // namespace gpuvs::csv
