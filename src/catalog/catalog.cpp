// SPDX-License-Identifier: Apache-2.0
#include "catalog/catalog.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <sstream>
#include <toml++/toml.h>

#include "core/error.hpp"
#include "core/files.hpp"
#include "core/strings.hpp"
#include "core/toml_input.hpp"

namespace gpuvs::embedded {
extern const char* const kGpuCatalog;
extern const char* const kGpuSources;
}  // namespace gpuvs::embedded

namespace gpuvs::catalog {

namespace {

// Reads one [[gpu]] table, checking every key against the schema.
class DeviceReader {
 public:
  DeviceReader(const toml::table& t, std::string where) : t_(t), where_(std::move(where)) {}

  Gpu read() {
    static const std::set<std::string> known = {
        "id", "name", "aliases", "vendor", "segment", "arch", "chip", "compute_capability", "sm_count",
        "boost_mhz", "memory_type", "memory_gb", "memory_bandwidth_gbs", "l2_mb", "fp32_tflops", "tf32_dense",
        "tf32_sparse", "fp16_dense", "fp16_sparse", "fp16_fp32acc_dense", "fp16_fp32acc_sparse", "bf16_dense",
        "bf16_sparse", "fp8_dense", "fp8_sparse", "fp8_fp32acc_dense", "fp8_fp32acc_sparse", "int8_dense_tops",
        "int8_sparse_tops", "nvlink", "nvlink_gbs", "nvlink_mesh_links", "p2p", "pcie_gen", "tdp_w", "ecc", "ecc_note", "mig_max",
        "mig_note", "msrp_usd", "price_basis_usd", "cloud_usd_per_hr", "cloud_note", "sources", "confidence",
        "derived", "notes"};
    for (auto&& [k, v] : t_) {
      const std::string key(k.str());
      if (!known.count(key)) {
        std::vector<std::string> names(known.begin(), known.end());
        fail(v, fmt::format("unknown key '{}' (closest: {})", strings::printable(key),
                            strings::join(strings::closest(key, names, 2), ", ")));
      }
    }
    Gpu g;
    g.line = static_cast<int>(t_.source().begin.line);
    g.id = str("id");
    if (g.id.empty() || g.id.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789-") != std::string::npos)
      fail(*t_.get("id"), fmt::format("id '{}' must be lowercase letters, digits and dashes", strings::printable(g.id)));
    g.name = str("name");
    g.aliases = str_list("aliases", false);
    g.vendor = one_of("vendor", {"nvidia", "amd"});
    g.segment = one_of("segment", {"geforce", "workstation", "datacenter"});
    g.arch = str("arch");
    g.chip = opt_str("chip");
    g.compute_capability = opt_str("compute_capability");
    g.sm_count = static_cast<int>(positive_int("sm_count", 1 << 20));
    g.boost_mhz = positive("boost_mhz");
    g.memory_type = opt_str("memory_type");
    g.memory_gb = positive("memory_gb");
    g.memory_bandwidth_gbs = positive("memory_bandwidth_gbs");
    g.l2_mb = opt_nonneg("l2_mb");
    g.fp32_tflops = positive("fp32_tflops");
    g.tf32 = peak("tf32_dense", "tf32_sparse");
    g.fp16 = peak("fp16_dense", "fp16_sparse");
    g.fp16_fp32acc = peak("fp16_fp32acc_dense", "fp16_fp32acc_sparse");
    g.bf16 = peak("bf16_dense", "bf16_sparse");
    g.fp8 = peak("fp8_dense", "fp8_sparse");
    g.fp8_fp32acc = peak("fp8_fp32acc_dense", "fp8_fp32acc_sparse");
    g.int8 = peak("int8_dense_tops", "int8_sparse_tops");
    g.nvlink = opt_str("nvlink", "none");
    g.nvlink_gbs = opt_nonneg("nvlink_gbs").value_or(0.0);
    g.nvlink_mesh_links = static_cast<int>(opt_whole("nvlink_mesh_links", 64));
    g.p2p = boolean("p2p");
    g.pcie_gen = static_cast<int>(positive_int("pcie_gen", 16));
    g.tdp_w = positive("tdp_w");
    g.ecc = one_of("ecc", {"yes", "no", "optional"});
    g.ecc_note = opt_str("ecc_note");
    g.mig_max = static_cast<int>(opt_whole("mig_max", 1024));
    g.mig_note = opt_str("mig_note");
    g.msrp_usd = opt_nonneg("msrp_usd");
    g.price_basis_usd = opt_nonneg("price_basis_usd");
    g.cloud_usd_per_hr = opt_nonneg("cloud_usd_per_hr");
    g.cloud_note = opt_str("cloud_note");
    g.sources = str_list("sources", false);
    g.confidence = one_of("confidence", {"high", "med-high", "medium", "low"});
    g.derived = str_list("derived", false);
    g.notes = opt_str("notes");
    if (!g.fp16_fp32acc.present() && g.fp16.present())
      fail(t_, "fp16_dense is given without fp16_fp32acc_dense (the FP32-accumulate rate training sees)");
    return g;
  }

 private:
  [[noreturn]] void fail(const toml::node& n, const std::string& msg) const {
    throw InputError(fmt::format("{}:{}: {}", where_, n.source().begin.line, msg));
  }
  const toml::node& need(const char* key) const {
    const toml::node* n = t_.get(key);
    if (n == nullptr) fail(t_, fmt::format("device is missing '{}'", key));
    return *n;
  }
  std::string str(const char* key) const {
    const toml::node& n = need(key);
    if (!n.is_string()) fail(n, fmt::format("'{}' must be a string", key));
    if (strings::has_control(n.as_string()->get())) fail(n, fmt::format("'{}' holds a control character", key));
    return std::string(n.as_string()->get());
  }
  std::string opt_str(const char* key, const char* fallback = "") const {
    return t_.get(key) ? str(key) : std::string(fallback);
  }
  std::string one_of(const char* key, std::initializer_list<const char*> allowed) const {
    const std::string v = str(key);
    for (const char* a : allowed)
      if (v == a) return v;
    std::vector<std::string> names(allowed.begin(), allowed.end());
    fail(need(key), fmt::format("'{}' must be one of {}, got '{}'", key, strings::join(names, ", "), strings::printable(v)));
  }
  double number(const toml::node& n, const char* key) const {
    if (auto i = n.as_integer()) return static_cast<double>(i->get());
    if (auto f = n.as_floating_point()) {
      if (!std::isfinite(f->get())) fail(n, fmt::format("'{}' must be finite", key));
      return f->get();
    }
    fail(n, fmt::format("'{}' must be a number", key));
  }
  double positive(const char* key) const {
    const toml::node& n = need(key);
    const double v = number(n, key);
    if (!(v > 0)) fail(n, fmt::format("'{}' must be positive, got {}", key, v));
    return v;
  }
  std::int64_t positive_int(const char* key, std::int64_t max) const {
    const toml::node& n = need(key);
    if (!n.is_integer()) fail(n, fmt::format("'{}' must be an integer", key));
    const auto v = n.as_integer()->get();
    if (v <= 0 || v > max) fail(n, fmt::format("'{}' must be in [1, {}], got {}", key, max, v));
    return v;
  }
  /// An optional whole number in [0, max] (0 when absent).
  std::int64_t opt_whole(const char* key, std::int64_t max) const {
    const toml::node* n = t_.get(key);
    if (!n) return 0;
    const auto v = n->value<double>();
    if (!v || *v != std::floor(*v) || *v < 0 || *v > static_cast<double>(max))
      fail(*n, fmt::format("'{}' must be a whole number in [0, {}]", key, max));
    return static_cast<std::int64_t>(*v);
  }
  std::optional<double> opt_nonneg(const char* key) const {
    const toml::node* n = t_.get(key);
    if (n == nullptr) return std::nullopt;
    const double v = number(*n, key);
    if (v < 0) fail(*n, fmt::format("'{}' must not be negative, got {}", key, v));
    return v;
  }
  bool boolean(const char* key) const {
    const toml::node& n = need(key);
    if (!n.is_boolean()) fail(n, fmt::format("'{}' must be true or false", key));
    return n.as_boolean()->get();
  }
  std::vector<std::string> str_list(const char* key, bool required) const {
    const toml::node* n = t_.get(key);
    if (n == nullptr) {
      if (required) need(key);
      return {};
    }
    if (!n->is_array()) fail(*n, fmt::format("'{}' must be an array of strings", key));
    std::vector<std::string> out;
    for (auto&& e : *n->as_array()) {
      if (!e.is_string()) fail(e, fmt::format("'{}' must hold strings", key));
      if (strings::has_control(e.as_string()->get())) fail(e, fmt::format("'{}' holds a control character", key));
      out.emplace_back(e.as_string()->get());
    }
    return out;
  }
  Peak peak(const char* dense_key, const char* sparse_key) const {
    Peak p;
    p.dense = opt_nonneg(dense_key);
    p.sparse = opt_nonneg(sparse_key);
    if (p.dense && !(*p.dense > 0)) fail(need(dense_key), fmt::format("'{}' must be positive", dense_key));
    if (p.sparse && !p.dense)
      fail(need(sparse_key), fmt::format("'{}' is given without '{}' (peaks must be dense first)", sparse_key, dense_key));
    if (p.sparse && *p.dense > *p.sparse)
      fail(need(dense_key), fmt::format("'{}' = {} exceeds '{}' = {}: the dense peak cannot be above the sparse one",
                                        dense_key, *p.dense, sparse_key, *p.sparse));
    return p;
  }

  const toml::table& t_;
  std::string where_;
};

std::string normalize(std::string_view s) {
  std::string out = strings::lower(s);
  std::replace(out.begin(), out.end(), ' ', '-');
  std::replace(out.begin(), out.end(), '_', '-');
  return out;
}

}  // namespace

Catalog Catalog::builtin() {
  Catalog c;
  c.add_text(embedded::kGpuCatalog, "built-in catalog (data/gpus.toml)");
  for (auto& g : c.gpus_) g.origin = "built-in";
  return c;
}

void Catalog::add_text(const std::string& text, const std::string& where) {
  const toml::table root = parse_toml(text, where);
  for (auto&& [k, v] : root)
    if (k.str() != "gpu")
      throw InputError(fmt::format("{}:{}: unknown top-level key '{}' (devices are [[gpu]] tables)", where,
                                   v.source().begin.line, strings::printable(k.str())));
  const toml::array* arr = root["gpu"].as_array();
  if (arr == nullptr || arr->empty()) throw InputError(fmt::format("{}: no [[gpu]] tables", where));
  std::set<std::string> seen;
  std::vector<Gpu> added;
  for (auto&& node : *arr) {
    if (!node.is_table())
      throw InputError(fmt::format("{}:{}: 'gpu' entries must be tables", where, node.source().begin.line));
    Gpu g = DeviceReader(*node.as_table(), where).read();
    if (!seen.insert(g.id).second)
      throw InputError(fmt::format("{}:{}: device id '{}' appears twice in this file", where, g.line, g.id));
    g.origin = where;
    added.push_back(std::move(g));
  }
  // Only now, with the whole file valid, change the catalog.
  for (auto& g : added) {
    auto it = std::find_if(gpus_.begin(), gpus_.end(), [&](const Gpu& x) { return x.id == g.id; });
    if (it != gpus_.end()) *it = std::move(g);
    else gpus_.push_back(std::move(g));
  }
}

void Catalog::add_file(const std::filesystem::path& path) {
  add_text(files::read_all(path, "--catalog"), path.string());
}

const Gpu& Catalog::find(std::string_view query) const {
  const std::string q = normalize(query);
  for (const auto& g : gpus_)
    if (g.id == q) return g;
  for (const auto& g : gpus_)
    for (const auto& a : g.aliases)
      if (normalize(a) == q) return g;
  std::vector<std::string> family;
  for (const auto& g : gpus_)
    if (g.id.rfind(q + "-", 0) == 0 || (g.id.rfind("rtx-", 0) == 0 && g.id.rfind("rtx-" + q + "-", 0) == 0))
      family.push_back(g.id);
  if (family.size() == 1) return find(family[0]);
  if (family.size() > 1)
    throw InputError(fmt::format("GPU '{}' is ambiguous: {}", strings::printable(query), strings::join(family, ", ")));
  std::vector<std::string> ids;
  for (const auto& g : gpus_) ids.push_back(g.id);
  throw InputError(fmt::format("unknown GPU '{}' (did you mean: {}? `gpuvs catalog` lists all)",
                               strings::printable(query), strings::join(strings::closest(q, ids, 3), ", ")));
}

const std::map<std::string, std::string>& sources() {
  static const std::map<std::string, std::string> map = [] {
    std::map<std::string, std::string> m;
    std::istringstream in(embedded::kGpuSources);
    std::string line;
    while (std::getline(in, line)) {
      // "- **S13**: text"
      if (line.rfind("- **S", 0) != 0) continue;
      const auto end = line.find("**", 4);
      if (end == std::string::npos) continue;
      const std::string id = line.substr(4, end - 4);
      std::string text = line.substr(end + 2);
      if (!text.empty() && text[0] == ':') text = text.substr(1);
      if (!text.empty() && text[0] == ' ') text = text.substr(1);
      m[id] = text;
    }
    return m;
  }();
  return map;
}

}  // namespace gpuvs::catalog
