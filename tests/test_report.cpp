// The report: escaping of every outside string, charts with content, Markdown, and — the real test — a
// report written by a real `gpuvs evaluate` rendered by headless Chromium: a screenshot is taken, the
// page logs nothing to the console, and every chart has data marks after the page's script has run.
#include <gtest/gtest.h>

#include <cstdlib>
#include <regex>

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

}  // namespace

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

TEST(Report, ChartsCarryDataMarksAndTooltips) {
  const std::string bars = report::bar_chart("b", "Speed", {{"a100", 10, 12.0, "note", false}, {"h100", 20, std::nullopt, "", true}}, "x/s", "cap");
  EXPECT_EQ(std::count(bars.begin(), bars.end(), '\n'), 0);
  std::size_t marks = 0;
  for (auto p = bars.find("<rect class=\"mark"); p != std::string::npos; p = bars.find("<rect class=\"mark", p + 1)) ++marks;
  EXPECT_EQ(marks, 2u);
  EXPECT_NE(bars.find("<title>a100: 10 x/s — note</title>"), std::string::npos);
  const std::string lines = report::line_chart("l", "Roof", {{"s", {{0.1, 1}, {10, 100}, {-1, 5}}, true, false, 0, {}, true}}, {"x", true}, {"y", true});
  EXPECT_NE(lines.find("<path class=\"mark line\""), std::string::npos);
  std::size_t circles = 0;
  for (auto p = lines.find("<circle"); p != std::string::npos; p = lines.find("<circle", p + 1)) ++circles;
  EXPECT_EQ(circles, 2u);  // the non-positive point cannot sit on a log axis and is left out
}

TEST(Report, RendersInHeadlessChromium) {
  const char* candidates[] = {"chromium", "chromium-browser", "google-chrome"};
  std::string browser;
  for (const char* c : candidates)
    if (std::system((std::string("command -v ") + c + " >/dev/null 2>&1").c_str()) == 0) {
      browser = c;
      break;
    }
  if (browser.empty()) GTEST_SKIP() << "no Chromium installed (scripts/install-deps installs Debian's chromium)";
  gpuvs::test::TempDir dir;
  const auto html = dir / "report.html";
  const auto r = gpuvs::test::run_gpuvs("evaluate --rows 2000 --epochs 1 --threads 1 --db " + (dir / "h.db").string() + " --report " +
                                        html.string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ASSERT_TRUE(std::filesystem::exists(html));
  const std::string flags = " --headless --no-sandbox --disable-gpu --hide-scrollbars --no-first-run --user-data-dir=" + (dir / "profile").string();
  // DOM after the page's script ran, with the console captured.
  const std::string dom_cmd = browser + flags + " --enable-logging=stderr --v=0 --dump-dom " + html.string() + " >" +
                              (dir / "dom.html").string() + " 2>" + (dir / "console.log").string();
  ASSERT_EQ(std::system(("timeout 120 " + dom_cmd).c_str()), 0) << gpuvs::test::slurp(dir / "console.log");
  const std::string dom = gpuvs::test::slurp(dir / "dom.html");
  std::smatch m;
  ASSERT_TRUE(std::regex_search(dom, m, std::regex("data-charts=\"(\\d+)\" data-charts-ok=\"(\\d+)\""))) << dom.substr(0, 400);
  EXPECT_GE(std::stoi(m[1]), 5);  // roofline, throughput, cost, memory, scaling
  EXPECT_EQ(m[1], m[2]) << "a chart has no data";
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
