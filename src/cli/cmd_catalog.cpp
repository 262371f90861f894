// SPDX-License-Identifier: Apache-2.0
// gpuvs catalog [show ID]: the sourced device specifications the performance model uses.
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "catalog/catalog.hpp"
#include "cli/commands.hpp"
#include "cli/output.hpp"
#include "core/strings.hpp"
#include "core/units.hpp"
#include "perf/achievable.hpp"
#include "perf/clocks.hpp"
#include "perf/constants.hpp"

namespace gpuvs::cli {

namespace {

struct CatalogArgs {
  std::vector<std::string> files;
  Output out = Output::table;
  std::string show_id;
};

catalog::Catalog load(const CatalogArgs& a) {
  catalog::Catalog c = catalog::Catalog::builtin();
  for (const auto& f : a.files) c.add_file(f);
  return c;
}

std::string cell(const catalog::Peak& p) { return p.dense ? fmt::format("{:g}", *p.dense) : "-"; }

nlohmann::json peak_json(const catalog::Peak& p) {
  if (!p.present()) return nullptr;
  nlohmann::json j{{"dense", *p.dense}};
  j["sparse"] = p.sparse ? nlohmann::json(*p.sparse) : nlohmann::json(nullptr);
  return j;
}

nlohmann::json gpu_json(const catalog::Gpu& g) {
  auto opt = [](const std::optional<double>& v) { return v ? nlohmann::json(*v) : nlohmann::json(nullptr); };
  nlohmann::json src = nlohmann::json::array();
  for (const auto& s : g.sources) {
    auto it = catalog::sources().find(s);
    src.push_back({{"id", s}, {"text", it != catalog::sources().end() ? it->second : ""}});
  }
  return {{"id", g.id}, {"name", g.name}, {"aliases", g.aliases}, {"vendor", g.vendor}, {"segment", g.segment},
          {"arch", g.arch}, {"chip", g.chip}, {"compute_capability", g.compute_capability}, {"sm_count", g.sm_count},
          {"boost_mhz", g.boost_mhz}, {"memory_type", g.memory_type}, {"memory_gib", g.memory_gb},
          {"memory_bandwidth_gbps", g.memory_bandwidth_gbs}, {"l2_mb", opt(g.l2_mb)}, {"fp32_tflops", g.fp32_tflops},
          {"tensor_tflops",
           {{"tf32", peak_json(g.tf32)}, {"fp16_fp16acc", peak_json(g.fp16)}, {"fp16_fp32acc", peak_json(g.fp16_fp32acc)},
            {"bf16_fp32acc", peak_json(g.bf16)}, {"fp8_fp16acc", peak_json(g.fp8)},
            {"fp8_fp32acc", peak_json(g.fp8_fp32acc)}, {"int8_tops", peak_json(g.int8)}}},
          {"nvlink", g.nvlink}, {"nvlink_gbps", g.nvlink_gbs}, {"p2p", g.p2p}, {"pcie_gen", g.pcie_gen},
          {"tdp_w", g.tdp_w}, {"ecc", g.ecc}, {"ecc_note", g.ecc_note}, {"mig_max", g.mig_max},
          {"mig_note", g.mig_note}, {"msrp_usd", opt(g.msrp_usd)}, {"price_basis_usd", opt(g.price_basis_usd)},
          {"cloud_usd_per_hr", opt(g.cloud_usd_per_hr)}, {"cloud_note", g.cloud_note}, {"sources", src},
          {"confidence", g.confidence}, {"derived", g.derived}, {"notes", g.notes}, {"origin", g.origin}};
}

int run_list(const CatalogArgs& a) {
  const catalog::Catalog c = load(a);
  if (a.out != Output::table) {
    nlohmann::json arr = nlohmann::json::array();
    for (const auto& g : c.gpus()) arr.push_back(gpu_json(g));
    print_structured(nlohmann::json{{"schema_version", 1}, {"gpus", arr}}, a.out, {"gpus"});  // csv, md: a row per GPU
    return 0;
  }
  fmt::print("{:<15} {:<24} {:<11} {:>6} {:>7} {:>6} {:>6} {:>8} {:>8} {:>7} {:>4} {:>8} {:>4} {:>6}\n", "id", "name",
             "segment", "mem", "BW", "FP32", "TF32", "16b/f32a", "FP8/f32a", "NVLink", "P2P", "ECC", "MIG", "$/h");
  fmt::print("{:<15} {:<24} {:<11} {:>6} {:>7} {:>6} {:>6} {:>8} {:>8} {:>7} {:>4} {:>8} {:>4} {:>6}\n", "", "", "",
             "GiB", "GB/s", "TFLOPS", "TFLOPS", "TFLOPS", "TFLOPS", "GB/s", "", "", "", "cloud");
  for (const auto& g : c.gpus()) {
    const catalog::Peak& half = g.bf16.present() ? g.bf16 : g.fp16_fp32acc;
    fmt::print("{:<15} {:<24} {:<11} {:>6g} {:>7g} {:>6g} {:>6} {:>8} {:>8} {:>7} {:>4} {:>8} {:>4} {:>6}\n", g.id,
               g.name.substr(0, 24), g.segment, g.memory_gb, g.memory_bandwidth_gbs, g.fp32_tflops, cell(g.tf32),
               cell(half), cell(g.fp8_fp32acc), g.has_nvlink() ? fmt::format("{:g}", g.nvlink_gbs) : "-",
               g.p2p ? "yes" : "no", g.ecc, g.mig_max > 0 ? std::to_string(g.mig_max) : "-",
               g.cloud_usd_per_hr ? fmt::format("{:.2f}", *g.cloud_usd_per_hr) : "-");
  }
  fmt::print("\nDense peaks. 16b/f32a = FP16/BF16 tensor math with FP32 accumulate (GeForce: half the FP16-accumulate\n"
             "rate). `gpuvs catalog show ID` shows every field with its sources.\n");
  return 0;
}

int run_show(const CatalogArgs& a) {
  const catalog::Catalog c = load(a);
  const catalog::Gpu& g = c.find(a.show_id);
  if (a.out != Output::table) {
    nlohmann::json j = gpu_json(g);
    nlohmann::json ach = nlohmann::json::array();
    for (const auto& key : perf::achievable_keys())
      if (const auto v = perf::achievable(c, g, key)) {
        std::string what;
        perf::spec_for(g, key, &what);
        ach.push_back({{"key", key}, {"unit", perf::achievable_unit(key)}, {"spec", v->spec}, {"spec_is", what},
                       {"achievable", v->value}, {"fraction", v->fraction}, {"published", v->published}, {"basis", v->basis}});
      }
    j["schema_version"] = 1;
    j["achievable"] = ach;
    if (const perf::BaseClock* bc = perf::builtin_clocks().find(g.id)) {
      const double frac = perf::sustained_clock_fraction(g, perf::active_constants().clock_headroom);
      j["clocks"] = {{"base_mhz", bc->base_mhz}, {"boost_mhz", g.boost_mhz},
                     {"peak_rated_mhz", bc->peak_mhz > 0 ? bc->peak_mhz : g.boost_mhz},
                     {"sustained_dense_fraction", frac}, {"source", bc->source}};
    }
    print_structured(j, a.out);  // csv, md: one row
    return 0;
  }
  auto opt = [](const std::optional<double>& v, const char* unit) {
    return v ? fmt::format("{:g} {}", *v, unit) : std::string("-");
  };
  auto peak = [](const catalog::Peak& p, const char* unit) {
    if (!p.present()) return std::string("not supported");
    return fmt::format("{:g} {} dense{}", *p.dense, unit, p.sparse ? fmt::format(", {:g} sparse", *p.sparse) : "");
  };
  fmt::print("{} ({}){}\n", g.name, g.id, g.aliases.empty() ? "" : " aliases: " + strings::join(g.aliases, ", "));
  fmt::print("  {:<22} {} {} {} (compute capability {}), {} {}, boost {:g} MHz\n", "architecture",
             g.vendor, g.arch, g.chip, g.compute_capability, g.sm_count, g.vendor == "amd" ? "CUs" : "SMs", g.boost_mhz);
  fmt::print("  {:<22} {:g} GiB {}, {:g} GB/s, L2 {}\n", "memory", g.memory_gb, g.memory_type,
             g.memory_bandwidth_gbs, opt(g.l2_mb, "MB"));
  fmt::print("  {:<22} {:g} TFLOPS\n", "FP32 (non-tensor)", g.fp32_tflops);
  fmt::print("  {:<22} {}\n", "TF32 tensor", peak(g.tf32, "TFLOPS"));
  fmt::print("  {:<22} {}\n", "FP16, FP16 accumulate", peak(g.fp16, "TFLOPS"));
  fmt::print("  {:<22} {}\n", "FP16, FP32 accumulate", peak(g.fp16_fp32acc, "TFLOPS"));
  fmt::print("  {:<22} {}\n", "BF16, FP32 accumulate", peak(g.bf16, "TFLOPS"));
  fmt::print("  {:<22} {}\n", "FP8, FP16 accumulate", peak(g.fp8, "TFLOPS"));
  fmt::print("  {:<22} {}\n", "FP8, FP32 accumulate", peak(g.fp8_fp32acc, "TFLOPS"));
  fmt::print("  {:<22} {}\n", "INT8", peak(g.int8, "TOPS"));
  fmt::print("  {:<22} {}{}; PCIe gen {}; peer-to-peer {}\n", "interconnect", g.nvlink,
             g.has_nvlink() ? fmt::format(" ({:g} GB/s)", g.nvlink_gbs) : "", g.pcie_gen, g.p2p ? "yes" : "no");
  fmt::print("  {:<22} {} ({}); MIG {}\n", "ECC / MIG", g.ecc, g.ecc_note,
             g.mig_max > 0 ? fmt::format("up to {} ({})", g.mig_max, g.mig_note) : g.mig_note);
  fmt::print("  {:<22} {:g} W\n", "TDP", g.tdp_w);
  if (const perf::BaseClock* bc = perf::builtin_clocks().find(g.id)) {
    // The power limit's price: the clock dense math sustains, as priced (perf/clocks.hpp).
    const double headroom = perf::active_constants().clock_headroom;
    fmt::print("  {:<22} base {:g} MHz, boost {:g} MHz{}; priced at {:.0f} MHz under dense math ({:.0f}% of the peaks' clock)\n",
               "clocks", bc->base_mhz, g.boost_mhz, bc->peak_mhz > 0 ? fmt::format(", tensor peaks rated at {:g} MHz", bc->peak_mhz) : "",
               bc->base_mhz + headroom * (g.boost_mhz - bc->base_mhz), 100 * perf::sustained_clock_fraction(g, headroom));
  } else if (const double frac = perf::sustained_clock_fraction(g, perf::active_constants().clock_headroom); frac < 1) {
    // No figure of its own: its chip's boards' clocks (perf/clocks.hpp), said as such.
    const double rated = perf::rated_clock_mhz(g);
    fmt::print("  {:<22} no sourced base clock of its own: as the {} boards of the most power up to its {:g} W, priced at {:.0f} MHz "
               "under dense math ({:.0f}% of the peaks' clock, {:.0f} MHz)\n",
               "clocks", g.chip, g.tdp_w, frac * rated, 100 * frac, rated);
  } else {
    fmt::print("  {:<22} no sourced base clock: peaks priced at their rated clock\n", "clocks");
  }
  fmt::print("  {:<22} MSRP {}; benchmark price basis {}; cloud {}{}\n", "price", opt(g.msrp_usd, "USD"),
             opt(g.price_basis_usd, "USD"), opt(g.cloud_usd_per_hr, "USD/h"),
             g.cloud_note.empty() ? "" : " (" + g.cloud_note + ")");
  fmt::print("  {:<22} {}; from {}\n", "confidence", g.confidence, g.origin);
  if (!g.derived.empty()) fmt::print("  {:<22} {}\n", "derived", strings::join(g.derived, "; "));
  if (!g.notes.empty()) fmt::print("  {:<22} {}\n", "notes", g.notes);
  // Spec beside achievable: what kernels measure (published for this card, or derived by the stated rule).
  fmt::print("  achievable vs spec:\n");
  for (const auto& key : perf::achievable_keys()) {
    const auto v = perf::achievable(c, g, key);
    if (!v) continue;
    std::string what;
    perf::spec_for(g, key, &what);
    fmt::print("    {:<10} {:>9} of {:>9} {:<8} ({:>3.0f}%, {}) — {}\n", key, units::format_plain(v->value, 4),
               units::format_plain(v->spec, 4), perf::achievable_unit(key), 100 * v->fraction, what, v->basis);
  }
  fmt::print("  sources:\n");
  if (g.sources.empty()) fmt::print("    none listed\n");
  for (const auto& s : g.sources) {
    auto it = catalog::sources().find(s);
    fmt::print("    {}: {}\n", s, it != catalog::sources().end() ? it->second : "(not in the source list)");
  }
  return 0;
}

}  // namespace

Runner add_catalog_command(CLI::App& app) {
  auto args = std::make_shared<CatalogArgs>();
  auto* sub = app.add_subcommand("catalog", "List the GPU catalog (sourced specs), or show one device");
  sub->add_option("--catalog", args->files, "Add devices from a TOML file (same keys as data/gpus.toml; repeatable)");
  add_output_option(sub, args->out);
  auto* show = sub->add_subcommand("show", "Show every field of one device, with its sources");
  show->add_option("id", args->show_id, "Device id or alias (e.g. rtx-4090, 4090, h100-sxm)")->required();
  show->add_option("--catalog", args->files, "Add devices from a TOML file (repeatable)");
  add_output_option(show, args->out);
  return [args, show] { return show->parsed() ? run_show(*args) : run_list(*args); };
}

}  // namespace gpuvs::cli
