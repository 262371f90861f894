// SPDX-License-Identifier: Apache-2.0
// The report: escaping of every outside string, charts with content, Markdown, and — the real test — a
// report written by a real `gpuvs evaluate` rendered by headless Chromium: a screenshot is taken, the
// page logs nothing to the console, and every chart has data marks after the page's script has run.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <cmath>
#include <cstdlib>
#include <regex>

#include "core/error.hpp"
#include "report/evaluate_record.hpp"
#include "report/report.hpp"
#include "report/svg.hpp"
#include "test_util.hpp"

using namespace gpuvs;
using nlohmann::json;

namespace {

json hostile_run() {
  const std::string evil = "<script>alert('x')</script>&\"";
  json pred = {{"gpu", evil}, {"name", evil}, {"throughput", 1000.0}, {"unit", "samples/s"}, {"band_low", 900.0}, {"band_high", 1100.0},
               {"step_time_s", 0.01}, {"peak_gib", 1.0}, {"capacity_gib", 20.0}, {"fits", true}, {"usd_per_million", 0.5},
               {"cost_basis", "cloud rent"}, {"link", "nvlink"}, {"scaling", json::array({{{"gpus", 1}, {"efficiency", 1.0}}, {{"gpus", 2}, {"efficiency", 0.9}}})}};
  json payload = {{"workload", evil},
                  {"gpuvs", "test"},
                  {"summary", json::array({evil})},
                  {"devices", {{"cpu", {{"model", evil}, {"cores", 2}, {"threads", 2}, {"features", json::array({evil})}}},
                               {"nvidia", {{"status", "no-driver"}, {"detail", evil}}},
                               {"cuda_plugin", evil}}},
                  {"bench", {{"results", json::array({{{"key", evil}, {"device", "cpu"}, {"unit", "GB/s"}, {"status", "ok"}, {"median", 50.0},
                                                       {"spread", 0.01}, {"note", evil}}})}}},
                  {"roofline", {{"device", evil}, {"peak_gflops", 300.0}, {"bandwidth_gbs", 50.0}, {"workload", evil},
                                {"points", json::array({{{"label", evil}, {"intensity", 0.1}, {"gflops", 5.0}}})},
                                {"ops", json::array({{{"name", evil}, {"intensity", 2.0}, {"gflops", 40.0}}})}}},
                  {"training", {{"workload", evil}, {"device", "cpu"}, {"gemm", evil}, {"history", json::array()}}},
                  {"predictions", json::array({pred})},
                  {"advice", {{"scenario", {{"task", "train"}, {"workload", evil}}},
                              {"ranked", json::array({{{"rank", 1}, {"gpu", evil}, {"count", 1}, {"strategy", evil}, {"reason", evil}}})},
                              {"ruled_out", json::array({{{"gpu", evil}, {"reason", evil}}})},
                              {"assumptions", json::array({{{"key", evil}, {"value", 1.0}, {"unit", evil}, {"basis", evil}}})}}}};
  return {{"id", 7}, {"created_utc", evil}, {"payload", payload}};
}

std::string find_chromium() {
  for (const char* c : {"chromium", "chromium-browser", "google-chrome"})
    if (std::system((std::string("command -v ") + c + " >/dev/null 2>&1").c_str()) == 0) return c;
  return "";
}

const std::string kChromiumFlags =
    " --headless --no-sandbox --disable-gpu --hide-scrollbars --no-first-run --disable-background-networking "
    "--disable-component-update --disable-sync";

/// The <body> element's attributes after the page's script ran in headless Chromium.
std::string body_after_script(const std::string& browser, const std::filesystem::path& html, const std::filesystem::path& dir) {
  const std::string cmd = "timeout 120 " + browser + kChromiumFlags + " --user-data-dir=" + (dir / "profile").string() +
                          " --window-size=1200,3000 --dump-dom " + html.string() + " >" + (dir / "dom.html").string() + " 2>/dev/null";
  if (std::system(cmd.c_str()) != 0) return "";
  const std::string dom = gpuvs::test::slurp(dir / "dom.html");
  std::smatch m;
  return std::regex_search(dom, m, std::regex("<body[^>]*>")) ? m.str() : "";
}

int attribute(const std::string& body, const std::string& name) {
  std::smatch m;
  return std::regex_search(body, m, std::regex(name + "=\"(\\d+)\"")) ? std::stoi(m[1]) : -1;
}

json seed_like_run() {
  json run = hostile_run();
  json& p = run["payload"];
  p["workload"] = "seed-mlp";
  json& e = p["predictions"][0];
  e["gpu"] = "rtx-2080-ti";
  e["throughput"] = 507559.8;
  e["band_low"] = 416256.8;
  e["band_high"] = 552480.6;
  e["usd_per_million"] = 6.83e-05;
  p["measured_here"] = {{"label", "this machine (measured)"}, {"device", "test CPU"}, {"workload", "seed-mlp"}, {"precision", "fp32"},
                        {"throughput", 300000.0}, {"unit", "samples/s"}, {"batch", 128}, {"step_time_s", 4.2e-4}, {"peak_gib", 0.0035},
                        {"capacity_gib", 23.5}, {"usd_per_million", 2.7e-05}, {"cost_basis", "owned, electricity only at 200 W"},
                        {"verdict", "It is as fast as the predicted rtx-4090."}};
  return run;
}

}  // namespace

TEST(Report, TheEvaluateRecordRoundTripsAndReadsAnyJson) {
  report::EvaluateRecord r;
  r.gpuvs = "0.1 (git abc)";
  r.workload = "seed-mlp";
  r.precision = "amp-bf16";
  r.devices = {{"cpu", {{"model", "x"}}}};
  r.predictions = json::array({{{"gpu", "rtx-4090"}, {"throughput", 1.5e5}}});
  r.advice = {{"ranked", json::array()}};
  r.prediction_note = "note";
  r.summary = {"line one", "line two"};
  const json j = report::to_json(r);
  EXPECT_EQ(j["kind"], "evaluate");
  EXPECT_EQ(j["schema_version"], report::EvaluateRecord::kSchemaVersion);
  EXPECT_TRUE(j.contains("serving") && j["serving"].is_null());  // every section is written, null when absent
  const report::EvaluateRecord back = report::evaluate_record_from(j);
  EXPECT_EQ(back.gpuvs, r.gpuvs);
  EXPECT_EQ(back.workload, r.workload);
  EXPECT_EQ(back.precision, r.precision);
  EXPECT_EQ(back.devices, r.devices);
  EXPECT_EQ(back.predictions, r.predictions);
  EXPECT_EQ(back.advice, r.advice);
  EXPECT_EQ(back.prediction_note, r.prediction_note);
  EXPECT_EQ(back.summary, r.summary);
  EXPECT_EQ(report::to_json(back), j);
  // Another writer's record: text of another kind reads as "", a summary line that is not text as its JSON,
  // missing sections as null, and a section of another kind is kept for the report to skip.
  const report::EvaluateRecord odd = report::evaluate_record_from(
      json{{"workload", 7}, {"summary", json::array({"a", json{{"k", 1}}, 2})}, {"bench", "not an object"}});
  EXPECT_EQ(odd.workload, "");
  EXPECT_EQ(odd.summary, (std::vector<std::string>{"a", "{\"k\":1}", "2"}));
  EXPECT_TRUE(odd.devices.is_null());
  EXPECT_EQ(odd.bench, "not an object");
  EXPECT_TRUE(report::evaluate_record_from(json::array({1, 2})).summary.empty());
}

// Issue 33 item 9: the answer first (advice, then the predictions), the evidence after; waived benchmarks one
// line per reason; a figure whose repetitions spread past 20% says so.
TEST(Report, TheAnswerComesFirstAndTheEvidenceIsCondensed) {
  report::EvaluateRecord r;
  r.workload = "seed-mlp";
  r.devices = {{"cpu", {{"model", "cpu"}, {"cores", 2}}}, {"nvidia", {{"status", "no-driver"}, {"detail", "none"}}}};
  json results = json::array();
  for (const char* key : {"cuda.gemm.bf16", "cuda.gemm.fp16", "cuda.memcpy.d2d"})
    results.push_back({{"key", key}, {"device", "cuda:0"}, {"status", "waived"}, {"note", "no NVIDIA driver"}, {"unit", "TFLOP/s"}});
  results.push_back({{"key", "cpu.gemm.sgemm"}, {"device", "cpu"}, {"status", "ok"}, {"median", 150.0}, {"spread", 0.5}, {"unit", "GFLOP/s"}});
  r.bench = {{"results", results}};
  // One card rented and owned, one owned only: the cost chart compares them on the basis both have.
  r.predictions = json::array({{{"gpu", "rtx-4090"}, {"throughput", 1e5}, {"unit", "samples/s"}, {"fits", true}, {"usd_per_million", 0.4},
                                {"cost_basis", "cloud rent"}, {"owned_usd_per_million", 0.2}},
                               {{"gpu", "rtx-3090"}, {"throughput", 6e4}, {"unit", "samples/s"}, {"fits", true}, {"usd_per_million", 0.3},
                                {"cost_basis", "owned"}, {"owned_usd_per_million", 0.3}}});
  r.advice = {{"ranked", json::array({{{"rank", 1}, {"gpu", "rtx-4090"}, {"count", 1}, {"reason", "cheapest"}}})}, {"scenario", {{"task", "train"}}}};
  const std::string html = report::render_html(json{{"id", 1}, {"payload", report::to_json(r)}});
  const auto advice = html.find("<h2>Advice"), predicted = html.find("<h2>Predicted"), machine = html.find("<h2>This machine");
  ASSERT_NE(advice, std::string::npos);
  ASSERT_NE(predicted, std::string::npos);
  ASSERT_NE(machine, std::string::npos);
  EXPECT_LT(advice, predicted);
  EXPECT_LT(predicted, machine);
  EXPECT_NE(html.find("3 waived: cuda.gemm.bf16, cuda.gemm.fp16, cuda.memcpy.d2d"), std::string::npos);
  EXPECT_EQ(html.find("waived: no NVIDIA driver"), std::string::npos);  // no row per waived benchmark
  EXPECT_NE(html.find("spread 50% between repetitions"), std::string::npos);
  EXPECT_NE(html.find("owning each card: its price over its service life"), std::string::npos);
  EXPECT_EQ(html.find("cloud rent where listed"), std::string::npos);
}

TEST(Report, PredictionsInHumanUnitsWithThisMachineBesideThem) {
  const std::string html = report::render_html(seed_like_run());
  // 5.08e+05 samples/s and its band as people read them, money without exponents.
  EXPECT_NE(html.find("<td class=n>507.6 k</td>"), std::string::npos);
  EXPECT_NE(html.find("416.3 k–552.5 k"), std::string::npos);
  EXPECT_NE(html.find("$0.0683 (cloud rent)"), std::string::npos) << "per billion, as the chart";
  EXPECT_FALSE(std::regex_search(html, std::regex("<td[^>]*>[^<]*\\de[+-]\\d"))) << "a table cell in exponent notation";
  // The measured machine: a row in the table, a bar of its own colour in the speed, cost and memory charts.
  EXPECT_NE(html.find("<tr class=\"measured\"><td>this machine (measured)</td><td class=n>300.0 k</td>"), std::string::npos);
  std::size_t measured_bars = 0;
  for (auto p = html.find("<rect class=\"mark bar measured\""); p != std::string::npos; p = html.find("<rect class=\"mark bar measured\"", p + 1))
    ++measured_bars;
  EXPECT_EQ(measured_bars, 3u);
  EXPECT_NE(html.find("It is as fast as the predicted rtx-4090."), std::string::npos);
  const std::string md = report::render_markdown(seed_like_run());
  EXPECT_NE(md.find("| this machine (measured) | 300.0 k | samples/s |"), std::string::npos) << md;
}

TEST(Report, ChartTextIsMeasuredWrappedAndKeptApart) {
  // Wider text measures wider; bold wider than regular; a title wraps at words and keeps every word.
  EXPECT_GT(report::text_width("WWWW", 11), report::text_width("iiii", 11));
  EXPECT_GT(report::text_width("Throughput", 14, true), report::text_width("Throughput", 14));
  const std::string title = "Cost per billion samples (cloud rent where listed, else owning at the advisor's assumptions)";
  const auto lines = report::wrap_to_width(title, 300, 14, true);
  EXPECT_GT(lines.size(), 1u);
  std::string joined;
  for (const auto& l : lines) {
    EXPECT_LE(report::text_width(l, 14, true), 300.0) << l;
    joined += (joined.empty() ? "" : " ") + l;
  }
  EXPECT_EQ(joined, title);
  EXPECT_EQ(report::wrap_to_width("unbreakable-word-longer-than-the-width", 20, 11).size(), 1u);
  // A long title becomes several <text> lines inside the chart, never one line past its edge.
  const std::string bars = report::bar_chart("b", title + " " + title, {{"a", 1, 2.0, "", false, false, ""}}, "USD", "cap");
  std::size_t title_lines = 0;
  for (auto p = bars.find("class=\"title\""); p != std::string::npos; p = bars.find("class=\"title\"", p + 1)) ++title_lines;
  EXPECT_GE(title_lines, 3u);
  // A value label starts right of its bar's marker, not on it.
  const std::string mem = report::bar_chart("m", "Memory", {{"gpu", 1.0, 80.0, "", false, false, "1 of 80"}}, "GiB", "usable capacity");
  std::smatch m;
  ASSERT_TRUE(std::regex_search(mem, m, std::regex("class=\"marker\" x1=\"([0-9.]+)\"")));
  const double marker_x = std::stod(m[1]);
  ASSERT_TRUE(std::regex_search(mem, m, std::regex("<text x=\"([0-9.]+)\" y=\"[0-9.]+\" class=\"value\">1 of 80</text>")));
  EXPECT_GT(std::stod(m[1]), marker_x);
  // Two series with the same points are one line with both names, not one line hidden under the other.
  const std::vector<std::pair<double, double>> pts = {{1, 100}, {2, 90}, {4, 80}};
  const std::string lc = report::line_chart("s", "Scaling", {{"h100-sxm (nvlink)", pts, true, false, 0, {}, true},
                                                             {"h200-sxm (nvlink)", pts, true, false, 1, {}, true},
                                                             {"rtx-4090 (pcie)", {{1, 100}, {2, 70}, {4, 50}}, true, true, 2, {}, true}},
                                            {"GPUs", false}, {"%", false});
  std::size_t paths = 0;
  for (auto p = lc.find("<path class=\"mark line\""); p != std::string::npos; p = lc.find("<path class=\"mark line\"", p + 1)) ++paths;
  EXPECT_EQ(paths, 2u);
  EXPECT_NE(lc.find("h100-sxm (nvlink) = h200-sxm (nvlink)"), std::string::npos);
}

TEST(Report, LayoutCheckFindsEachKindOfProblem) {
  // The page script the Chromium test relies on, run on a chart built to break every rule: it must
  // report each problem (so a pass of the real report means something).
  const std::string browser = find_chromium();
  if (browser.empty()) GTEST_SKIP() << "no Chromium installed (scripts/install-deps installs Debian's chromium)";
  gpuvs::test::TempDir dir;
  const std::string bad_chart =
      R"(<svg class="chart" id="bad" viewBox="0 0 400 200" width="400" height="200"><rect class="mark" x="0" y="0" width="5" height="5"/>)"
      R"(<text x="350" y="20" style="font-size:14px">leaves the chart on the right</text>)"
      R"(<text x="20" y="60" style="font-size:14px">first label</text><text x="30" y="62" style="font-size:14px">second label</text>)"
      R"(<line class="marker" x1="60" x2="60" y1="90" y2="120" stroke="#000"/><text x="40" y="110" style="font-size:14px">over the tick</text>)"
      R"(<path class="mark line" d="M10,150 L100,180"/><path class="mark line" d="M10,150 L100,180"/></svg>)";
  const auto html = dir / "bad.html";
  gpuvs::test::write_text(html, "<!DOCTYPE html><html><body>" + bad_chart + "<script>" + report::layout_check_script() + "</script></body></html>");
  const std::string body = body_after_script(browser, html, dir.path());
  ASSERT_FALSE(body.empty());
  EXPECT_GE(attribute(body, "data-layout-problems"), 4) << body;
  EXPECT_NE(body.find("leaves the chart"), std::string::npos) << body;
  EXPECT_NE(body.find("overlaps"), std::string::npos) << body;
  EXPECT_NE(body.find("covers a marker"), std::string::npos) << body;
  EXPECT_NE(body.find("hides under another"), std::string::npos) << body;
}

TEST(Report, EscapesEveryOutsideString) {
  EXPECT_EQ(report::escape("<a href=\"x\">'&'</a>"), "&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;");
  const std::string html = report::render_html(hostile_run());
  EXPECT_EQ(html.find("<script>alert"), std::string::npos);
  EXPECT_EQ(html.find("alert('x')"), std::string::npos);
  EXPECT_NE(html.find("&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;"), std::string::npos);
  // Exactly one script element: the report's own.
  std::size_t scripts = 0;
  for (auto p = html.find("<script"); p != std::string::npos; p = html.find("<script", p + 1)) ++scripts;
  EXPECT_EQ(scripts, 1u);
  const std::string md = report::render_markdown(hostile_run());
  EXPECT_NE(md.find("## Advice"), std::string::npos);
}

TEST(Report, RecordsOfTheWrongShapeRenderOrFailInOneLine) {
  // A stored record is any JSON another program wrote. fuzz_history found a payload that is a string
  // (section_machine read a member of it); members of the wrong kind are skipped like missing ones.
  for (const char* payload : {R"("")", "5", "[]", "null",
                              R"({"devices": "x", "bench": 3, "training": "t", "advice": [1], "calibration": [2], "roofline": {"points": 4},
                                  "cluster": {"collectives": 7, "pairs": "p", "per_node": [1, "a"]}, "serving": {"gpus": 1},
                                  "predictions": 9, "summary": {"a": 1}})",
                              // fuzz_history: a count past int's range was cast to int (undefined behaviour)
                              R"({"devices": {"cpu": {"cores": 7.8e36, "threads": -1e300}}})",
                              // fuzz_history's tree mutator: the same cast, left in the other sections (a batch of 9.22e18)
                              R"({"predictions": [{"unit": "samples/s"}], "measured_here": {"batch": 9.3e18},
                                  "cluster": {"nodes": 1e300, "ranks": -9.3e18, "per_node": [{"node": 1e19}], "pairs": [{"a": 1e30, "b": -1e30}]},
                                  "serving": {"prompt_len": 1e40, "gen_len": -1e40}})"}) {
    const nlohmann::json run = {{"id", 3}, {"created_utc", "2026-12-01T00:00:00Z"}, {"payload", nlohmann::json::parse(payload)}};
    try {
      const std::string html = report::render_html(run), md = report::render_markdown(run);
      EXPECT_NE(html.find("gpuvs report — run 3"), std::string::npos) << payload;
      EXPECT_NE(md.find("# gpuvs report — run 3"), std::string::npos) << payload;
    } catch (const gpuvs::InputError& e) {
      const std::string what = e.what();
      EXPECT_EQ(what.rfind("run 3: its stored record cannot be rendered", 0), 0u) << what;
      EXPECT_EQ(what.find('\n'), std::string::npos) << what;
    }
  }
}

TEST(Report, ExtremeRecordsRenderFiniteBoundedAndEscaped) {
  // Found in review (2026-12-02): no SVG coordinate may be nan or inf, whatever the record holds; one string
  // repeated per element is cut, so a record's size bounds the report's; a cluster run draws a dozen collectives at most (merging lines compared each with every other);
  // Markdown cells escape the record's text.
  auto render = [](const nlohmann::json& payload) {
    const nlohmann::json run = {{"id", 7}, {"created_utc", "2026-12-02T00:00:00Z"}, {"payload", payload}};
    return std::pair{report::render_html(run), report::render_markdown(run)};
  };
  for (const auto& payload : {nlohmann::json::parse(R"({"predictions": [{"gpu": "x", "scaling": [{"gpus": -1e301, "efficiency": 0.01}]}]})"),
                              nlohmann::json::parse(R"({"predictions": [{"gpu": "x", "scaling": [{"gpus": -105, "efficiency": 1}, {"gpus": -100, "efficiency": 1}]}]})"),
                              nlohmann::json::parse(R"({"predictions": [{"gpu": "x", "scaling": [{"gpus": 1, "efficiency": 1e307}]}]})"),
                              nlohmann::json::parse(R"({"predictions": [{"gpu": "g", "throughput": 5, "capacity_gib": -1e308, "peak_gib": 1e308}]})")}) {
    const std::string html = render(payload).first;
    for (const char* bad : {"nan", "inf\"", "=\"-inf", "=\"inf"}) EXPECT_EQ(html.find(bad), std::string::npos) << bad << " in " << payload.dump();
  }
  nlohmann::json preds = nlohmann::json::array();
  for (int i = 0; i < 2000; ++i) preds.push_back({{"gpu", fmt::format("g{}", i)}, {"throughput", i + 1}});
  preds[0]["unit"] = std::string(100000, 'u');  // one unit, written on every bar: 200 MB before
  const std::string big = render({{"predictions", preds}}).first;
  EXPECT_LT(big.size(), std::size_t{10} << 20) << big.size();
  nlohmann::json coll = nlohmann::json::array();
  for (int i = 0; i < 500; ++i) coll.push_back({{"op", fmt::format("op{}", i)}, {"bytes", i + 1}, {"busbw_gbs", 1}});
  const std::string cluster = render({{"cluster", {{"collectives", coll}}}}).first;
  EXPECT_EQ(cluster.find(">op12<"), std::string::npos);
  EXPECT_NE(cluster.find("op11"), std::string::npos);
  const std::string md = render(nlohmann::json::parse(R"({"bench": {"results": [{"key": "a|b\n# x <img src=x onerror=alert(1)>", "status": "ok", "median": 1, "unit": "u"}]}})")).second;
  EXPECT_NE(md.find("| a\\|b # x &lt;img src=x onerror=alert(1)&gt; |"), std::string::npos) << md;
  EXPECT_EQ(md.find("\n# x"), std::string::npos);
}

TEST(Report, HugeListsAndMarkdownMarkupInRecordsAreBoundedAndInert) {
  // Found in review (2026-12-02): each prediction, even a bare 0, drew a bar in three charts with the first
  // prediction's unit in every tooltip, so a 1 MB record made a 1 GB page; Markdown passed links, images and
  // code fences through.
  auto render = [](const nlohmann::json& payload, const std::string& created = "2026-12-02T00:00:00Z") {
    const nlohmann::json run = {{"id", 7}, {"created_utc", created}, {"payload", payload}};
    return std::pair{report::render_html(run), report::render_markdown(run)};
  };
  nlohmann::json preds = nlohmann::json::array({{{"gpu", "g"}, {"throughput", 1}, {"unit", std::string(80, '"')}}});
  for (int i = 0; i < 9999; ++i) preds.push_back(0);
  const auto [html, md] = render({{"predictions", preds}});
  EXPECT_LT(html.size(), std::size_t{100} << 10) << html.size();  // one bar per chart, not ten thousand
  EXPECT_LT(md.size(), std::size_t{10} << 10) << md.size();
  preds.push_back(0);
  try {
    render({{"predictions", preds}});
    ADD_FAILURE() << "10,001 entries rendered";
  } catch (const gpuvs::InputError& e) {
    EXPECT_STREQ(e.what(), "run 7: its stored record lists 10001 entries in 'predictions' (a report renders up to 10000)");
  }
  const std::string marked = render(nlohmann::json::parse(R"({"bench": {"results": [{"key": "![x](https://a.example/p.png) [docs](https://b.example) `c` *e* _u_", "status": "ok", "median": 1, "unit": "u"}]}})"),
                                    "```").second;
  EXPECT_NE(marked.find("| !\\[x\\](https://a.example/p.png) \\[docs\\](https://b.example) \\`c\\` \\*e\\* \\_u\\_ |"), std::string::npos) << marked;
  EXPECT_NE(marked.find("\nRecorded \\`\\`\\` · "), std::string::npos) << marked;
  EXPECT_EQ(marked.find("\n```"), std::string::npos) << marked;
}

TEST(Report, EveryListIsBoundedAndControlBytesAreShownAsText) {
  // Found in review (2026-12-02): the cluster's pairs, the serving curves and their points, a node's ranks and the
  // CPU's features were read whole, past the 10,000 that bound every other list (a million empty pairs built
  // 330 MB of page first); one CPU feature that was not a string lost the whole report; ESC and BEL bytes in a
  // record reached the terminal through the Markdown, and XML forbids them in the inline SVG.
  auto render = [](const nlohmann::json& payload) {
    const nlohmann::json run = {{"id", 3}, {"created_utc", "2026-12-02T00:00:00Z"}, {"payload", payload}};
    return std::pair{report::render_html(run), report::render_markdown(run)};
  };
  const nlohmann::json many = nlohmann::json::array(), one = nlohmann::json::object();
  nlohmann::json pairs = nlohmann::json::array(), ranks = nlohmann::json::array(), points = nlohmann::json::array();
  for (int i = 0; i < 10001; ++i) pairs.push_back(one), ranks.push_back(i), points.push_back(one);
  const std::vector<std::pair<std::string, nlohmann::json>> lists = {
      {"pairs", {{"cluster", {{"pairs", pairs}}}}},
      {"ranks", {{"cluster", {{"per_node", {{{"ranks", ranks}}}}}}}},
      {"curves", {{"serving", {{"curves", pairs}}}}},
      {"points", {{"serving", {{"curves", {{{"gpu", "h100-sxm"}, {"points", points}}}}}}}},
      {"features", {{"devices", {{"cpu", {{"features", ranks}}}}}}},
  };
  for (const auto& [key, payload] : lists) {
    try {
      render(payload);
      ADD_FAILURE() << key << ": 10,001 entries rendered";
    } catch (const gpuvs::InputError& e) {
      EXPECT_EQ(std::string(e.what()), "run 3: its stored record lists 10001 entries in '" + key + "' (a report renders up to 10000)");
    }
  }
  const auto [html, md] = render({{"summary", {"bell\x07 and \x1b]52;c;SGVsbG8=\x07 clear\x1b[2J"}},
                                  {"devices", {{"cpu", {{"model", "x\x7fy"}, {"features", {"avx2", 1, nullptr, "avx512f"}}}}}}});
  EXPECT_NE(html.find("ISA: avx2 avx512f."), std::string::npos) << html;
  EXPECT_NE(html.find("bell\\x07 and \\x1B]52;c;SGVsbG8=\\x07 clear\\x1B[2J"), std::string::npos) << html;
  EXPECT_NE(html.find("x\\x7Fy"), std::string::npos) << html;
  EXPECT_NE(md.find("- bell\\\\x07 and \\\\x1B\\]52;c;SGVsbG8=\\\\x07 clear\\\\x1B\\[2J"), std::string::npos) << md;
  for (const std::string& text : {html, md})
    for (char c : text) EXPECT_FALSE((static_cast<unsigned char>(c) < 0x20 && c != '\n') || c == 0x7F) << static_cast<int>(c);
  // A record built in memory (evaluate renders its own before storing it) can hold NaN, which no sort may meet.
  nlohmann::json preds = nlohmann::json::array();
  for (int i = 0; i < 64; ++i)
    preds.push_back({{"gpu", fmt::format("g{}", i)}, {"throughput", i % 3 ? std::nan("") : i}, {"usd_per_million", i % 2 ? std::nan("") : i}});
  const std::string sorted = render({{"predictions", preds}}).first;
  ASSERT_NE(sorted.find(">g60<"), std::string::npos) << sorted;
  EXPECT_LT(sorted.find(">g63<"), sorted.find(">g60<")) << "the fastest first";
}

TEST(Report, ChartsCarryDataMarksAndTooltips) {
  const std::string bars = report::bar_chart("b", "Speed", {{"a100", 10, 12.0, "note", false, false, ""}, {"h100", 20, std::nullopt, "", true, false, ""}}, "x/s", "cap");
  EXPECT_EQ(std::count(bars.begin(), bars.end(), '\n'), 0);
  std::size_t marks = 0;
  for (auto p = bars.find("<rect class=\"mark"); p != std::string::npos; p = bars.find("<rect class=\"mark", p + 1)) ++marks;
  EXPECT_EQ(marks, 2u);
  EXPECT_NE(bars.find("<title>a100: 10 x/s — note</title>"), std::string::npos);
  const std::string lines = report::line_chart("l", "Roof", {{"s", {{0.1, 1}, {10, 100}, {-1, 5}}, true, false, 0, {}, true}}, {"x", true}, {"y", true});
  EXPECT_NE(lines.find("<path class=\"mark line\""), std::string::npos);
  std::size_t circles = 0;
  for (auto p = lines.find("<circle class=\"mark\""); p != std::string::npos; p = lines.find("<circle class=\"mark\"", p + 1)) ++circles;
  EXPECT_EQ(circles, 2u);  // the non-positive point cannot sit on a log axis and is left out
  // Points at the ends of double's range: a log axis from 5e-324 rounded down to 0, and one to 1.8e308 up to
  // infinity, and the decade ticks never ended (4 GiB; found by fuzz_history). A dozen ticks or so, each axis.
  for (const auto& points : std::vector<std::vector<std::pair<double, double>>>{{{5e-324, 1}, {10, 1e308}}, {{1e-5, 1.7e308}, {1.7e308, 5e-324}}}) {
    const std::string extreme = report::line_chart("e", "Extremes", {{"s", points, true, false, 0, {}, true}}, {"x", true}, {"y", true});
    std::size_t ticks = 0;
    for (auto p = extreme.find("class=\"tick\""); p != std::string::npos; p = extreme.find("class=\"tick\"", p + 1)) ++ticks;
    EXPECT_GE(ticks, 4u);
    EXPECT_LE(ticks, 40u);
    EXPECT_EQ(extreme.find("nan"), std::string::npos);
    EXPECT_EQ(extreme.find("inf"), std::string::npos);
  }
}

// Issue 36: a chart copied out of the report (into slides, another page) renders and reads the same: its own
// namespace, font and colours, and a title and a text alternative naming every figure.
TEST(Report, EachChartIsADocumentOfItsOwn) {
  const std::string bars = report::bar_chart("speed", "Speed <&>", {{"a100", 10, 12.0, "", false, false, ""}, {"4090", 20, std::nullopt, "", false, true, ""}},
                                             "x/s", "capacity");
  const std::string lines = report::line_chart("roof", "Roof", {{"fp16", {{1, 2}, {10, 20}}, true, false, 0, {}, true}}, {"intensity", true}, {"TFLOP/s", false});
  for (const std::string& chart : {bars, lines}) {
    EXPECT_EQ(chart.rfind(R"(<svg xmlns="http://www.w3.org/2000/svg" class="chart")", 0), 0u) << chart.substr(0, 120);
    EXPECT_NE(chart.find("font-family=\""), std::string::npos);
    EXPECT_NE(chart.find("<style>svg.chart .title{"), std::string::npos);
    EXPECT_NE(chart.find("svg.chart rect.bar.measured{fill:#59a14f}"), std::string::npos);
    EXPECT_EQ(chart.find("<style>.label"), std::string::npos) << "every rule scoped to svg.chart (a page's .label is not a chart's)";
  }
  EXPECT_NE(bars.find(R"(aria-labelledby="speed-title speed-desc")"), std::string::npos);
  EXPECT_NE(bars.find(R"(<title id="speed-title">Speed &lt;&amp;&gt;</title>)"), std::string::npos);
  EXPECT_NE(bars.find(R"(<desc id="speed-desc">Bar chart, x/s: a100 10 (capacity 12); 4090 (measured) 20;</desc>)"), std::string::npos) << bars;
  // Series told apart by shape as well as colour, the legend showing each shape (not a data mark).
  std::vector<report::Series> four;
  for (int k = 0; k < 4; ++k) four.push_back({"s" + std::to_string(k), {{1, 1.0 + k}, {2, 2.0 + k}}, true, false, k, {}, true});
  const std::string shapes = report::line_chart("shapes", "Four", four, {"x", false}, {"y", false});
  auto count = [&](const std::string& what) {
    std::size_t n = 0;
    for (auto p = shapes.find(what); p != std::string::npos; p = shapes.find(what, p + 1)) ++n;
    return n;
  };
  EXPECT_EQ(count(R"(<circle class="mark")"), 2u);
  EXPECT_EQ(count(R"(<rect class="mark")"), 2u);
  EXPECT_EQ(count(R"(<path class="mark" d=)"), 4u);  // triangles and diamonds
  EXPECT_EQ(count(R"(class="key")"), 4u);
  EXPECT_NE(lines.find(R"(<desc id="roof-desc">Line chart, x: intensity (log scale), y: TFLOP/s; series: fp16 (1 2, 10 20);</desc>)"), std::string::npos)
      << lines;
}

TEST(Report, AClusterRunShowsItsNodesCollectivesAndPairsCleanly) {
  // An evaluate under MPI (two ranks on loopback): the cluster's section, laid out without overlaps.
  const std::string browser = find_chromium();
  if (browser.empty()) GTEST_SKIP() << "no Chromium installed (scripts/install-deps installs Debian's chromium)";
  gpuvs::test::TempDir dir;
  const auto html = dir / "cluster.html";
  // LeakSanitizer off for the ranks in the sanitized suite: Open MPI's components leak at exit (test_dist says more).
  const char* asan = std::getenv("ASAN_OPTIONS");
  const std::string cmd = "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 ASAN_OPTIONS='" + std::string(asan ? asan : "") +
                          (asan ? ":" : "") + "detect_leaks=0' mpirun --oversubscribe -np 2 " + std::string(GPUVS_BINARY) +
                          " evaluate --rows 2000 --epochs 1 --threads 1 --db " + (dir / "h.db").string() + " --report " + html.string() +
                          " >/dev/null 2>&1";
  ASSERT_EQ(std::system(cmd.c_str()), 0);
  const std::string report = gpuvs::test::slurp(html);
  EXPECT_NE(report.find("The cluster: 2 ranks on 1 node"), std::string::npos);
  EXPECT_NE(report.find("id=\"cluster-busbw\""), std::string::npos);
  EXPECT_NE(report.find("id=\"cluster-pairs\""), std::string::npos);
  EXPECT_NE(report.find("one node: no inter-node link to measure"), std::string::npos);
  // No GPU on the ranks here: the NCCL half of the sweep says why it did not run.
  EXPECT_NE(report.find("NCCL between GPUs: not measured (rank 0 cannot join an NCCL group: "), std::string::npos);
  const std::string body = body_after_script(browser, html, dir.path());
  EXPECT_EQ(attribute(body, "data-charts"), attribute(body, "data-charts-ok")) << body;
  EXPECT_EQ(attribute(body, "data-layout-problems"), 0) << body;
}

TEST(Report, RendersInHeadlessChromium) {
  const std::string browser = find_chromium();
  if (browser.empty()) GTEST_SKIP() << "no Chromium installed (scripts/install-deps installs Debian's chromium)";
  gpuvs::test::TempDir dir;
  const auto html = dir / "report.html";
  const auto r = gpuvs::test::run_gpuvs("evaluate --rows 2000 --epochs 1 --threads 1 --db " + (dir / "h.db").string() + " --report " +
                                        html.string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ASSERT_TRUE(std::filesystem::exists(html));
  const std::string report = gpuvs::test::slurp(html);
  // The machine that ran evaluate stands beside the predicted GPUs, measured, in the summary too.
  EXPECT_NE(report.find("<tr class=\"measured\"><td>this machine (measured)</td>"), std::string::npos);
  EXPECT_NE(r.out.find("This machine (measured): "), std::string::npos) << r.out;
  EXPECT_FALSE(std::regex_search(report, std::regex("<td[^>]*>[^<]*\\de[+-]\\d"))) << "a table cell in exponent notation";
  const std::string flags = kChromiumFlags + " --user-data-dir=" + (dir / "profile").string();
  // DOM after the page's script ran, with the console captured.
  const std::string dom_cmd = browser + flags + " --enable-logging=stderr --v=0 --dump-dom " + html.string() + " >" +
                              (dir / "dom.html").string() + " 2>" + (dir / "console.log").string();
  ASSERT_EQ(std::system(("timeout 120 " + dom_cmd).c_str()), 0) << gpuvs::test::slurp(dir / "console.log");
  const std::string dom = gpuvs::test::slurp(dir / "dom.html");
  std::smatch m;
  ASSERT_TRUE(std::regex_search(dom, m, std::regex("<body[^>]*>"))) << dom.substr(0, 400);
  const std::string body = m.str();
  EXPECT_GE(attribute(body, "data-charts"), 5) << body;  // roofline, throughput, cost, memory, scaling
  EXPECT_EQ(attribute(body, "data-charts"), attribute(body, "data-charts-ok")) << "a chart has no data";
  // No text leaves its chart, none overlaps other text or a marker, no line hides another.
  EXPECT_EQ(attribute(body, "data-layout-problems"), 0) << body;
  // The same at a narrow window, where the charts are scaled down.
  const std::string narrow = "timeout 120 " + browser + flags + " --window-size=640,3000 --dump-dom " + html.string() + " >" +
                             (dir / "narrow.html").string() + " 2>/dev/null";
  ASSERT_EQ(std::system(narrow.c_str()), 0);
  const std::string ndom = gpuvs::test::slurp(dir / "narrow.html");
  ASSERT_TRUE(std::regex_search(ndom, m, std::regex("<body[^>]*>")));
  EXPECT_EQ(attribute(m.str(), "data-layout-problems"), 0) << m.str();
  const std::string console = gpuvs::test::slurp(dir / "console.log");
  EXPECT_EQ(console.find(":CONSOLE"), std::string::npos) << console;
  // A screenshot of the whole report.
  const auto png = dir / "shot.png";
  const std::string shot = "timeout 120 " + browser + flags + " --window-size=1200,4000 --screenshot=" + png.string() + " " + html.string() +
                           " >/dev/null 2>&1";
  ASSERT_EQ(std::system(shot.c_str()), 0);
  const std::string bytes = gpuvs::test::slurp(png);
  ASSERT_GT(bytes.size(), 8u);
  EXPECT_EQ(bytes.substr(1, 3), "PNG");
  EXPECT_GT(bytes.size(), 100u * 1024) << "a near-empty page";
}

// A decoder served under in-flight batching: evaluate records each card's latency against load and the
// report draws it (throughput against requests in flight, p99 latency against requests/s) within the same
// layout rules.
TEST(Report, ServingChartsRenderInHeadlessChromium) {
  const std::string browser = find_chromium();
  if (browser.empty()) GTEST_SKIP() << "no Chromium installed (scripts/install-deps installs Debian's chromium)";
  gpuvs::test::TempDir dir;
  gpuvs::test::write_text(dir / "serve.toml", "task = \"infer\"\nworkload = \"llama3-8b\"\nrequests_per_s = 5\nseq_len = 512\ngen_len = 256\n");
  const auto html = dir / "report.html";
  const auto r = gpuvs::test::run_gpuvs("evaluate --rows 2000 --epochs 1 --threads 1 --workload llama3-8b --scenario " +
                                        (dir / "serve.toml").string() + " --db " + (dir / "h.db").string() + " --report " + html.string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string report = gpuvs::test::slurp(html);
  EXPECT_NE(report.find("id=\"serving-throughput\""), std::string::npos);
  EXPECT_NE(report.find("id=\"serving-latency\""), std::string::npos);
  EXPECT_NE(report.find("requests of 512 prompt + 256 generated tokens"), std::string::npos);
  const std::string flags = kChromiumFlags + " --user-data-dir=" + (dir / "profile").string();
  const std::string cmd = "timeout 120 " + browser + flags + " --dump-dom " + html.string() + " >" + (dir / "dom.html").string() + " 2>/dev/null";
  ASSERT_EQ(std::system(cmd.c_str()), 0);
  std::smatch m;
  const std::string dom = gpuvs::test::slurp(dir / "dom.html");
  ASSERT_TRUE(std::regex_search(dom, m, std::regex("<body[^>]*>")));
  EXPECT_GE(attribute(m.str(), "data-charts"), 7) << m.str();  // the five of every report and the two serving charts
  EXPECT_EQ(attribute(m.str(), "data-charts"), attribute(m.str(), "data-charts-ok"));
  EXPECT_EQ(attribute(m.str(), "data-layout-problems"), 0) << m.str();
}

namespace {

/// The percent-encoded text after "data:text/csv;charset=utf-8," decoded.
std::string decoded_csv(const std::string& uri) {
  std::string out;
  for (std::size_t i = 0; i < uri.size(); ++i) {
    if (uri[i] == '%' && i + 2 < uri.size()) {
      out += static_cast<char>(std::stoi(uri.substr(i + 1, 2), nullptr, 16));
      i += 2;
    } else {
      out += uri[i];
    }
  }
  return out;
}

/// WCAG 2.x contrast ratio of two #rrggbb colours.
double contrast(const std::string& a, const std::string& b) {
  const auto luminance = [](const std::string& hex) {
    double l = 0;
    const double weight[] = {0.2126, 0.7152, 0.0722};
    for (int k = 0; k < 3; ++k) {
      const double c = std::stoi(hex.substr(1 + 2 * k, 2), nullptr, 16) / 255.0;
      l += weight[k] * (c <= 0.04045 ? c / 12.92 : std::pow((c + 0.055) / 1.055, 2.4));
    }
    return l;
  };
  const double la = luminance(a), lb = luminance(b);
  return (std::max(la, lb) + 0.05) / (std::min(la, lb) + 0.05);
}

}  // namespace

// Every chart has its figures in a table beside it, and every table of the report downloads as CSV.
TEST(Report, EveryChartHasItsFiguresAndEveryTableItsCsv) {
  const std::string bars = report::bar_chart("speed", "Speed", {{"a100, SXM", 10, 12.0, "fits", false, false, ""}, {"4090", 20, std::nullopt, "", false, true, ""}},
                                             "x/s", "capacity");
  EXPECT_NE(bars.find("</svg><details class=\"figures\"><summary>The figures in this chart</summary><table><tr><th>bar</th><th>value (x/s)</th>"
                      "<th>capacity</th><th>note</th></tr><tr><td>a100, SXM</td><td>10</td><td>12</td><td>fits</td></tr>"
                      "<tr><td>4090 (measured)</td><td>20</td><td></td><td></td></tr></table></details>"),
            std::string::npos)
      << bars;
  const std::string lines =
      report::line_chart("roof", "Roof", {{"fp16", {{0.00012, 2}, {10, 20000}}, true, false, 0, {"tiny", "big"}, true}}, {"intensity", true}, {"TFLOP/s", false});
  EXPECT_NE(lines.find("<tr><th>series</th><th>intensity</th><th>TFLOP/s</th><th>point</th></tr><tr><td>fp16</td><td>0.000120</td><td>2</td>"
                       "<td>tiny</td></tr><tr><td>fp16</td><td>10</td><td>20k</td><td>big</td></tr>"),
            std::string::npos)
      << lines;
  // A figure that rounds up to the next prefix takes it: never exponent notation in a cell or on an axis.
  const std::string round_up = report::bar_chart("r", "R", {{"a", 999.7, std::nullopt, "", false, false, ""}, {"b", 999600, std::nullopt, "", false, false, ""}}, "u");
  EXPECT_NE(round_up.find("<td>a</td><td>1k</td>"), std::string::npos) << round_up;
  EXPECT_NE(round_up.find("<td>b</td><td>1M</td>"), std::string::npos) << round_up;
  EXPECT_EQ(round_up.find("e+0"), std::string::npos) << round_up;
  const std::string html = report::render_html(seed_like_run());
  std::size_t tables = 0, links = 0;
  for (auto p = html.find("<table"); p != std::string::npos; p = html.find("<table", p + 1)) ++tables;
  for (auto p = html.find("download=\"gpuvs-run-"); p != std::string::npos; p = html.find("download=\"gpuvs-run-", p + 1)) ++links;
  EXPECT_GT(tables, 3u);
  EXPECT_EQ(links, tables);
  // The first table's CSV is its header row and its rows, quoted where a field holds a comma.
  std::smatch m;
  ASSERT_TRUE(std::regex_search(html, m, std::regex("href=\"data:text/csv;charset=utf-8,([^\"]*)\"")));
  const std::string csv = decoded_csv(m[1].str());
  EXPECT_NE(csv.find("\r\n"), std::string::npos) << csv;
  EXPECT_EQ(csv.find("<td"), std::string::npos) << csv;
  EXPECT_EQ(csv.find("  EXPECT_EQ(csv.find('<'), std::string::npos) << csv;amp;"), std::string::npos) << csv;
  const std::string one = report::render_html(seed_like_run());
  EXPECT_EQ(one, html);  // the same record, the same report
}

// Caveats and notes are text people must read: every text colour the report's stylesheet sets meets WCAG AA
// (4.5:1) on every background it sets.
TEST(Report, TextMeetsWcagAaContrastOnEveryBackground) {
  const std::string html = report::render_html(seed_like_run());
  std::vector<std::string> texts, backgrounds;
  const std::regex text_rule(R"([{;]color:(#[0-9a-fA-F]{6}))"), background_rule(R"(background:(#[0-9a-fA-F]{6}))");
  for (auto it = std::sregex_iterator(html.begin(), html.end(), text_rule); it != std::sregex_iterator(); ++it) texts.push_back((*it)[1].str());
  for (auto it = std::sregex_iterator(html.begin(), html.end(), background_rule); it != std::sregex_iterator(); ++it)
    backgrounds.push_back((*it)[1].str());
  ASSERT_GE(backgrounds.size(), 3u) << "the page's, the headers' and the measured rows' backgrounds were not found";
  ASSERT_GE(texts.size(), 4u) << "the text colours (body, .meta, .ok, .bad, .muted) were not found";
  for (const auto& t : texts)
    for (const auto& b : backgrounds) EXPECT_GE(contrast(t, b), 4.5) << t << " on " << b;
  EXPECT_NE(html.find(".muted{color:#595959}"), std::string::npos);
}
