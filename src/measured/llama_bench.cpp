// SPDX-License-Identifier: Apache-2.0
#include "measured/llama_bench.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <map>

#include "core/csv.hpp"
#include "core/error.hpp"
#include "core/json_input.hpp"
#include "core/strings.hpp"

namespace gpuvs::measured {

namespace {

constexpr const char* kTool = "llama-bench";
// More results than any sweep prints: a file past it is not one run's output.
constexpr std::size_t kMaxRows = 1'000'000;

// One result as its fields' text, whatever the format: csv and sql print every value as text, json's are
// turned into text here so one function reads them all.
using Record = std::map<std::string, std::string>;

std::string trim(std::string_view s) {
  std::size_t a = 0, b = s.size();
  while (a < b && (s[a] == ' ' || s[a] == '\t' || s[a] == '\r' || s[a] == '\n')) ++a;
  while (b > a && (s[b - 1] == ' ' || s[b - 1] == '\t' || s[b - 1] == '\r' || s[b - 1] == '\n')) --b;
  return std::string(s.substr(a, b - a));
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> parts;
  std::size_t start = 0;
  while (true) {
    const std::size_t end = s.find(sep, start);
    parts.push_back(s.substr(start, end == std::string::npos ? std::string::npos : end - start));
    if (end == std::string::npos) return parts;
    start = end + 1;
  }
}

std::string at(const std::string& where, int line) { return fmt::format("{}:{}", where, line); }

[[noreturn]] void refuse(const std::string& place, const std::string& what) { throw InputError(fmt::format("{}: {}", place, what)); }

double number(const std::string& text, const char* field, const std::string& place) {
  const std::string s = trim(text);
  double v = 0;
  const auto r = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || r.ec != std::errc() || r.ptr != s.data() + s.size() || !std::isfinite(v))
    refuse(place, fmt::format("{} '{}' is not a number", field, strings::printable(s)));
  return v;
}

// A count llama-bench prints (tokens, layers, threads): a whole number within int, -1 allowed where it means "all".
int count(const std::string& text, const char* field, const std::string& place, int lowest = 0) {
  const double v = number(text, field, place);
  if (v != std::floor(v) || v < lowest || v > 1e9) refuse(place, fmt::format("{} {} is not a count", field, strings::printable(trim(text))));
  return static_cast<int>(v);
}

bool flag(const std::string& text) {
  const std::string s = strings::lower(trim(text));
  return s == "1" || s == "true";
}

std::string field(const Record& r, const char* key) {
  const auto it = r.find(key);
  return it == r.end() ? std::string() : it->second;
}

// A name the tool printed, without the control characters no name holds.
std::string text_field(const Record& r, const char* key, const std::string& place) {
  const std::string s = trim(field(r, key));
  if (strings::has_control(s)) refuse(place, fmt::format("{} holds a control character", key));
  return s;
}

// The backend of a record: `backends` since 2024; before it, one flag per backend.
std::string backend_of(const Record& r) {
  if (r.count("backends")) return trim(field(r, "backends"));
  for (auto [key, name] : {std::pair{"cuda", "CUDA"}, {"vulkan", "Vulkan"}, {"metal", "Metal"}, {"sycl", "SYCL"}, {"kompute", "Kompute"},
                           {"opencl", "OpenCL"}})
    if (flag(field(r, key))) return name;
  if (flag(field(r, "gpu_blas"))) return "GPU BLAS";
  if (flag(field(r, "blas"))) return "BLAS";
  return r.count("cuda") || r.count("metal") ? "CPU" : "";
}

void set_mode(Measurement& m, const std::string& place) {
  if (m.prompt_tokens > 0 && m.gen_tokens == 0) m.mode = "prefill";
  else if (m.prompt_tokens == 0 && m.gen_tokens > 0) m.mode = "decode";
  else if (m.prompt_tokens > 0 && m.gen_tokens > 0) m.mode = "prefill+decode";
  else refuse(place, "the test has neither prompt nor generated tokens (n_prompt and n_gen are 0)");
}

void check_figure(const Measurement& m, const std::string& place) {
  if (!(m.value > 0)) refuse(place, fmt::format("avg_ts {} is not a positive rate", m.value));
  if (m.spread && !(*m.spread >= 0)) refuse(place, fmt::format("stddev_ts {} is negative", *m.spread));
}

// csv, json, jsonl and sql records share llama-bench's field names.
Measurement from_record(const Record& r, const std::string& place) {
  Measurement m;
  m.tool = kTool;
  m.framework = "llama.cpp";
  m.where = place;
  if (!r.count("avg_ts")) refuse(place, "no avg_ts field (not a llama-bench result)");
  if (!r.count("n_prompt") || !r.count("n_gen")) refuse(place, "no n_prompt or n_gen field (not a llama-bench result)");
  m.gpu = text_field(r, "gpu_info", place);
  m.backend = backend_of(r);
  m.model = text_field(r, "model_type", place);
  m.model_file = text_field(r, "model_filename", place);
  if (strings::has_control(m.backend)) refuse(place, "backends holds a control character");
  m.quant = quant_of_model_type(m.model);
  if (r.count("model_size")) m.model_bytes = number(field(r, "model_size"), "model_size", place);
  if (r.count("model_n_params")) m.model_params = number(field(r, "model_n_params"), "model_n_params", place);
  if (m.model_bytes < 0 || m.model_params < 0) refuse(place, "model_size or model_n_params is negative");
  m.prompt_tokens = count(field(r, "n_prompt"), "n_prompt", place);
  m.gen_tokens = count(field(r, "n_gen"), "n_gen", place);
  if (r.count("n_depth")) m.depth = count(field(r, "n_depth"), "n_depth", place);
  if (r.count("n_gpu_layers")) m.gpu_layers = count(field(r, "n_gpu_layers"), "n_gpu_layers", place, -1);
  if (r.count("n_threads")) m.threads = count(field(r, "n_threads"), "n_threads", place);
  if (r.count("n_batch")) m.batch = count(field(r, "n_batch"), "n_batch", place);
  if (r.count("n_ubatch")) m.ubatch = count(field(r, "n_ubatch"), "n_ubatch", place);
  set_mode(m, place);
  m.value = number(field(r, "avg_ts"), "avg_ts", place);
  if (r.count("stddev_ts")) m.spread = number(field(r, "stddev_ts"), "stddev_ts", place);
  m.unit = "tokens/s";
  check_figure(m, place);
  return m;
}

Record record_of_json(const nlohmann::json& j, const std::string& place) {
  if (!j.is_object()) refuse(place, "a result is not a JSON object");
  Record r;
  for (const auto& [k, v] : j.items()) {
    if (v.is_string()) r[k] = v.get<std::string>();
    else if (v.is_boolean()) r[k] = std::string(1, v.get<bool>() ? '1' : '0');
    else if (v.is_number()) r[k] = v.dump();
  }
  return r;
}

Measurement from_json(const nlohmann::json& j, const std::string& place) {
  Measurement m = from_record(record_of_json(j, place), place);
  if (const auto it = j.find("samples_ts"); it != j.end()) {
    if (!it->is_array()) refuse(place, "samples_ts is not a list");
    for (const auto& s : *it) {
      if (!s.is_number() || !std::isfinite(s.get<double>()) || s.get<double>() <= 0) refuse(place, "samples_ts holds a value that is not a positive rate");
      m.samples.push_back(s.get<double>());
    }
  }
  return m;
}

std::vector<Measurement> read_json(const std::string& text, const std::string& where) {
  const nlohmann::json j = parse_json(text, where);
  if (!j.is_array()) refuse(where, "JSON output is a list of results");
  if (j.size() > kMaxRows) refuse(where, fmt::format("more than {} results", kMaxRows));
  std::vector<Measurement> out;
  for (std::size_t i = 0; i < j.size(); ++i) out.push_back(from_json(j[i], fmt::format("{}: result {}", where, i + 1)));
  return out;
}

std::vector<Measurement> read_jsonl(const std::string& text, const std::string& where) {
  std::vector<Measurement> out;
  std::size_t pos = 0;
  int line = 0;
  while (pos < text.size()) {
    std::size_t end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    ++line;
    const std::string row = trim(std::string_view(text).substr(pos, end - pos));
    pos = end + 1;
    if (row.empty()) continue;
    if (out.size() >= kMaxRows) refuse(where, fmt::format("more than {} results", kMaxRows));
    const std::string place = at(where, line);
    out.push_back(from_json(parse_json(row, place), place));
  }
  return out;
}

std::vector<Measurement> read_csv(const std::string& text, const std::string& where) {
  std::size_t pos = 0;
  int line = 1, start = 1;
  std::vector<std::string> header, cells;
  if (!csv::next_record(text, pos, line, header, start, where)) refuse(where, "empty file");
  std::vector<Measurement> out;
  while (csv::next_record(text, pos, line, cells, start, where)) {
    if (cells.size() == 1 && trim(cells[0]).empty()) continue;
    const std::string place = at(where, start);
    if (cells.size() != header.size()) refuse(place, fmt::format("{} fields where the header has {}", cells.size(), header.size()));
    if (out.size() >= kMaxRows) refuse(where, fmt::format("more than {} results", kMaxRows));
    Record r;
    for (std::size_t i = 0; i < header.size(); ++i) r[trim(header[i])] = cells[i];
    out.push_back(from_record(r, place));
  }
  return out;
}

// One parenthesised, comma-separated SQL list from `s` at `i` (after its '('): bare names or '…' strings with ''
// for a quote. `i` ends after the ')'.
std::vector<std::string> sql_list(const std::string& s, std::size_t& i, const std::string& place) {
  std::vector<std::string> items;
  std::string cur;
  bool quoted = false, any = false;
  while (i < s.size()) {
    const char c = s[i++];
    if (quoted) {
      if (c == '\'') {
        if (i < s.size() && s[i] == '\'') {
          cur += '\'';
          ++i;
        } else {
          quoted = false;
        }
      } else {
        cur += c;
      }
    } else if (c == '\'') {
      quoted = any = true;
    } else if (c == ',' || c == ')') {
      items.push_back(any ? cur : trim(cur));
      cur.clear();
      any = false;
      if (c == ')') return items;
    } else {
      cur += c;
    }
  }
  refuse(place, "an INSERT's list is not closed");
}

std::vector<Measurement> read_sql(const std::string& text, const std::string& where) {
  std::vector<Measurement> out;
  const std::string lowered = strings::lower(text);
  std::size_t pos = 0;
  int line = 1;
  std::size_t counted = 0;  // bytes whose newlines `line` has counted
  while (true) {
    const std::size_t start = lowered.find("insert into", pos);
    if (start == std::string::npos) break;
    line += static_cast<int>(std::count(text.begin() + static_cast<std::ptrdiff_t>(counted), text.begin() + static_cast<std::ptrdiff_t>(start), '\n'));
    counted = start;
    const std::string place = at(where, line);
    std::size_t i = text.find('(', start);
    if (i == std::string::npos || lowered.substr(start, i - start).find("values") != std::string::npos)
      refuse(place, "an INSERT without its column list");
    ++i;
    const std::vector<std::string> cols = sql_list(text, i, place);
    const std::size_t v = lowered.substr(i, 32).find("values");
    if (v == std::string::npos) refuse(place, "an INSERT without VALUES");
    i = text.find('(', i + v);
    if (i == std::string::npos) refuse(place, "an INSERT without VALUES");
    ++i;
    const std::vector<std::string> vals = sql_list(text, i, place);
    if (cols.size() != vals.size()) refuse(place, fmt::format("{} values for {} columns", vals.size(), cols.size()));
    if (out.size() >= kMaxRows) refuse(where, fmt::format("more than {} results", kMaxRows));
    Record r;
    for (std::size_t k = 0; k < cols.size(); ++k) r[cols[k]] = vals[k];
    out.push_back(from_record(r, place));
    pos = i;
  }
  if (out.empty()) refuse(where, "SQL output without an INSERT INTO llama_bench");
  return out;
}

// "3.56 GiB" -> bytes; "6.74 B" -> parameters.
double scaled(const std::string& text, const char* field, const std::string& place, bool bytes) {
  const std::string s = trim(text);
  const std::size_t sp = s.find(' ');
  if (sp == std::string::npos) refuse(place, fmt::format("{} '{}' has no unit", field, strings::printable(s)));
  const double v = number(s.substr(0, sp), field, place);
  const std::string unit = trim(s.substr(sp + 1));
  static const std::map<std::string, double> kBytes = {{"B", 1}, {"KiB", 1024.0}, {"MiB", 1048576.0}, {"GiB", 1073741824.0}, {"TiB", 1099511627776.0}};
  static const std::map<std::string, double> kCounts = {{"K", 1e3}, {"M", 1e6}, {"B", 1e9}, {"T", 1e12}};
  const auto& table = bytes ? kBytes : kCounts;
  const auto it = table.find(unit);
  if (it == table.end()) refuse(place, fmt::format("{} unit '{}' is not one llama-bench prints", field, strings::printable(unit)));
  if (v < 0) refuse(place, fmt::format("{} is negative", field));
  return v * it->second;
}

// "pp 512", "pp512", "tg128", "pp512+tg128", "pp512 @ d512", "pg 512,128".
void read_test(const std::string& text, Measurement& m, const std::string& place) {
  std::string s;
  for (char c : text)
    if (c != ' ') s += c;
  const std::size_t at_sign = s.find('@');
  if (at_sign != std::string::npos) {
    const std::string depth = s.substr(at_sign + 1);
    if (depth.empty() || depth[0] != 'd') refuse(place, fmt::format("test '{}' has a depth without d", strings::printable(text)));
    m.depth = count(depth.substr(1), "depth", place);
    s = s.substr(0, at_sign);
  }
  auto part = [&](const std::string& p) {
    if (p.size() < 3) refuse(place, fmt::format("test '{}' is not pp N, tg N or pp N+tg M", strings::printable(text)));
    const std::string kind = p.substr(0, 2);
    const int n = count(p.substr(2), "test size", place);
    if (kind == "pp") m.prompt_tokens = n;
    else if (kind == "tg") m.gen_tokens = n;
    else refuse(place, fmt::format("test '{}' is not pp N, tg N or pp N+tg M", strings::printable(text)));
  };
  if (s.rfind("pg", 0) == 0) {
    const std::size_t comma = s.find(',');
    if (comma == std::string::npos) refuse(place, fmt::format("test '{}' is not pg N,M", strings::printable(text)));
    m.prompt_tokens = count(s.substr(2, comma - 2), "test size", place);
    m.gen_tokens = count(s.substr(comma + 1), "test size", place);
  } else if (const std::size_t plus = s.find('+'); plus != std::string::npos) {
    part(s.substr(0, plus));
    part(s.substr(plus + 1));
  } else {
    part(s);
  }
  set_mode(m, place);
}

// "132.19 ± 0.55" (or "+/-").
void read_rate(const std::string& text, Measurement& m, const std::string& place) {
  std::string s = trim(text);
  std::size_t pm = s.find("\xC2\xB1");
  std::size_t len = 2;
  if (pm == std::string::npos) {
    pm = s.find("+/-");
    len = 3;
  }
  if (pm == std::string::npos) {
    m.value = number(s, "t/s", place);
  } else {
    m.value = number(s.substr(0, pm), "t/s", place);
    m.spread = number(s.substr(pm + len), "t/s spread", place);
  }
  m.unit = "tokens/s";
  check_figure(m, place);
}

std::vector<std::string> md_cells(const std::string& row) {
  std::vector<std::string> cells;
  std::string t = trim(row);
  if (!t.empty() && t.front() == '|') t.erase(0, 1);
  if (!t.empty() && t.back() == '|') t.pop_back();
  for (const auto& c : split(t, '|')) cells.push_back(trim(c));
  return cells;
}

std::vector<Measurement> read_md(const std::string& text, const std::string& where) {
  std::vector<Measurement> out;
  std::vector<std::string> header, devices;
  int line = 0;
  bool separator_seen = false;
  for (const auto& raw : split(text, '\n')) {
    ++line;
    const std::string row = trim(raw);
    const std::string place = at(where, line);
    // llama.cpp's backends print the devices they found ("  Device 0: NVIDIA GeForce RTX 4090, compute capability
    // 8.9, VMM: yes") on stderr; a file that kept them names the GPU.
    if (row.rfind("Device ", 0) == 0 && row.find(':') != std::string::npos) {
      std::string name = trim(row.substr(row.find(':') + 1));
      if (strings::has_control(name)) refuse(place, "a device name holds a control character");
      if (const std::size_t comma = name.find(','); comma != std::string::npos) name = name.substr(0, comma);
      if (!name.empty()) devices.push_back(name);
      continue;
    }
    if (row.empty() || row.front() != '|') {
      if (!header.empty() && separator_seen) {  // a table ends; the next may start with its own header
        header.clear();
        separator_seen = false;
      }
      continue;
    }
    if (strings::has_control(row)) refuse(place, "a table row holds a control character");
    const std::vector<std::string> cells = md_cells(row);
    if (header.empty()) {
      header = cells;
      for (const char* need : {"model", "test", "t/s"})
        if (std::find(header.begin(), header.end(), need) == header.end())
          refuse(place, fmt::format("the table has no '{}' column (not llama-bench output)", need));
      continue;
    }
    if (!separator_seen) {
      for (const auto& c : cells)
        if (c.find_first_not_of("-: ") != std::string::npos) refuse(place, "the header is not followed by a separator row");
      separator_seen = true;
      continue;
    }
    if (cells.size() != header.size()) refuse(place, fmt::format("{} cells where the header has {}", cells.size(), header.size()));
    if (out.size() >= kMaxRows) refuse(where, fmt::format("more than {} results", kMaxRows));
    Measurement m;
    m.tool = kTool;
    m.framework = "llama.cpp";
    m.where = place;
    for (std::size_t i = 0; i < header.size(); ++i) {
      const std::string& h = header[i];
      const std::string& c = cells[i];
      if (h == "model") m.model = c;
      else if (h == "size") m.model_bytes = scaled(c, "size", place, true);
      else if (h == "params") m.model_params = scaled(c, "params", place, false);
      else if (h == "backend") m.backend = c;
      else if (h == "ngl") m.gpu_layers = count(c, "ngl", place, -1);
      else if (h == "threads") m.threads = count(c, "threads", place);
      else if (h == "n_batch") m.batch = count(c, "n_batch", place);
      else if (h == "n_ubatch") m.ubatch = count(c, "n_ubatch", place);
      else if (h == "test") read_test(c, m, place);
      else if (h == "t/s") read_rate(c, m, place);
    }
    m.quant = quant_of_model_type(m.model);
    m.gpu = strings::join(devices, ", ");
    out.push_back(std::move(m));
  }
  if (out.empty()) refuse(where, "a Markdown table without results");
  return out;
}

}  // namespace

std::string quant_of_model_type(const std::string& model_type) {
  // "<arch> <size> <file type>", the file type as llama_model_ftype_name prints it ("Q4_K - Medium", "mostly Q4_0",
  // "all F32", "IQ2_XXS - 2.0625 bpw").
  std::vector<std::string> words;
  for (const auto& w : split(trim(model_type), ' '))
    if (!w.empty()) words.push_back(w);
  if (words.size() < 3) return "";
  std::size_t i = 2;
  if (words[i] == "mostly" || words[i] == "all") ++i;
  if (i >= words.size()) return "";
  std::string base = strings::lower(words[i]);
  for (char c : base)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) return "";
  if (i + 2 < words.size() && words[i + 1] == "-") {
    const std::string size = strings::lower(words[i + 2]);
    if (size == "small" || size == "medium" || size == "large") base += std::string("_") + size[0];
  }
  return base;
}

std::vector<Measurement> read_llama_bench(const std::string& text, const std::string& where) {
  std::size_t first = 0;
  if (text.rfind("\xEF\xBB\xBF", 0) == 0) first = 3;  // a byte-order mark some editors write
  while (first < text.size() && std::isspace(static_cast<unsigned char>(text[first]))) ++first;
  if (first >= text.size()) refuse(where, "empty file");
  const std::string body = text.substr(first);
  const std::string head = strings::lower(body.substr(0, 64));
  std::vector<Measurement> out;
  if (body[0] == '[') out = read_json(body, where);
  else if (body[0] == '{') out = read_jsonl(text, where);
  else if (head.rfind("create table", 0) == 0 || head.rfind("insert into", 0) == 0) out = read_sql(text, where);
  else if (text.find("\n|") != std::string::npos || body[0] == '|') out = read_md(text, where);
  else if (body.substr(0, body.find('\n')).find("avg_ts") != std::string::npos) out = read_csv(text, where);
  else refuse(where, "not llama-bench output (expected its md, csv, json, jsonl or sql format)");
  if (out.empty()) refuse(where, "no results");
  return out;
}

}  // namespace gpuvs::measured
