// SPDX-License-Identifier: Apache-2.0
// gpuvs history / diff / report: the stored runs, two runs side by side, and a run's report.
#include <fmt/format.h>

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>

#include "cli/commands.hpp"
#include "cli/output.hpp"
#include "cli/validators.hpp"
#include "core/error.hpp"
#include "core/strings.hpp"
#include "core/units.hpp"
#include "core/files.hpp"
#include "report/report.hpp"
#include "store/store.hpp"

namespace gpuvs::cli {

namespace {

using json = nlohmann::json;

std::filesystem::path db_path(const std::string& db) { return db.empty() ? store::default_path() : std::filesystem::path(db); }

int run_history(const std::string& db, Output out) {
  const auto s = store::Store::open(db_path(db), false);
  const auto runs = s.list();
  if (out != Output::table) {
    json arr = json::array();
    for (const auto& r : runs)
      arr.push_back({{"id", r.id}, {"created_utc", r.created_utc}, {"kind", r.kind}, {"gpuvs", r.gpuvs_version}, {"host", r.host},
                     {"gpu", r.gpu}, {"summary", r.summary}});
    print_structured(json{{"schema_version", 1}, {"db", s.path().string()}, {"runs", arr}}, out, {"runs"});  // csv, md: a row per run
    return 0;
  }
  fmt::print("{} run{} in {}\n", runs.size(), runs.size() == 1 ? "" : "s", s.path().string());
  fmt::print("{:>5}  {:<20}  {:<9}  {:<24}  {:<24}  {}\n", "id", "created (UTC)", "kind", "host", "gpu", "summary");
  // Another program may have written the store: its text reaches the terminal with control characters
  // (an escape sequence, a newline forging a row) written out as \xNN.
  const auto e = strings::escape_control;
  for (const auto& r : runs)
    fmt::print("{:>5}  {:<20}  {:<9}  {:<24.24}  {:<24.24}  {}\n", r.id, e(r.created_utc), e(r.kind), e(r.host), e(r.gpu), e(r.summary));
  return 0;
}

void check_id(std::int64_t id, const char* what) {
  if (id < 1) throw InputError(fmt::format("{} {}: run ids are positive integers (gpuvs history lists them)", what, id));
}

int run_diff(const std::string& db, std::int64_t a, std::int64_t b, Output out) {
  check_id(a, "run1");
  check_id(b, "run2");
  const auto s = store::Store::open(db_path(db), false);
  const store::Run ra = s.get(a), rb = s.get(b);
  struct Row {
    std::string unit;
    std::optional<double> x, y;
    std::string sx = "missing", sy = "missing";
  };
  std::map<std::string, Row> rows;  // key @ device
  for (const auto& f : ra.figures) {
    auto& r = rows[f.key + " @ " + f.device];
    r.unit = f.unit;
    r.sx = f.status;
    if (f.status == "ok") r.x = f.median;
  }
  for (const auto& f : rb.figures) {
    auto& r = rows[f.key + " @ " + f.device];
    r.unit = f.unit;
    r.sy = f.status;
    if (f.status == "ok") r.y = f.median;
  }
  auto training = [](const store::Run& r) {
    const json& p = r.payload;
    // A stored payload may hold anything: only a number where it belongs counts.
    if (!p.contains("training") || !p["training"].is_object()) return 0.0;
    const json& t = p["training"];
    return t.contains("samples_per_s") && t["samples_per_s"].is_number() ? t["samples_per_s"].get<double>() : 0.0;
  };
  if (out != Output::table) {
    json arr = json::array();
    for (const auto& [k, r] : rows)
      arr.push_back({{"figure", k}, {"unit", r.unit}, {"a", r.x ? json(*r.x) : json(r.sx)}, {"b", r.y ? json(*r.y) : json(r.sy)},
                     {"change_pct", r.x && r.y && *r.x != 0 ? json(100 * (*r.y / *r.x - 1)) : json(nullptr)}});
    print_structured(json{{"schema_version", 1},
                          {"a", {{"id", a}, {"created_utc", ra.created_utc}, {"host", ra.host}, {"gpu", ra.gpu}, {"gpuvs", ra.gpuvs_version}}},
                          {"b", {{"id", b}, {"created_utc", rb.created_utc}, {"host", rb.host}, {"gpu", rb.gpu}, {"gpuvs", rb.gpuvs_version}}},
                          {"training_samples_per_s", {training(ra), training(rb)}},
                          {"figures", arr}},
                     out, {"figures"});  // csv, md: a row per figure
    return 0;
  }
  const auto e = strings::escape_control;  // stored text, as in run_history
  fmt::print("run {}: {} · {} · {} · {}\n", a, e(ra.created_utc), e(ra.host), e(ra.gpu), e(ra.gpuvs_version));
  fmt::print("run {}: {} · {} · {} · {}\n", b, e(rb.created_utc), e(rb.host), e(rb.gpu), e(rb.gpuvs_version));
  fmt::print("{:<44} {:>12} {:>12} {:>9}  {}\n", "figure", fmt::format("run {}", a), fmt::format("run {}", b), "change", "unit");
  // Human numbers, as every table prints them (16.88 k, never 1.688e+04).
  auto cell = [&](const std::optional<double>& v, const std::string& status) { return v ? units::format_plain(*v, 4) : e(status); };
  for (const auto& [k, r] : rows)
    fmt::print("{:<44} {:>12} {:>12} {:>9}  {}\n", e(k), cell(r.x, r.sx), cell(r.y, r.sy),
               r.x && r.y && *r.x != 0 ? fmt::format("{:+.1f}%", 100 * (*r.y / *r.x - 1)) : "", e(r.unit));
  const double ta = training(ra), tb = training(rb);
  if (ta > 0 && tb > 0)
    fmt::print("{:<44} {:>12} {:>12} {:>9}  samples/s\n", "seed-mlp training (CPU)", units::format_plain(ta, 4), units::format_plain(tb, 4),
               fmt::format("{:+.1f}%", 100 * (tb / ta - 1)));
  return 0;
}

int run_report(const std::string& db, std::int64_t id, const std::string& html, const std::string& format, bool force) {
  if (id != 0) check_id(id, "--run");
  if (html.empty() && format.empty()) throw InputError("give --html FILE or -o json|md");
  if (!format.empty() && format != "json" && format != "md")
    throw InputError(fmt::format("-o '{}' is not a report format (expected json or md)", format));
  files::note_input(db_path(db));
  if (!html.empty()) files::check_output(html, report::html_output("--html", force));
  const auto s = store::Store::open(db_path(db), false);
  const store::Run r = s.get(id > 0 ? id : s.latest());
  const json run = {{"schema_version", 1}, {"id", r.id}, {"created_utc", r.created_utc}, {"payload", r.payload}};
  if (!html.empty()) {
    files::write_output(html, report::html_output("--html", force), report::render_html(run));
    fmt::print(stderr, "wrote {} (run {})\n", html, r.id);
  }
  if (format == "json") print_json(run);
  if (format == "md") fmt::print("{}", report::render_markdown(run));
  return 0;
}

}  // namespace

Runner add_history_command(CLI::App& app) {
  struct Args {
    std::string db;
    Output out = Output::table;
  };
  auto a = std::make_shared<Args>();
  auto* h = app.add_subcommand("history", "List the runs stored by gpuvs evaluate");
  h->add_option("--db", a->db, "Results database (default $XDG_DATA_HOME/gpuvs/history.db)");
  add_output_option(h, a->out);
  return [a] { return run_history(a->db, a->out); };
}

Runner add_diff_command(CLI::App& app) {
  struct Args {
    std::string db;
    Output out = Output::table;
    std::int64_t a = 0, b = 0;
  };
  auto a = std::make_shared<Args>();
  auto* d = app.add_subcommand("diff", "Compare two stored runs figure by figure");
  d->add_option("run1", a->a, "First run id")->required()->check(run_id());
  d->add_option("run2", a->b, "Second run id")->required()->check(run_id());
  d->add_option("--db", a->db, "Results database (default $XDG_DATA_HOME/gpuvs/history.db)");
  add_output_option(d, a->out);
  return [a] { return run_diff(a->db, a->a, a->b, a->out); };
}

Runner add_report_command(CLI::App& app) {
  struct Args {
    std::string db, html, format;
    std::int64_t run = 0;  // the newest (the flag takes 1 and up)
    bool force = false;
  };
  auto a = std::make_shared<Args>();
  auto* r = app.add_subcommand("report", "Write a stored run's report: self-contained HTML, JSON or Markdown");
  r->add_option("--run", a->run, "Run id (default: the newest)")->check(run_id());
  r->add_option("--html", a->html, "Write the HTML report to this file");
  r->add_option("-o,--output", a->format, "Print the run as json or md (a report is a document: --html, or md as text)");
  r->add_option("--db", a->db, "Results database (default $XDG_DATA_HOME/gpuvs/history.db)");
  r->add_flag("--force", a->force, "Replace an --html file that gpuvs did not write (or that has other hard links)");
  return [a] { return run_report(a->db, a->run, a->html, a->format, a->force); };
}

}  // namespace gpuvs::cli
