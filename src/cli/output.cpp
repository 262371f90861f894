// SPDX-License-Identifier: Apache-2.0
#include "cli/output.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <stdexcept>
#include <string_view>

#include "core/strings.hpp"

namespace gpuvs::cli {

void add_output_option(CLI::App* sub, Output& out) {
  sub->add_flag_callback("--json", [&out] { out = Output::json; }, "JSON output (the same as -o json)");
  sub->add_option_function<std::string>(
         "-o,--output",
         [&out](const std::string& v) {
           out = v == "json" ? Output::json : v == "csv" ? Output::csv : v == "md" ? Output::md : Output::table;
         },
         "table, json, csv or md")
      ->check(CLI::IsMember({"table", "json", "csv", "md"}));
}

namespace {

/// One cell from a value that is not an object: scalars as they are, arrays joined or as compact JSON.
nlohmann::json cell_of(const nlohmann::json& v) {
  if (!v.is_array()) return v;
  const bool scalars = std::all_of(v.begin(), v.end(), [](const nlohmann::json& e) { return e.is_primitive(); });
  if (!scalars) return v.dump();
  std::string joined;
  for (const auto& e : v) {
    if (!joined.empty()) joined += "; ";
    joined += e.is_string() ? e.get<std::string>() : e.dump();
  }
  return joined;
}

/// `v`'s fields flattened into (column, cell) pairs under `prefix`.
void flatten(const nlohmann::json& v, const std::string& prefix, std::vector<std::pair<std::string, nlohmann::json>>& out) {
  if (!v.is_object()) {
    out.emplace_back(prefix.empty() ? "value" : prefix, cell_of(v));
    return;
  }
  for (const auto& [k, x] : v.items()) flatten(x, prefix.empty() ? k : prefix + "." + k, out);
}

std::string text_of(const nlohmann::json& c) {
  if (c.is_null()) return "";
  if (c.is_string()) return c.get<std::string>();
  // A whole number held as a double (101258.0) reads as the count it is; others as JSON writes them.
  if (c.is_number_float()) {
    const double v = c.get<double>();
    if (std::isfinite(v) && v == std::floor(v) && std::fabs(v) < 1e15) return fmt::format("{:.0f}", v);
  }
  return c.dump();
}

/// The columns that say what a row is, first when present (JSON objects hold their keys sorted).
constexpr std::array<std::string_view, 6> kLeading = {"list", "id", "gpu", "workload", "figure", "key"};

}  // namespace

Records records_of(const nlohmann::json& doc, const std::vector<std::string>& row_lists) {
  std::vector<std::vector<std::pair<std::string, nlohmann::json>>> flat;
  if (row_lists.empty()) {
    if (doc.is_array())
      for (const auto& e : doc) flatten(e, "", flat.emplace_back());
    else
      flatten(doc, "", flat.emplace_back());
  } else {
    std::vector<std::pair<std::string, nlohmann::json>> context;
    if (doc.is_object())
      for (const auto& [k, x] : doc.items())
        if (!x.is_array() || std::all_of(x.begin(), x.end(), [](const nlohmann::json& e) { return e.is_primitive(); }))
          flatten(x, k, context);
    for (const auto& list : row_lists) {
      if (!doc.is_object() || !doc.contains(list) || !doc[list].is_array()) continue;
      for (const auto& e : doc[list]) {
        auto& row = flat.emplace_back();
        if (row_lists.size() > 1) row.emplace_back("list", list);
        flatten(e, "", row);
        row.insert(row.end(), context.begin(), context.end());
      }
    }
  }
  Records r;
  std::map<std::string, std::size_t> index;
  for (const auto lead : kLeading)
    for (const auto& row : flat)
      if (std::any_of(row.begin(), row.end(), [&](const auto& kv) { return kv.first == lead; }) &&
          index.emplace(std::string(lead), r.columns.size()).second)
        r.columns.emplace_back(lead);
  for (const auto& row : flat)
    for (const auto& [k, v] : row)
      if (index.emplace(k, r.columns.size()).second) r.columns.push_back(k);
  for (const auto& row : flat) {
    std::vector<nlohmann::json> cells(r.columns.size());
    for (const auto& [k, v] : row) cells[index.at(k)] = v;
    r.rows.push_back(std::move(cells));
  }
  return r;
}

std::string to_csv(const Records& r) {
  auto quote = [](const nlohmann::json& c) {
    std::string s = strings::escape_control(text_of(c));
    // A spreadsheet runs a text cell that starts like a formula; numbers (negative ones too) are left alone.
    if (c.is_string() && !s.empty() && std::string_view("=+-@\t\r").find(s.front()) != std::string_view::npos) s.insert(0, "'");
    if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
    std::string q = "\"";
    for (const char ch : s) q += ch == '"' ? std::string("\"\"") : std::string(1, ch);
    return q + "\"";
  };
  std::string out;
  auto line = [&](const auto& cells) {
    for (std::size_t i = 0; i < cells.size(); ++i) {
      if (i) out += ',';
      out.append(quote(cells[i]));
    }
    out += '\n';
  };
  line(r.columns);
  for (const auto& row : r.rows) line(row);
  return out;
}

std::string to_markdown(const Records& r) {
  auto cell = [](const nlohmann::json& c) {
    std::string s;
    for (const char ch : strings::escape_control(text_of(c))) s += ch == '|' ? std::string("\\|") : std::string(1, ch);
    return s;
  };
  std::string out;
  auto line = [&](const auto& cells) {
    out += '|';
    for (const auto& c : cells) {
      out += ' ';
      out.append(cell(c));
      out += " |";
    }
    out += '\n';
  };
  line(r.columns);
  out += '|';
  for (std::size_t i = 0; i < r.columns.size(); ++i) out += "---|";
  out += '\n';
  for (const auto& row : r.rows) line(row);
  return out;
}

namespace {
JsonCapture* g_capture = nullptr;
}  // namespace

JsonCapture::JsonCapture() {
  if (g_capture) throw std::logic_error("JsonCapture: one is already collecting");
  g_capture = this;
}

JsonCapture::~JsonCapture() { g_capture = nullptr; }

void print_json(const nlohmann::json& doc, int indent) {
  if (g_capture) g_capture->docs().push_back(doc);
  else fmt::print("{}\n", doc.dump(indent));
}

bool print_structured(const nlohmann::json& doc, Output out, const std::vector<std::string>& row_lists) {
  switch (out) {
    case Output::table: return false;
    case Output::json: print_json(doc); return true;
    case Output::csv: fmt::print("{}", to_csv(records_of(doc, row_lists))); return true;
    case Output::md: fmt::print("{}", to_markdown(records_of(doc, row_lists))); return true;
  }
  return false;
}

}  // namespace gpuvs::cli
