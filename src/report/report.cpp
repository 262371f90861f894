// SPDX-License-Identifier: Apache-2.0
#include "report/report.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>

#include "catalog/featured.hpp"
#include "core/error.hpp"
#include "core/strings.hpp"
#include "core/units.hpp"
#include "report/evaluate_record.hpp"
#include "report/svg.hpp"

namespace gpuvs::report {

namespace {

// In the first 4 KiB of every report: how the output policy knows a report gpuvs wrote (older reports have it too).
constexpr const char* kHtmlSignature = "<title>gpuvs report";

using json = nlohmann::json;

/// Record text written once per element of another list (a unit per bar, a driver per GPU, a link per point),
/// cut to 80 bytes at a character boundary: a record's size, not its size squared, bounds the report's.
std::string shortened(const std::string& text) {
  constexpr std::size_t kMost = 80;
  if (text.size() <= kMost) return text;
  std::size_t cut = kMost;
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;  // not inside a UTF-8 sequence
  return text.substr(0, cut) + "…";
}

std::string str(const json& j, const char* key, const std::string& fallback = "") {
  return j.is_object() && j.contains(key) && j[key].is_string() ? j[key].get<std::string>() : fallback;
}
double dbl(const json& j, const char* key, double fallback = 0) {
  return j.is_object() && j.contains(key) && j[key].is_number() ? j[key].get<double>() : fallback;
}
bool has(const json& j, const char* key) { return j.is_object() && j.contains(key) && !j[key].is_null(); }
bool flag(const json& j, const char* key) { return j.is_object() && j.contains(key) && j[key].is_boolean() && j[key].get<bool>(); }
// A record's member of the expected kind, else an empty one: a stored record may have been written by anything.
const json& obj(const json& j, const char* key) {
  static const json empty = json::object();
  return j.is_object() && j.contains(key) && j[key].is_object() ? j[key] : empty;
}
/// The most entries of one list a report renders, and the most bytes a report may be: gpuvs's own records
/// list tens (a catalog's GPUs, a run's epochs, a sweep's sizes), and one entry can become a kilobyte of report
/// in each of three charts and a table, so a small record of a million empty entries made gigabytes.
constexpr std::size_t kMostListed = 10000;
constexpr std::size_t kMostReportBytes = std::size_t{64} << 20;
struct ListTooLong {
  std::string key;
  std::size_t size;
};
/// A section of the record as the kind expected, else an empty one.
const json& as_obj(const json& j) {
  static const json empty = json::object();
  return j.is_object() ? j : empty;
}
const json& as_list(const json& j, const char* key) {
  static const json empty = json::array();
  if (!j.is_array()) return empty;
  if (j.size() > kMostListed) throw ListTooLong{key, j.size()};
  return j;
}
const json& arr(const json& j, const char* key) {
  static const json none = nullptr;
  return as_list(j.is_object() && j.contains(key) ? j[key] : none, key);
}

std::string fmt_num(double v, const char* spec) { return fmt::format(fmt::runtime(spec), v); }

std::string human(double v, int sig = 3) { return std::isfinite(v) ? units::format_plain(v, sig) : "N/A"; }

const char* const kStyle = R"CSS(
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0;color:#1b1b1b;background:#fafafa}
main{max-width:1100px;margin:0 auto;padding:24px}
h1{font-size:24px;margin:0 0 4px}h2{font-size:18px;margin:28px 0 8px;border-bottom:1px solid #ddd;padding-bottom:4px}
.meta{color:#555}.summary li{margin:3px 0}
table{border-collapse:collapse;margin:8px 0;background:#fff;font-size:13px}
th,td{border:1px solid #ddd;padding:4px 8px;text-align:left;vertical-align:top}th{background:#f0f0f0}
td.n{text-align:right;font-variant-numeric:tabular-nums}
svg.chart{background:#fff;border:1px solid #e3e3e3;margin:8px 0;max-width:100%;height:auto}
tr.measured td{background:#eef7ec}
.ok{color:#166b2e}.bad{color:#b42318}.muted{color:#595959}
)CSS";

// The script only checks what the Chromium test reads back: every chart has data marks, and no chart's
// text leaves the chart or overlaps other text (counts and the first problems go into body attributes).
const char* const kScript = R"JS(
(function(){var c=document.querySelectorAll('svg.chart'),ok=0,empty=[],bad=[];
function cross(a,b){return Math.min(a.right,b.right)-Math.max(a.left,b.left)>0.5&&Math.min(a.bottom,b.bottom)-Math.max(a.top,b.top)>0.5;}
c.forEach(function(s){if(s.querySelectorAll('.mark').length>0)ok++;else empty.push(s.id);
var box=s.getBoundingClientRect(),t=s.querySelectorAll('text'),r=[];
t.forEach(function(e){var b=e.getBoundingClientRect();r.push(b);
if(b.left<box.left-0.5||b.right>box.right+0.5||b.top<box.top-0.5||b.bottom>box.bottom+0.5)bad.push(s.id+': "'+e.textContent+'" leaves the chart');});
for(var i=0;i<r.length;i++)for(var j=i+1;j<r.length;j++)if(cross(r[i],r[j]))bad.push(s.id+': "'+t[i].textContent+'" overlaps "'+t[j].textContent+'"');
s.querySelectorAll('line.marker').forEach(function(m){var mb=m.getBoundingClientRect();
for(var i=0;i<r.length;i++)if(cross(r[i],{left:mb.left-1,right:mb.right+1,top:mb.top,bottom:mb.bottom}))bad.push(s.id+': "'+t[i].textContent+'" covers a marker');});
var seen={};s.querySelectorAll('path.line').forEach(function(p){var d=p.getAttribute('d');if(seen[d])bad.push(s.id+': a line hides under another');seen[d]=1;});});
var b=document.body;b.setAttribute('data-charts',c.length);b.setAttribute('data-charts-ok',ok);b.setAttribute('data-layout-problems',bad.length);
if(bad.length)b.setAttribute('data-layout-detail',bad.slice(0,20).join(' | '));
if(empty.length)console.error('empty charts: '+empty.join(','));})();
)JS";

/// A count from a stored record, as text: a record is anyone's JSON, and casting 7.8e36 to int is undefined
/// behaviour (found by fuzz_history), so out-of-range or non-finite values print as they are, never cast.
std::string whole(double v) {
  if (!std::isfinite(v)) return "?";
  return std::fabs(v) < 1e15 ? fmt::format("{:.0f}", v) : fmt::format("{:.3g}", v);
}

/// The CPU's ISA features as one line: the record's strings, whatever else the list holds skipped.
std::string features(const json& cpu) {
  std::vector<std::string> names;
  for (const auto& f : arr(cpu, "features"))
    if (f.is_string()) names.push_back(f.get<std::string>());
  return strings::join(names, " ");
}

std::string section_machine(const EvaluateRecord& r) {
  std::string s = "<h2>This machine</h2>";
  const json& d = as_obj(r.devices);
  const json& cpu = obj(d, "cpu");
  s += fmt::format("<p>CPU: {} — {} cores, {} threads; memory {:.1f} GiB. ISA: {}.</p>", escape(str(cpu, "model", "?")),
                   whole(dbl(cpu, "cores")), whole(dbl(cpu, "threads")), dbl(cpu, "memory_bytes") / 1073741824.0,
                   escape(features(cpu)));
  const json& nv = obj(d, "nvidia");
  if (str(nv, "status") == "ok") {
    for (const auto& g : arr(nv, "gpus"))
      s += fmt::format("<p>GPU {}: {} (catalog: {}), {:.1f} GiB, driver {}.</p>", whole(dbl(g, "index")), escape(str(g, "name")),
                       escape(g.contains("catalog_id") && g["catalog_id"].is_string() ? g["catalog_id"].get<std::string>() : "no match"),
                       dbl(g, "memory_total_bytes") / 1073741824.0, escape(shortened(str(nv, "driver_version", "?"))));
  } else {
    s += fmt::format("<p>GPU: none — {}.</p>", escape(str(nv, "detail", "not probed")));
  }
  s += fmt::format("<p class=\"muted\">{}</p>", escape(str(d, "cuda_plugin")));
  return s;
}

std::string section_bench(const EvaluateRecord& r) {
  if (r.bench.is_null()) return "";
  std::string s = "<h2>Measured: benchmarks</h2>";
  const json& rl = as_obj(r.roofline);
  if (has(rl, "peak_gflops") && has(rl, "bandwidth_gbs")) {
    const double peak = dbl(rl, "peak_gflops"), bw = dbl(rl, "bandwidth_gbs");
    std::vector<Series> series;
    Series roof{"roof (peak, bandwidth)", {}, true, false, 8, {}};
    roof.markers = false;
    for (double i = 1.0 / 64; i <= 1024; i *= 2) roof.points.emplace_back(i, std::min(peak, bw * i));
    series.push_back(roof);
    Series bench{"measured benchmarks", {}, false, false, 1, {}};
    for (const auto& pt : arr(rl, "points")) {
      bench.points.emplace_back(dbl(pt, "intensity"), dbl(pt, "gflops"));
      bench.point_labels.push_back(str(pt, "label"));
    }
    if (!bench.points.empty()) series.push_back(bench);
    Series ops{fmt::format("{} training-step ops", str(rl, "workload", "workload")), {}, false, false, 2, {}};
    for (const auto& op : arr(rl, "ops")) {
      if (dbl(op, "intensity") <= 0 || dbl(op, "gflops") <= 0) continue;
      ops.points.emplace_back(dbl(op, "intensity"), dbl(op, "gflops"));
      ops.point_labels.push_back(str(op, "name"));
    }
    if (!ops.points.empty()) series.push_back(ops);
    s += line_chart("roofline", fmt::format("Roofline of {}: {} GFLOP/s peak, {} GB/s", str(rl, "device", "this device"), human(peak),
                                            human(bw)),
                    series, {"arithmetic intensity (FLOP/byte)", true}, {"GFLOP/s", true});
    s += "<p class=\"muted\">Points are measured: benchmarks, and each op of the training step timed by the engine at its "
         "graph FLOPs and minimum bytes. Ops above the bandwidth roof ran from cache: their working set is smaller than the "
         "last-level cache, so main-memory bandwidth does not bound them.</p>";
  }
  s += "<table><tr><th>benchmark</th><th>device</th><th>median</th><th>unit</th><th>spread %</th><th>spec</th><th>% of spec</th><th>status / note</th></tr>";
  // Waived benchmarks, one line per reason (19 GPU rows repeating one driver message told nothing 19 times);
  // a spread past 20% is said beside the figure: a loaded machine measures in ranges.
  std::vector<std::pair<std::string, std::vector<std::string>>> waived;
  for (const auto& row : arr(as_obj(r.bench), "results")) {
    if (str(row, "status") != "waived") continue;
    const std::string why = shortened(str(row, "note"));
    auto it = std::find_if(waived.begin(), waived.end(), [&](const auto& w) { return w.first == why; });
    if (it == waived.end()) waived.push_back({why, {shortened(str(row, "key"))}});
    else it->second.push_back(shortened(str(row, "key")));
  }
  for (const auto& row : arr(as_obj(r.bench), "results")) {
    if (str(row, "status") == "waived") continue;
    const bool ok = str(row, "status") == "ok";
    const bool noisy = ok && dbl(row, "spread") > 0.2;
    s += fmt::format("<tr><td>{}</td><td>{}</td><td class=n>{}</td><td>{}</td><td class=n>{}</td><td class=n>{}</td><td class=n>{}</td><td class={}>{}</td></tr>",
                     escape(str(row, "key")), escape(str(row, "device")), ok ? human(dbl(row, "median"), 4) : "N/A", escape(str(row, "unit")),
                     ok ? fmt_num(100 * dbl(row, "spread"), "{:.1f}") : "N/A", has(row, "spec") ? human(dbl(row, "spec"), 4) : "N/A",
                     has(row, "pct_of_spec") ? fmt_num(dbl(row, "pct_of_spec"), "{:.1f}") : "N/A",
                     noisy ? "bad" : ok ? "muted" : (str(row, "status") == "FAILED" ? "bad" : "muted"),
                     escape((noisy ? fmt::format("spread {:.0f}% between repetitions: a loaded machine? ", 100 * dbl(row, "spread")) : "") +
                            (ok ? "" : str(row, "status") + ": ") + str(row, "note")));
  }
  for (const auto& [why, keys] : waived)
    s += fmt::format("<tr><td colspan=7>{} waived: {}</td><td class=muted>{}</td></tr>", keys.size(), escape(strings::join(keys, ", ")),
                     escape(why));
  return s + "</table>";
}

std::string section_training(const EvaluateRecord& r) {
  if (r.training.is_null()) return "";
  const json& t = r.training;
  std::string s = "<h2>Measured: training the seed workload</h2>";
  s += fmt::format("<p>{} on {} ({} threads, GEMM {}): <b>{} samples/s</b>, step median {}.</p>", escape(str(t, "workload")),
                   escape(str(t, "device")), whole(dbl(t, "threads")), escape(str(t, "gemm")), units::format_si(dbl(t, "samples_per_s")),
                   units::format_seconds(dbl(t, "step_time_median_s")));
  s += "<table><tr><th>epoch</th><th>loss</th><th>accuracy</th><th>val loss</th><th>val accuracy</th><th>samples/s</th></tr>";
  for (const auto& e : arr(t, "history"))
    s += fmt::format("<tr><td class=n>{}</td><td class=n>{:.4f}</td><td class=n>{:.4f}</td><td class=n>{:.4f}</td><td class=n>{:.4f}</td><td class=n>{:.0f}</td></tr>",
                     whole(dbl(e, "epoch")), dbl(e, "loss"), dbl(e, "accuracy"), dbl(e, "val_loss"), dbl(e, "val_accuracy"),
                     dbl(e, "samples_per_s"));
  return s + "</table>";
}

/// "this machine (measured)" beside the predictions: the payload's measured_here entry (evaluate writes it
/// when the machine trained the predicted workload itself), or null.
const json* measured_here(const EvaluateRecord& r) {
  return r.measured_here.is_object() ? &r.measured_here : nullptr;
}

std::string section_predictions(const EvaluateRecord& r) {
  const json& preds = as_list(r.predictions, "predictions");
  if (preds.empty()) return "";
  const json* here = measured_here(r);
  const std::string unit = shortened(str(preds[0], "unit", "samples/s"));
  const std::string what = unit.substr(0, unit.find('/'));
  std::string s = fmt::format("<h2>Predicted: {} on the catalog GPUs</h2>", escape(r.workload));
  s += fmt::format("<p class=\"muted\">{}</p>", escape(r.prediction_note));
  if (here)
    s += fmt::format("<p><b>This machine (measured)</b>: {} trains {} at <b>{} {}</b> (batch {}, {}). {}</p>",
                     escape(str(*here, "device")), escape(str(*here, "workload")), escape(units::format_si(dbl(*here, "throughput"))),
                     escape(unit), whole(dbl(*here, "batch")), escape(str(*here, "precision")), escape(str(*here, "verdict")));
  else if (!r.measured_here_note.empty())
    s += fmt::format("<p class=\"muted\">{}</p>", escape(r.measured_here_note));
  std::vector<Bar> speed, cost, mem;
  // The cost chart compares on one basis: owning each card where the record prices it for every card (rent
  // exists for some cards only, and bars of two bases side by side compare nothing), else the record's basis.
  bool owned_basis = false;
  for (const auto& e : preds) owned_basis = owned_basis || has(e, "owned_usd_per_million");
  const char* cost_key = owned_basis ? "owned_usd_per_million" : "usd_per_million";
  // Costs per million units can be tiny for small models: show them per billion then.
  double max_cost = here ? dbl(*here, "usd_per_million") : 0;
  for (const auto& e : preds) max_cost = std::max(max_cost, dbl(e, cost_key));
  const double cost_scale = max_cost > 0 && max_cost < 0.01 ? 1000 : 1;
  const std::string per = cost_scale > 1 ? "billion" : "million";
  auto band = [&](const json& e) {
    return fmt::format("{}–{}", units::format_si(dbl(e, "band_low")), units::format_si(dbl(e, "band_high")));
  };
  for (const auto& e : preds) {
    if (!e.is_object()) continue;  // no bar for what is no prediction
    const std::string id = str(e, "gpu");
    const bool local = flag(e, "local");
    speed.push_back({id, dbl(e, "throughput"), std::nullopt,
                     fmt::format("band {} {}{}{}", band(e), unit, flag(e, "calibrated") ? ", calibrated" : "",
                                 flag(e, "measured_applied") ? fmt::format(", with your measurement (without: {})", units::format_si(dbl(e, "without_measured")))
                                                             : ""),
                     local, false, ""});
    if (has(e, cost_key))
      cost.push_back({id, dbl(e, cost_key) * cost_scale, std::nullopt, owned_basis ? "owned" : str(e, "cost_basis"), local, false,
                      units::format_usd(dbl(e, cost_key) * cost_scale)});
    mem.push_back({id, dbl(e, "peak_gib"), dbl(e, "capacity_gib"), flag(e, "fits") ? "fits" : "does NOT fit", !flag(e, "fits"),
                   false, fmt::format("{} of {}{}", human(dbl(e, "peak_gib")), human(dbl(e, "capacity_gib")), flag(e, "fits") ? "" : ": does not fit")});
  }
  if (here) {
    const std::string label = str(*here, "label", "this machine (measured)");
    speed.push_back({label, dbl(*here, "throughput"), std::nullopt, "measured here: " + str(*here, "device"), false, true, ""});
    if (has(*here, "usd_per_million"))
      cost.push_back({label, dbl(*here, "usd_per_million") * cost_scale, std::nullopt, str(*here, "cost_basis"), false, true,
                      units::format_usd(dbl(*here, "usd_per_million") * cost_scale)});
    mem.push_back({label, dbl(*here, "peak_gib"), dbl(*here, "capacity_gib"), "measured peak vs the machine's memory", false, true,
                   fmt::format("{} of {}", human(dbl(*here, "peak_gib")), human(dbl(*here, "capacity_gib")))});
  }
  // NaN last: NaN compares false both ways, which is no strict weak ordering, and std::sort's result is then undefined.
  const auto nan_as = [](double v, double instead) { return std::isnan(v) ? instead : v; };
  const double inf = std::numeric_limits<double>::infinity();
  std::sort(speed.begin(), speed.end(), [&](const Bar& a, const Bar& b) { return nan_as(a.value, -inf) > nan_as(b.value, -inf); });
  std::sort(cost.begin(), cost.end(), [&](const Bar& a, const Bar& b) { return nan_as(a.value, inf) < nan_as(b.value, inf); });
  s += bar_chart("throughput", fmt::format("Throughput per GPU ({}){}", unit, here ? "; green: this machine, measured" : ""), speed, unit);
  if (!cost.empty())
    s += bar_chart("cost", fmt::format("Cost per {} {} ({}{})", per, what,
                                       owned_basis ? "owning each card: its price over its service life at the advisor's utilization, with power"
                                                   : "cloud rent where listed, else owning at the advisor's assumptions",
                                       here ? "; this machine: electricity only" : ""),
                   cost, "USD");
  s += bar_chart("memory", fmt::format("Memory: predicted peak per GPU vs usable capacity (tick){}", here ? "; this machine: measured" : ""),
                 mem, "GiB", "usable capacity");
  std::vector<Series> scaling;
  int k = 0;
  // A few cards that show each kind of link: NVLink generations, PCIe with P2P, GeForce staged via host.
  const std::vector<std::string>& pick = catalog::featured().scaling_chart;
  for (const auto& e : preds) {
    if (arr(e, "scaling").empty()) continue;
    if (std::find(pick.begin(), pick.end(), str(e, "gpu")) == pick.end() && preds.size() > pick.size()) continue;
    Series se{shortened(str(e, "gpu") + " (" + str(e, "link", "?") + ")"), {}, true, str(e, "link") != "nvlink", k++, {}};
    for (const auto& pt : arr(e, "scaling")) se.points.emplace_back(dbl(pt, "gpus"), dbl(pt, "efficiency") * 100);
    scaling.push_back(se);
    if (k >= 8) break;
  }
  if (!scaling.empty())
    s += line_chart("scaling", "Data-parallel scaling efficiency (dashed: PCIe or host-staged; solid: NVLink; cards with the same curve share a line)",
                    scaling, {"GPUs", false}, {"% of linear", false});
  s += fmt::format("<table><tr><th>GPU</th><th>throughput ({0})</th><th>band ({0})</th><th>step</th><th>memory GiB</th><th>fits</th>"
                   "<th>USD per {1} {2} (basis)</th></tr>",
                   escape(unit), per, escape(what));
  auto cost_cell = [&](const json& e) {
    return has(e, "usd_per_million") ? fmt::format("{} ({})", units::format_usd(dbl(e, "usd_per_million") * cost_scale), escape(str(e, "cost_basis")))
                                     : std::string("N/A");
  };
  if (here)
    s += fmt::format("<tr class=\"measured\"><td>{}</td><td class=n>{}</td><td class=n>measured</td><td class=n>{}</td><td class=n>{:.1f} / {:.1f}</td>"
                     "<td class=ok>yes</td><td class=n>{}</td></tr>",
                     escape(str(*here, "label", "this machine (measured)")), units::format_si(dbl(*here, "throughput")),
                     units::format_seconds(dbl(*here, "step_time_s")), dbl(*here, "peak_gib"), dbl(*here, "capacity_gib"), cost_cell(*here));
  for (const auto& e : preds) {
    if (!e.is_object()) continue;
    s += fmt::format("<tr><td>{}</td><td class=n>{}</td><td class=n>{}</td><td class=n>{}</td><td class=n>{:.1f} / {:.1f}</td><td class={}>{}</td><td class=n>{}</td></tr>",
                     escape(str(e, "gpu")), units::format_si(dbl(e, "throughput")), band(e), units::format_seconds(dbl(e, "step_time_s")),
                     dbl(e, "peak_gib"), dbl(e, "capacity_gib"), flag(e, "fits") ? "ok" : "bad", flag(e, "fits") ? "yes" : "no",
                     cost_cell(e));
  }
  return s + "</table>";
}

/// The cluster an MPI run measured (evaluate's or bench's record): its nodes, the collectives' bus bandwidth
/// against size, the point-to-point pairs with the slowest named, and the network the predictions took from it.
std::string section_cluster(const EvaluateRecord& rec) {
  const json* cp = rec.cluster.is_object() ? &rec.cluster
                   : rec.bench.is_object() && rec.bench.contains("cluster") && rec.bench["cluster"].is_object()
                       ? &rec.bench["cluster"]
                       : nullptr;
  if (!cp) return "";
  const json& c = *cp;
  const double nodes = dbl(c, "nodes");
  std::string s = fmt::format("<h2>The cluster: {} ranks on {} node{}</h2><p>Measured with {} (gpuvs under MPI). Bus bandwidth as "
                              "nccl-tests defines it; every element of every result checked.</p>",
                              whole(dbl(c, "ranks")), whole(nodes), nodes == 1 ? "" : "s", escape(str(c, "transport", "MPI")));
  s += "<table><tr><th>node</th><th>host</th><th>ranks</th><th>CPU</th><th>GPUs</th></tr>";
  for (const auto& n : arr(c, "per_node")) {
    if (!n.is_object()) continue;
    std::vector<std::string> ranks;
    for (const auto& r : arr(n, "ranks")) ranks.push_back(r.is_number() ? r.dump() : "?");
    const json& dev = n.contains("devices") && n["devices"].is_object() ? n["devices"] : json::object();
    const std::string cpu = dev.contains("cpu") && dev["cpu"].is_object() ? str(dev["cpu"], "model") : "";
    const std::size_t gpus = dev.contains("gpus") && dev["gpus"].is_array() ? dev["gpus"].size() : 0;
    s += fmt::format("<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>", whole(dbl(n, "node")), escape(str(n, "host")),
                     escape(strings::join(ranks, ", ")), escape(cpu), gpus);
  }
  s += "</table>";
  std::vector<Series> series;
  std::map<std::string, std::size_t> by_op;
  for (const auto& r : arr(c, "collectives")) {
    if (!r.is_object() || dbl(r, "bytes") <= 0 || dbl(r, "busbw_gbs") <= 0) continue;
    const std::string op = shortened(str(r, "op")) + (str(r, "transport", "mpi") == "nccl" ? " (NCCL, GPUs)" : "");
    // A line per collective, a dozen at most: merging coincident lines compares each with every other.
    if (!by_op.count(op) && series.size() >= 12) continue;
    if (!by_op.count(op)) {
      by_op[op] = series.size();
      series.push_back(Series{op, {}, true, false, static_cast<int>(series.size()), {}});
    }
    Series& se = series[by_op[op]];
    se.points.emplace_back(dbl(r, "bytes"), dbl(r, "busbw_gbs"));
    se.point_labels.push_back(fmt::format("{} of {}B: {} GB/s bus bandwidth, {} wrong", op, units::format_si(dbl(r, "bytes")), human(dbl(r, "busbw_gbs")),
                                          whole(dbl(r, "wrong"))));
  }
  if (!series.empty())
    s += line_chart("cluster-busbw", "Collectives: bus bandwidth against message size", series, {"bytes", true}, {"bus bandwidth (GB/s)", true});
  if (!arr(c, "pairs").empty()) {
    std::vector<Bar> bars;
    for (const auto& pr : arr(c, "pairs")) {
      if (!pr.is_object()) continue;
      Bar b;
      b.label = fmt::format("rank {} - {} ({}{})", whole(dbl(pr, "a")), whole(dbl(pr, "b")), str(pr, "scope"),
                            str(pr, "transport", "mpi") == "nccl" ? ", NCCL" : "");
      b.value = dbl(pr, "bandwidth_gbs");
      b.note = fmt::format("latency {} us", human(dbl(pr, "latency_us")));
      bars.push_back(b);
    }
    s += bar_chart("cluster-pairs", "Send/recv between pairs (the bandwidth matrix)", bars, "GB/s");
    if (c.contains("slowest_link") && c["slowest_link"].is_object()) {
      const json& sl = c["slowest_link"];
      s += fmt::format("<p>Slowest link: rank {} to rank {} ({}, {}), {} GB/s.</p>", whole(dbl(sl, "a")), whole(dbl(sl, "b")),
                       escape(str(sl, "scope")), str(sl, "transport", "mpi") == "nccl" ? "NCCL between GPUs" : "MPI between hosts",
                       human(dbl(sl, "bandwidth_gbs")));
    }
  }
  if (c.contains("nccl") && c["nccl"].is_object() && str(c["nccl"], "status") == "waived")
    s += fmt::format("<p>NCCL between GPUs: not measured ({}).</p>", escape(str(c["nccl"], "why")));
  if (rec.network.is_object()) {
    const json& nw = rec.network;
    s += fmt::format("<p>{}</p>", escape(nw.contains("name") ? "Multi-node predictions priced on " + str(nw, "name") : str(nw, "note")));
  }
  return s;
}

/// LLM serving (decoders): throughput against requests in flight and latency against load, per card, under
/// in-flight batching (evaluate's "serving" record).
std::string section_serving(const EvaluateRecord& r) {
  if (!r.serving.is_object()) return "";
  const json& sv = r.serving;
  std::string s = fmt::format("<h2>Serving {}: latency against load</h2><p>In-flight batching, {} weights, {} engine profile, "
                              "requests of {} prompt + {} generated tokens, one GPU per replica.</p>",
                              escape(r.workload), escape(str(sv, "format")), escape(str(sv, "engine")),
                              whole(dbl(sv, "prompt_len")), whole(dbl(sv, "gen_len")));
  // The cards people weigh against each other, then the fastest others, at most eight lines per chart.
  const std::vector<std::string>& pick = catalog::featured().serving_chart;
  if (!sv.contains("curves") || !sv["curves"].is_array()) return "";
  const json& all = arr(sv, "curves");
  std::vector<const json*> curves;
  for (const auto& id : pick)
    for (const auto& c : all)
      if (str(c, "gpu") == id && curves.size() < 8) curves.push_back(&c);
  for (const auto& c : all)
    if (curves.size() < 8 && std::find(curves.begin(), curves.end(), &c) == curves.end()) curves.push_back(&c);
  std::vector<Series> speed, latency;
  int k = 0;
  for (const json* c : curves) {
    Series a{str(*c, "gpu"), {}, true, false, k, {}};
    Series b{str(*c, "gpu"), {}, true, false, k, {}};
    if (!c->contains("points") || !(*c)["points"].is_array()) continue;
    for (const auto& pt : arr(*c, "points")) {
      a.points.emplace_back(dbl(pt, "in_flight"), dbl(pt, "output_tokens_per_s"));
      a.point_labels.push_back(fmt::format("{} in flight: {} output tokens/s", whole(dbl(pt, "in_flight")),
                                           units::format_si(dbl(pt, "output_tokens_per_s"))));
      b.points.emplace_back(dbl(pt, "requests_per_s"), dbl(pt, "request_p99_s"));
      b.point_labels.push_back(fmt::format("{} requests/s: p99 {} per request, first token {} (p99)", units::format_si(dbl(pt, "requests_per_s")),
                                           units::format_seconds(dbl(pt, "request_p99_s")), units::format_seconds(dbl(pt, "ttft_p99_s"))));
    }
    speed.push_back(a);
    latency.push_back(b);
    ++k;
  }
  if (speed.empty()) return "";
  s += line_chart("serving-throughput", "Output tokens/s against requests in flight (one GPU, in-flight batching)", speed,
                  {"requests in flight", true}, {"output tokens/s", true});
  s += line_chart("serving-latency", "Request latency (p99) against load: each point one more doubling of requests in flight", latency,
                  {"requests/s", true}, {"seconds per request (p99)", true});
  s += "<table><tr><th>GPU</th><th>most in flight</th><th>output tokens/s</th><th>requests/s</th><th>first token p99</th><th>per token</th>"
       "<th>request p99</th></tr>";
  for (const auto& c : all) {
    const json& pts = arr(c, "points");
    if (pts.empty()) continue;
    const json& top = pts.back();
    s += fmt::format("<tr><td>{}</td><td class=n>{}</td><td class=n>{}</td><td class=n>{}</td><td class=n>{}</td><td class=n>{}</td><td class=n>{}</td></tr>",
                     escape(str(c, "gpu")), whole(dbl(top, "in_flight")), units::format_si(dbl(top, "output_tokens_per_s")),
                     units::format_si(dbl(top, "requests_per_s")), units::format_seconds(dbl(top, "ttft_p99_s")),
                     units::format_seconds(dbl(top, "tpot_s")), units::format_seconds(dbl(top, "request_p99_s")));
  }
  return s + "</table>";
}

std::string section_calibration(const EvaluateRecord& r) {
  const json& c = as_obj(r.calibration);
  if (c.empty()) return "";
  if (!c.is_object()) return "";
  std::string s = "<h2>Calibration: measured ÷ predicted</h2><table><tr><th>class</th><th>measured</th><th>model</th><th>ratio</th><th>applied</th></tr>";
  for (const auto& k : arr(c, "classes"))
    s += fmt::format("<tr><td>{}</td><td class=n>{}</td><td class=n>{}</td><td class=n>{:.3f}</td><td>{}</td></tr>", escape(str(k, "class")),
                     human(dbl(k, "measured"), 4), human(dbl(k, "predicted"), 4),
                     // measured_over_predicted as predict --json writes it; ratio in runs stored before
                     k.contains("measured_over_predicted") ? dbl(k, "measured_over_predicted") : dbl(k, "ratio"), flag(k, "applied") ? "yes" : "reported");
  for (const auto& k : arr(c, "engine_ops"))
    s += fmt::format("<tr><td>{}</td><td class=n>{} us</td><td class=n>{} us</td><td class=n>{:.3f}</td><td>reported</td></tr>",
                     escape(str(k, "class")), human(dbl(k, "measured_us"), 4), human(dbl(k, "predicted_us"), 4), dbl(k, "ratio"));
  return s + "</table>";
}

/// Your own measurement (evaluate --measured or --stack): what it calibrated, figure by figure, and what it left open;
/// the predictions above carry it where its software and format match, each with its figure without it.
std::string section_measured(const EvaluateRecord& r) {
  const json& m = as_obj(r.measured);
  if (m.empty() || !m.is_object()) return "";
  std::string s = fmt::format(
      "<h2>Your measurement: what it calibrated</h2><p>{} {}: matrix kernels ×{:.3f}, memory-bound kernels ×{:.3f}, fixed costs ×{:.3f}, "
      "applied to every card whose prediction runs that software and format (each card keeps its own peaks, bandwidth, clock and "
      "launches).</p>",
      escape(str(m, "engine")), escape(str(m, "format")), dbl(m, "matrix_ratio"), dbl(m, "memory_ratio"), dbl(m, "fixed_cost_ratio"));
  s += "<table><tr><th>figure</th><th>card</th><th>mode</th><th>measured</th><th>model before</th><th>kernels</th><th>ratio</th><th>note</th></tr>";
  for (const auto& st : arr(m, "steps"))
    s += fmt::format("<tr><td>{}</td><td>{}</td><td>{}</td><td class=n>{}</td><td class=n>{}</td><td>{}</td><td class=n>{:.3f}</td><td>{}</td></tr>",
                     escape(str(st, "source")), escape(str(st, "gpu")), escape(str(st, "mode")), human(dbl(st, "measured"), 4),
                     human(dbl(st, "predicted_before"), 4), escape(str(st, "kernels")), dbl(st, "ratio"), escape(str(st, "note")));
  s += "</table>";
  const json& open = arr(m, "open");
  if (!open.empty()) {
    s += "<p class=\"muted\">Left open by the measurement: ";
    std::vector<std::string> items;
    for (const auto& o : open) items.push_back(escape(o.is_string() ? o.get<std::string>() : o.dump()));
    s += strings::join(items, "; ") + ".</p>";
  }
  return s;
}

std::string section_advice(const EvaluateRecord& r) {
  if (r.advice.is_null()) return "";
  const json& a = r.advice;
  std::string s = "<h2>Advice</h2>";
  const json& sc = obj(a, "scenario");
  s += fmt::format("<p>{} <b>{}</b> ({}), cost {}.</p>", escape(str(sc, "task")), escape(str(sc, "workload")), escape(str(sc, "precision")),
                   escape(str(a, "cost_what")));
  s += "<table><tr><th>rank</th><th>GPU</th><th>n</th><th>strategy</th><th>batch</th><th>hours / p99 ms</th><th>cost USD</th><th>reason</th></tr>";
  int shown = 0;
  for (const auto& o : arr(a, "ranked")) {
    if (++shown > 15) break;
    const bool serving = str(sc, "task") == "infer";
    s += fmt::format("<tr><td class=n>{}</td><td>{}</td><td class=n>{}</td><td>{}</td><td class=n>{}</td><td class=n>{}</td><td class=n>{}</td><td>{}</td></tr>",
                     whole(dbl(o, "rank")), escape(str(o, "gpu")), whole(dbl(o, "count")), escape(str(o, "strategy")),
                     whole(dbl(o, "batch")),
                     serving ? human(dbl(o, "latency_p99_ms")) : (dbl(o, "total_hours") > 0 ? human(dbl(o, "total_hours")) : "N/A"),
                     has(o, "cost_usd") ? units::format_usd(dbl(o, "cost_usd")) : "N/A", escape(str(o, "reason")));
  }
  s += "</table>";
  if (!arr(a, "ruled_out").empty()) {
    s += "<p><b>Ruled out</b></p><ul>";
    for (const auto& o : a["ruled_out"]) s += fmt::format("<li>{}: {}</li>", escape(str(o, "gpu")), escape(str(o, "reason")));
    s += "</ul>";
  }
  s += "<details><summary>Assumptions (override with --assume key=value)</summary><table><tr><th>key</th><th>value</th><th>unit</th><th>basis</th></tr>";
  for (const auto& x : arr(a, "assumptions"))
    s += fmt::format("<tr><td>{}</td><td class=n>{}</td><td>{}</td><td>{}</td></tr>", escape(str(x, "key")), human(dbl(x, "value"), 4),
                     escape(str(x, "unit")), escape(str(x, "basis")));
  return s + "</table></details>";
}

// Any JSON can reach a report (the history is a file others can write): the sections read each member as
// the kind they expect or skip it; whatever still trips the JSON library becomes one InputError line.
template <typename F>
std::string guarded(const json& run, F&& render) {
  try {
    std::string out = render();
    if (out.size() > kMostReportBytes)
      throw InputError(fmt::format("run {}: its report would be {} MiB (more than {})", whole(dbl(run, "id")), out.size() >> 20, kMostReportBytes >> 20));
    return out;
  } catch (const ListTooLong& e) {
    throw InputError(fmt::format("run {}: its stored record lists {} entries in '{}' (a report renders up to {})", whole(dbl(run, "id")), e.size,
                                 strings::printable(e.key), kMostListed));
  } catch (const json::exception& e) {
    throw InputError(fmt::format("run {}: its stored record cannot be rendered ({})", whole(dbl(run, "id")),
                                 strings::printable(e.what(), 200)));
  }
}

/// The run's payload as the evaluate record; its summary held to the lists' limit like every list.
EvaluateRecord record_of(const json& run) {
  EvaluateRecord r = evaluate_record_from(obj(run, "payload"));
  if (r.summary.size() > kMostListed) throw ListTooLong{"summary", r.summary.size()};
  return r;
}

/// The text of an HTML fragment the report wrote: tags dropped, the entities escape() writes read back.
std::string cell_text(std::string_view html) {
  std::string out;
  for (std::size_t i = 0; i < html.size(); ++i) {
    if (html[i] == '<') {
      const auto end = html.find('>', i);
      if (end == std::string_view::npos) break;
      if (html.substr(i, 3) == "<br") out += ' ';  // a line break in a cell is a space in its text
      i = end;
      continue;
    }
    if (html[i] == '&') {
      static const std::pair<std::string_view, char> entities[] = {{"&amp;", '&'}, {"&lt;", '<'}, {"&gt;", '>'}, {"&quot;", '"'}, {"&#39;", '\''}};
      bool done = false;
      for (const auto& [name, ch] : entities)
        if (html.substr(i, name.size()) == name) {
          out += ch;
          i += name.size() - 1;
          done = true;
          break;
        }
      if (done) continue;
    }
    out += html[i];
  }
  return out;
}

/// One table of the report as CSV (RFC 4180: fields with a comma, quote or line break quoted, quotes doubled).
std::string table_csv(std::string_view table) {
  std::string csv;
  for (std::size_t r = table.find("<tr"); r != std::string_view::npos; r = table.find("<tr", r + 3)) {
    const std::size_t row_end = std::min(table.find("</tr>", r), table.size());
    const std::string_view row = table.substr(r, row_end - r);
    std::vector<std::string> fields;
    for (std::size_t c = row.find("<t", 3); c != std::string_view::npos; c = row.find("<t", c + 2)) {
      if (row.substr(c, 3) != "<td" && row.substr(c, 3) != "<th") continue;
      const std::size_t open = row.find('>', c);
      const std::size_t close = row.find(row.substr(c, 3) == "<td" ? "</td>" : "</th>", open);
      if (open == std::string_view::npos || close == std::string_view::npos) break;
      std::string f = cell_text(row.substr(open + 1, close - open - 1));
      // A cell a spreadsheet would run as a formula (a name from a user's file starting "=") is kept as text.
      if (!f.empty() && (f[0] == '=' || f[0] == '+' || f[0] == '@' || f[0] == '\t' || f[0] == '\r')) f.insert(f.begin(), '\'');
      if (f.find_first_of(",\"\r\n") != std::string::npos) {
        std::string q = "\"";
        for (char ch : f) q += ch == '"' ? std::string("\"\"") : std::string(1, ch);
        f = q + "\"";
      }
      fields.push_back(std::move(f));
      c = close;
    }
    csv += strings::join(fields, ",") + "\r\n";
  }
  return csv;
}

/// Every table followed by a link that downloads it as CSV (a data: URI, so the report stays one offline file).
std::string with_csv_downloads(const std::string& html, const std::string& run_id) {
  std::string out;
  std::size_t copied = 0;
  int n = 0;
  for (std::size_t t = html.find("<table"); t != std::string::npos; t = html.find("<table", copied)) {
    const std::size_t end = html.find("</table>", t);
    if (end == std::string::npos) break;
    const std::size_t after = end + 8;
    std::string uri = "data:text/csv;charset=utf-8,";
    for (const char c : table_csv(std::string_view(html).substr(t, end - t))) {
      const auto ch = static_cast<unsigned char>(c);
      if (std::isalnum(ch) || ch == '-' || ch == '_' || ch == '.') uri += c;
      else uri += fmt::format("%{:02X}", ch);
    }
    out.append(html, copied, after - copied);
    out += fmt::format("<p class=\"csv\"><a download=\"gpuvs-run-{}-table-{}.csv\" href=\"{}\">CSV of this table</a></p>", run_id, ++n, uri);
    copied = after;
  }
  out.append(html, copied, std::string::npos);
  return out;
}

std::string render_html_unguarded(const json& run) {
  const EvaluateRecord r = record_of(run);
  std::string h = "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">";
  h += fmt::format("{} — run {}</title><style>{}</style></head><body><main>", kHtmlSignature, whole(dbl(run, "id")), kStyle);
  h += fmt::format("<h1>gpuvs: which accelerator for {}?</h1><p class=\"meta\">run {} · {} · {}</p>", escape(r.workload.empty() ? "the workload" : r.workload),
                   whole(dbl(run, "id")), escape(str(run, "created_utc")), escape(r.gpuvs));
  if (!r.summary.empty()) {
    h += "<ul class=\"summary\">";
    for (const auto& line : r.summary) h += "<li>" + escape(line) + "</li>";
    h += "</ul>";
  }
  // The answer first (which GPU, why, what it costs, how the others compare), then the evidence: what this
  // machine measured and how the model was calibrated.
  std::string body = section_advice(r) + section_predictions(r) + section_serving(r);
  body += "<h2 class=\"evidence\">The evidence: this machine, measured</h2>";
  body += section_machine(r) + section_bench(r) + section_training(r) + section_calibration(r) + section_measured(r) + section_cluster(r);
  h += with_csv_downloads(body, whole(dbl(run, "id")));
  h += "<p class=\"muted\">Predicted figures come from gpuvs's calibrated per-op model (docs/VALIDATION.md gives its errors); measured figures from this machine.</p>";
  h += fmt::format("</main><script>{}</script></body></html>\n", kScript);
  return h;
}

/// Text from the record in a Markdown line or table cell: one line, no cell break, no raw HTML (a key of
/// "a|b\n# x <img ...>" split the table, made a heading and passed HTML through), no link, image, code span or
/// emphasis (`![x](https://...)` was an image fetched whenever the report was viewed), no control byte. Each line that holds record
/// text starts with the report's own, so none can open a block (a heading, a fence, an indented code block).
std::string md(std::string_view text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '|': case '\\': case '`': case '*': case '_': case '[': case ']': case '~':
        out += '\\';
        out += c;
        break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '&': out += "&amp;"; break;
      case '\n': case '\r': out += ' '; break;
      default:
        // Other control bytes as text (ESC sequences in a record reached the terminal `gpuvs report` prints to).
        if (static_cast<unsigned char>(c) < 0x20 || c == 0x7F) out += fmt::format("\\\\x{:02X}", static_cast<unsigned char>(c));
        else out += c;
    }
  }
  return out;
}

std::string render_markdown_unguarded(const json& run) {
  const EvaluateRecord r = record_of(run);
  std::string m = fmt::format("# gpuvs report — run {}\n\nRecorded {} · {}\n\n", whole(dbl(run, "id")), md(str(run, "created_utc")), md(r.gpuvs));
  for (const auto& line : r.summary) m += "- " + md(line) + "\n";
  if (!r.advice.is_null()) {
    m += "\n## Advice\n\n| rank | GPU | n | strategy | cost USD | reason |\n|---|---|---|---|---|---|\n";
    for (const auto& o : arr(as_obj(r.advice), "ranked"))
      m += fmt::format("| {} | {} | {} | {} | {} | {} |\n", whole(dbl(o, "rank")), md(str(o, "gpu")), whole(dbl(o, "count")),
                       md(str(o, "strategy")), has(o, "cost_usd") ? units::format_usd(dbl(o, "cost_usd")) : "N/A", md(str(o, "reason")));
  }
  if (!r.predictions.is_null()) {
    m += fmt::format("\n## Predicted: {}\n\n| GPU | throughput | unit | memory GiB | fits | USD per million |\n|---|---|---|---|---|---|\n",
                     md(r.workload));
    if (const json* here = measured_here(r))
      m += fmt::format("| {} | {} | {} | {:.1f} / {:.1f} | yes | {} |\n", md(str(*here, "label", "this machine (measured)")),
                       units::format_si(dbl(*here, "throughput")), md(str(*here, "unit")), dbl(*here, "peak_gib"), dbl(*here, "capacity_gib"),
                       has(*here, "usd_per_million") ? units::format_usd(dbl(*here, "usd_per_million")) : "N/A");
    for (const auto& e : as_list(r.predictions, "predictions"))
      if (e.is_object())
        m += fmt::format("| {} | {} | {} | {:.1f} / {:.1f} | {} | {} |\n", md(str(e, "gpu")), units::format_si(dbl(e, "throughput")), md(str(e, "unit")),
                         dbl(e, "peak_gib"), dbl(e, "capacity_gib"), flag(e, "fits") ? "yes" : "no",
                         has(e, "usd_per_million") ? units::format_usd(dbl(e, "usd_per_million")) : "N/A");
  }
  if (const json& mine = as_obj(r.measured); mine.is_object() && !mine.empty()) {
    m += fmt::format("\n## Your measurement: what it calibrated\n\n{} {}: matrix kernels x{:.3f}, memory-bound kernels x{:.3f}, fixed costs "
                     "x{:.3f}, on every card whose prediction runs that software and format.\n\n"
                     "| figure | card | mode | measured | model before | kernels | ratio |\n|---|---|---|---|---|---|---|\n",
                     md(str(mine, "engine")), md(str(mine, "format")), dbl(mine, "matrix_ratio"), dbl(mine, "memory_ratio"), dbl(mine, "fixed_cost_ratio"));
    for (const auto& st : arr(mine, "steps"))
      m += fmt::format("| {} | {} | {} | {} | {} | {} | {:.3f} |\n", md(str(st, "source")), md(str(st, "gpu")), md(str(st, "mode")),
                       human(dbl(st, "measured"), 4), human(dbl(st, "predicted_before"), 4), md(str(st, "kernels")), dbl(st, "ratio"));
  }
  if (!r.bench.is_null()) {
    m += "\n## Benchmarks\n\n| benchmark | median | unit | % of spec | status |\n|---|---|---|---|---|\n";
    for (const auto& row : arr(as_obj(r.bench), "results"))
      m += fmt::format("| {} | {} | {} | {} | {} |\n", md(str(row, "key")), str(row, "status") == "ok" ? human(dbl(row, "median"), 4) : "N/A",
                       md(str(row, "unit")), has(row, "pct_of_spec") ? fmt_num(dbl(row, "pct_of_spec"), "{:.1f}") : "N/A", md(str(row, "status")));
  }
  return m;
}

}  // namespace

files::OutputSpec html_output(const std::string& flag, bool force) { return {flag, "HTML report", kHtmlSignature, force}; }

std::string render_html(const json& run) {
  return guarded(run, [&] { return render_html_unguarded(run); });
}

std::string render_markdown(const json& run) {
  return guarded(run, [&] { return render_markdown_unguarded(run); });
}

std::string layout_check_script() { return kScript; }

}  // namespace gpuvs::report
