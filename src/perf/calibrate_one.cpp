// SPDX-License-Identifier: Apache-2.0
#include "perf/calibrate_one.hpp"

#include <fmt/format.h>

#include <cmath>
#include <map>

#include "core/stats.hpp"
#include "perf/constants.hpp"
#include "perf/stack_calibration.hpp"

namespace gpuvs::perf {

namespace {

double ape(double predicted, double measured) { return std::fabs(predicted / measured - 1.0); }

TransferSummary summarize(const std::string& file, const std::vector<const TransferPair*>& pairs, int groups) {
  TransferSummary s;
  s.file = file;
  s.groups = groups;
  s.pairs = static_cast<int>(pairs.size());
  std::vector<double> u, f, t, logs;
  int inside = 0;
  for (const TransferPair* p : pairs) {
    u.push_back(p->uncalibrated_ape);
    f.push_back(p->flat_ape);
    t.push_back(p->transferred_ape);
    logs.push_back(std::log(p->measured / p->transferred));
    inside += p->in_band;
    s.better += p->transferred_ape < p->flat_ape - 1e-3;
    s.worse += p->transferred_ape > p->flat_ape + 1e-3;
  }
  if (!pairs.empty()) {
    s.uncalibrated_median = stats::quantile(u, 0.5);
    s.flat_median = stats::quantile(f, 0.5);
    s.transferred_median = stats::quantile(t, 0.5);
    s.in_band = static_cast<double>(inside) / static_cast<double>(pairs.size());
    s.spread_low = std::exp(stats::quantile(logs, 0.1));
    s.spread_high = std::exp(stats::quantile(logs, 0.9));
  }
  return s;
}

}  // namespace

CalibrateOneReport calibrate_one(const catalog::Catalog& cat, const std::vector<PublishedRow>& rows, workload::Workloads& workloads,
                                 const std::set<std::string>& held_out) {
  // The model's own prediction of every row; the scored ones grouped by everything but the card.
  // Each row priced with its own source's figures withheld (as a leave-one-source-out fold): the cards a user did not
  // measure must not be predicted from the published figures of the very run being judged.
  auto withheld = [&](const PublishedRow& r) {
    std::set<std::string> out = held_out;
    out.insert(r.file);
    return out;
  };
  std::vector<ValidatedRow> priced;
  for (const auto& r : rows) priced.push_back(validate_row(cat, r, withheld(r), workloads));
  std::vector<std::string> order;
  std::map<std::string, std::vector<std::size_t>> groups;
  const std::vector<std::string> keys = configuration_keys(rows);
  for (std::size_t i = 0; i < priced.size(); ++i) {
    const ValidatedRow& v = priced[i];
    if (v.status != "ok" || !v.ape) continue;
    const std::string& key = keys[i];
    if (!groups.count(key)) order.push_back(key);
    groups[key].push_back(i);
  }
  CalibrateOneReport out;
  std::vector<std::string> files;
  std::map<std::string, int> groups_of;
  for (const auto& key : order) {
    const auto& members = groups[key];
    bool several_cards = false;
    for (std::size_t m : members) several_cards = several_cards || priced[m].row.gpu != priced[members.front()].row.gpu;
    if (!several_cards) continue;
    const std::string& file = priced[members.front()].row.file;
    if (!groups_of.count(file)) files.push_back(file);
    ++groups_of[file];
    for (std::size_t a : members) {
      const ValidatedRow& from = priced[a];
      const double factor = *from.row.value / from.predicted;  // the flat transfer's
      // The calibration from this one figure (a microbenchmark figure is one kernel: it carries as it is).
      const bool micro = from.row.mode == "micro";
      StackCalibration cal;
      if (!micro) {
        StackRatios base;
        base.engine = from.engine;
        base.format = from.format;
        base.measured_gpus = {from.row.gpu};
        const std::set<std::string> hidden = withheld(from.row);
        cal = calibrate_figure([&](const StackRatios& r) { return validate_row(cat, from.row, hidden, workloads, &r).predicted; },
                               *from.row.value, from.predicted_unit, base);
      }
      for (std::size_t b : members) {
        const ValidatedRow& to = priced[b];
        if (to.row.gpu == from.row.gpu) continue;
        TransferPair p;
        p.from = from.row.id;
        p.to = to.row.id;
        p.file = file;
        p.measured = *to.row.value;
        p.uncalibrated = to.predicted;
        p.flat = to.predicted * factor;
        if (micro) {
          // One kernel: its factor carries flat, at the share of an error that is the stack's.
          p.op_class = "flat";
          p.ratio = std::pow(factor, active_constants().transfer_share);
          p.transferred = to.predicted * p.ratio;
        } else {
          const ValidatedRow moved = validate_row(cat, to.row, withheld(to.row), workloads, &cal.ratios);
          p.transferred = moved.status == "ok" ? moved.predicted : to.predicted;
          // The last step is the class that settled the figure; one held at its bound settled nothing (not carried).
          const bool carried = !cal.steps.empty() && cal.steps.back().note.empty();
          p.op_class = carried ? cal.steps.back().op_class : "not carried";
          p.ratio = carried ? cal.steps.back().ratio : 1;
          p.note = cal.steps.empty() ? "no class moves this figure" : cal.steps.back().note;
          if (moved.status != "ok") p.note = moved.reason;
        }
        p.uncalibrated_ape = ape(p.uncalibrated, p.measured);
        p.flat_ape = ape(p.flat, p.measured);
        p.transferred_ape = ape(p.transferred, p.measured);
        // A calibrated prediction carries the band its row's prediction does (validate_row's factors).
        p.band_low = to.predicted > 0 ? p.transferred * to.band_low / to.predicted : 0;
        p.band_high = to.predicted > 0 ? p.transferred * to.band_high / to.predicted : 0;
        p.in_band = p.measured >= p.band_low && p.measured <= p.band_high;
        out.pairs.push_back(std::move(p));
      }
    }
  }
  std::vector<const TransferPair*> all;
  int total_groups = 0;
  for (const auto& f : files) {
    std::vector<const TransferPair*> mine;
    for (const auto& p : out.pairs)
      if (p.file == f) mine.push_back(&p);
    out.sources.push_back(summarize(f, mine, groups_of[f]));
    total_groups += groups_of[f];
  }
  for (const auto& p : out.pairs) all.push_back(&p);
  out.all = summarize("all", all, total_groups);
  return out;
}

std::optional<ErrorSlope> error_slope(const std::vector<ValidatedRow>& rows) {
  std::map<std::string, std::vector<const ValidatedRow*>> groups;
  const std::vector<std::string> keys = configuration_keys(rows);
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const ValidatedRow& v = rows[i];
    if (v.status == "ok" && v.ape && v.predicted > 0 && *v.row.value > 0) groups[keys[i]].push_back(&v);
  }
  double xy = 0, xx = 0;
  int pairs = 0;
  for (const auto& [key, members] : groups)
    for (const ValidatedRow* a : members)
      for (const ValidatedRow* b : members) {
        if (a->row.gpu == b->row.gpu) continue;
        const double ea = std::log(a->predicted / *a->row.value), eb = std::log(b->predicted / *b->row.value);
        xy += ea * eb;
        xx += ea * ea;
        ++pairs;
      }
  if (!(xx > 0)) return std::nullopt;
  return ErrorSlope{xy / xx, pairs};
}

}  // namespace gpuvs::perf
