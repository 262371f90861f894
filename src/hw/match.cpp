// SPDX-License-Identifier: Apache-2.0
#include "hw/match.hpp"

#include <fmt/format.h>

#include <cmath>

#include "core/strings.hpp"

namespace gpuvs::hw {

namespace {
// "RTX 4090" -> "4090", "A100 80GB SXM" -> "a100", "H100 SXM" -> "h100", "RTX A6000" -> "a6000".
std::string model_token(const std::string& catalog_name) {
  std::string n = strings::lower(catalog_name);
  for (const char* prefix : {"rtx ", "amd ", "nvidia "})
    if (n.rfind(prefix, 0) == 0) n = n.substr(std::string(prefix).size());
  return n.substr(0, n.find(' '));
}
bool contains(const std::string& hay, const std::string& needle) { return hay.find(needle) != std::string::npos; }
}  // namespace

std::string match_catalog(const GpuDevice& d, const catalog::Catalog& cat) {
  const std::string name = strings::lower(d.name);
  const double gib = static_cast<double>(d.memory_total_bytes) / 1073741824.0;
  std::string best;
  double best_score = 0;
  for (const auto& g : cat.gpus()) {
    const std::string token = model_token(g.name);
    if (token.empty() || !contains(name, token)) continue;
    double score = 4;
    if (g.sm_count == d.sm_count) score += 2;
    if (gib > 0 && std::fabs(gib - g.memory_gb) / g.memory_gb < 0.12) score += 2;
    const std::string cname = strings::lower(g.name);
    if ((contains(name, "sxm") && contains(cname, "sxm")) || (contains(name, "pcie") && contains(cname, "pcie"))) score += 1;
    if (contains(cname, "ada") == contains(name, "ada")) score += 1;  // RTX 6000 vs RTX 6000 Ada
    if (score > best_score) {
      best_score = score;
      best = g.id;
    }
  }
  return best_score >= 6 ? best : std::string();  // the name and at least SMs or memory must agree
}

std::vector<std::string> catalog_names_matching(const std::string& typed, const catalog::Catalog& cat) {
  std::string name = strings::lower(typed);
  for (char& c : name)
    if (c == '-' || c == '_') c = ' ';  // "A100-SXM4-40GB"
  std::vector<std::string> best;
  int best_score = 0;
  for (const auto& g : cat.gpus()) {
    const std::string token = model_token(g.name);
    if (token.empty() || !contains(" " + name + " ", " " + token + " ")) continue;  // the model as a word: "a10" is not in "a100"
    const std::string cname = strings::lower(g.name);
    int score = 4;
    if (contains(name, "pcie") == contains(cname, "pcie")) score += 2;  // nvidia-smi names PCIe cards so; SXM ones by memory
    if (contains(cname, "ada") == contains(name, "ada")) score += 1;
    if (contains(name, fmt::format("{}gb", static_cast<int>(std::lround(g.memory_gb))))) score += 1;
    if (score > best_score) {
      best_score = score;
      best = {g.id};
    } else if (score == best_score) {
      best.push_back(g.id);
    }
  }
  return best;
}

std::string match_catalog_name(const std::string& typed, const catalog::Catalog& cat) {
  const auto ids = catalog_names_matching(typed, cat);
  return ids.size() == 1 ? ids.front() : std::string();
}

NvidiaReport probe_nvidia_matched(const catalog::Catalog& cat) {
  NvidiaReport r = probe_nvidia();
  for (auto& g : r.gpus) g.catalog_id = match_catalog(g, cat);
  return r;
}

}  // namespace gpuvs::hw
