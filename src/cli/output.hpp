// SPDX-License-Identifier: Apache-2.0
// The output switch every command that prints results takes: -o/--output table|json|csv|md, and --json for
// -o json (as llama-bench and gpuvs bench spell it). One flag, one meaning everywhere. csv and md print the
// records the JSON holds, one row each: the same figures, never a second rendering of the text table.
#pragma once
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace gpuvs::cli {

enum class Output { table, json, csv, md };

/// Adds -o/--output and --json to `sub`, writing the choice to `out` (default table).
void add_output_option(CLI::App* sub, Output& out);

/// `doc` as rows, for csv and md. With `row_lists` empty, `doc` is one row (or, an array, one row per element);
/// otherwise each element of each named array in `doc` is a row, led by a `list` column naming its array when
/// there are several, and followed by `doc`'s other fields (scalars, objects and lists of scalars; not lists of records, which
/// are other tables): the context every row shares, such as the workload and precision. Nested objects become dotted columns
/// ("throughput.value"); arrays of scalars one cell joined by "; "; arrays of objects one cell of compact JSON.
/// Columns are the union of every row's, in first-seen order; a row without one leaves its cell empty.
struct Records {
  std::vector<std::string> columns;
  std::vector<std::vector<nlohmann::json>> rows;  // scalars only (null: empty)
};
Records records_of(const nlohmann::json& doc, const std::vector<std::string>& row_lists = {});

/// RFC 4180 CSV: a header line, then a line per row. Cells holding a comma, a quote or a line break are quoted
/// (quotes doubled); a text cell that a spreadsheet would run as a formula (leading =, +, -, @, tab or CR) is
/// prefixed with '. Control characters are written as \xNN. Numbers print as JSON writes them (shortest exact).
std::string to_csv(const Records& r);
/// A GitHub Markdown table, "|" in cells escaped, control characters written as \xNN.
std::string to_markdown(const Records& r);

/// Prints `doc` as JSON (indented by `indent`, -1 for one line) on stdout, or hands it to the JsonCapture alive
/// in this process. Every JSON document a command prints goes through here.
void print_json(const nlohmann::json& doc, int indent = 2);

/// While one is alive, the JSON documents print_json would print are collected here instead: how a program that
/// runs commands in its own process (cli/app.hpp's run_json) gets them. One at a time, on one thread.
class JsonCapture {
 public:
  JsonCapture();
  ~JsonCapture();
  JsonCapture(const JsonCapture&) = delete;
  JsonCapture& operator=(const JsonCapture&) = delete;
  std::vector<nlohmann::json>& docs() { return docs_; }

 private:
  std::vector<nlohmann::json> docs_;
};

/// Prints `doc` as `out` asks (JSON indented, csv or md through records_of with `row_lists`) and returns true;
/// returns false for table, which the command prints its own way.
bool print_structured(const nlohmann::json& doc, Output out, const std::vector<std::string>& row_lists = {});

}  // namespace gpuvs::cli
