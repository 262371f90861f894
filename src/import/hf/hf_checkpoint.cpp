// SPDX-License-Identifier: Apache-2.0
#include "import/hf/hf_checkpoint.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <regex>

#include "core/error.hpp"
#include "core/files.hpp"
#include "core/strings.hpp"
#include "import/hf/hf_config.hpp"
#include "import/safetensors/safetensors_file.hpp"

namespace gpuvs::import {

namespace fs = std::filesystem;

namespace {

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::string(v) : std::string();
}

/// huggingface_hub passes its cache paths through expanduser: a leading ~ is the home folder.
fs::path expand_home(const std::string& p) {
  if (p == "~" || p.rfind("~/", 0) == 0) return fs::path(env("HOME")) / p.substr(std::min<std::size_t>(2, p.size()));
  return p;
}

bool ends_with_nocase(const std::string& s, const std::string& tail) { return strings::ends_with(strings::lower(s), tail); }

std::string trimmed(const std::string& s) {
  const auto b = s.find_first_not_of(" \t\r\n");
  return b == std::string::npos ? std::string() : s.substr(b, s.find_last_not_of(" \t\r\n") - b + 1);
}

// Hub repo ids: a namespace and a name of letters, digits, '-', '_' and '.' (huggingface_hub validate_repo_id),
// optionally @revision (a branch, tag or commit; branches may hold '/').
const std::regex& hub_id_pattern() {
  static const std::regex re(R"(^([A-Za-z0-9][A-Za-z0-9._-]*)/([A-Za-z0-9][A-Za-z0-9._-]*)(@([A-Za-z0-9._/-]+))?$)");
  return re;
}

// huggingface_hub allows repo ids of 96 characters; with a revision, well under this. A longer name is no hub id
// (and is never handed to std::regex, whose matcher recurses per character).
constexpr std::size_t kMaxNameChars = 512;

bool is_commit(const std::string& s) { return std::regex_match(s, std::regex("^[0-9a-f]{40}$")); }

/// A parameter count as people write it: 86,784; 12.3 M; 8.03 B.
std::string count_text(std::uint64_t n) {
  const double x = static_cast<double>(n);
  if (n < 1000000) return fmt::format("{}", n);
  if (x < 1e9) return fmt::format("{:.3g} M", x / 1e6);
  return fmt::format("{:.3g} B", x / 1e9);
}

std::string weights_summary(const SafetensorsHeader& w) {
  const auto counts = w.elements_by_dtype();
  std::vector<std::pair<std::string, std::uint64_t>> by(counts.begin(), counts.end());
  std::stable_sort(by.begin(), by.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  std::vector<std::string> parts;
  for (const auto& [dtype, n] : by) parts.push_back(fmt::format("{} {}", dtype, count_text(n)));
  return fmt::format("{} parameters in {} tensors, {} file{} ({})", count_text(w.parameters()), w.tensors.size(),
                     w.files.size(), w.files.size() == 1 ? "" : "s", strings::join(parts, ", "));
}

}  // namespace

bool is_safetensors_path(const std::string& name) {
  return ends_with_nocase(name, ".safetensors") || ends_with_nocase(name, ".safetensors.index.json");
}

fs::path hf_hub_cache() {
  if (const std::string v = env("HF_HUB_CACHE"); !v.empty()) return expand_home(v);
  if (const std::string v = env("HUGGINGFACE_HUB_CACHE"); !v.empty()) return expand_home(v);
  if (const std::string v = env("HF_HOME"); !v.empty()) return expand_home(v) / "hub";
  const std::string xdg = env("XDG_CACHE_HOME");
  return (xdg.empty() ? expand_home("~/.cache") : expand_home(xdg)) / "huggingface" / "hub";
}

bool is_checkpoint(const std::string& name) {
  if (name.empty() || name.size() > kMaxNameChars) return false;
  if (is_safetensors_path(name)) return true;
  std::error_code ec;
  // A folder is a checkpoint when it holds a config or is named as a path: a folder called resnet50 in the
  // working directory does not hide the built-in resnet50.
  if (fs::is_directory(name, ec)) return name.find('/') != std::string::npos || fs::exists(fs::path(name) / "config.json", ec);
  return std::regex_match(name, hub_id_pattern()) && !fs::exists(name, ec);
}

fs::path hf_cached_snapshot(const std::string& id) {
  std::smatch m;
  if (id.size() > kMaxNameChars || !std::regex_match(id, m, hub_id_pattern())) throw InputError(fmt::format("'{}' is not a Hugging Face hub id (ORG/NAME)", strings::printable(id)));
  const std::string repo = m[1].str() + "/" + m[2].str();
  const std::string revision = m[4].matched ? m[4].str() : "main";
  if (revision.find("..") != std::string::npos || revision.front() == '/' || revision.back() == '/')
    throw InputError(fmt::format("{}: revision '{}' is not a branch, tag or commit name", repo, strings::printable(revision)));
  const fs::path cache = hf_hub_cache();
  const fs::path dir = cache / ("models--" + m[1].str() + "--" + m[2].str());
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    throw InputError(fmt::format("{} is not in the Hugging Face cache ({}), nor a file or folder here: gpuvs reads the cache and never downloads "
                                 "(huggingface-cli download {} config.json fetches what it needs; HF_HOME or HF_HUB_CACHE name another cache)",
                                 repo, cache.string(), repo));
  std::string commit = revision;
  if (!is_commit(revision)) {
    const fs::path ref = dir / "refs" / revision;
    if (!fs::is_regular_file(ref, ec))
      throw InputError(fmt::format("{}: the cache ({}) has no refs/{}: name a cached commit with {}@COMMIT", repo, dir.string(), revision, repo));
    commit = trimmed(files::read_all(ref, "hub cache ref", 4096));
    if (!is_commit(commit))
      throw InputError(fmt::format("{}: {} holds '{}', not a commit hash", repo, ref.string(), strings::printable(commit)));
  }
  const fs::path snapshot = dir / "snapshots" / commit;
  if (!fs::is_directory(snapshot, ec))
    throw InputError(fmt::format("{}@{}: the cache ({}) holds no snapshot of that commit", repo, revision, dir.string()));
  if (!fs::exists(snapshot / "config.json", ec))
    throw InputError(fmt::format("{}@{}: the cached snapshot has no config.json (huggingface-cli download {} config.json fetches it)", repo, revision,
                                 repo));
  return snapshot;
}

models::NetworkInfo checkpoint_network(const std::string& name, const std::map<std::string, std::string>& options) {
  for (const auto& key : models::gpt_shape_keys())
    if (options.count(key))
      throw InputError(fmt::format("option {} sets the shape of workload {} only; '{}' has its own shape", key, models::kGptWorkload, strings::printable(name)));
  std::error_code ec;
  fs::path dir;
  std::string weights;  // a weights file the name gave
  if (is_safetensors_path(name)) {
    dir = fs::path(name).parent_path();
    weights = name;
  } else if (fs::is_directory(name, ec)) {
    dir = name;
  } else {
    dir = hf_cached_snapshot(name);
  }
  const fs::path config = dir / "config.json";
  if (!fs::exists(config, ec))
    throw InputError(fmt::format("{}: no config.json {}: gpuvs reads the model's shape from it (weights alone do not say it)", strings::printable(name),
                                 weights.empty() ? "in the folder" : "beside the weights"));
  models::NetworkInfo n = hf_network(files::read_all(config, "model file"), config.string());
  n.id = name;
  if (weights.empty()) {
    if (fs::exists(dir / "model.safetensors.index.json", ec)) {
      // A cache may hold the config and the index without the shards (only what the question needed was fetched).
      for (const auto& shard : safetensors_index_shards((dir / "model.safetensors.index.json").string()))
        if (!fs::exists(dir / shard, ec)) {
          n.description += fmt::format("; its weights are not all here ({} is missing): the shape from config.json alone", strings::printable(shard));
          return n;
        }
      weights = (dir / "model.safetensors.index.json").string();
    } else if (fs::exists(dir / "model.safetensors", ec)) {
      weights = (dir / "model.safetensors").string();
    }
  }
  if (weights.empty()) {
    n.description += "; no safetensors weights beside it: the shape from config.json alone";
    return n;
  }
  const SafetensorsHeader w = ends_with_nocase(weights, ".index.json") ? read_safetensors_index(weights) : read_safetensors_file(weights);
  const double params = static_cast<double>(w.parameters());
  n.published_params = params;
  n.params_source = "the checkpoint's tensors";
  n.description += "; weights: " + weights_summary(w);
  if (n.family == models::Family::decoder && params > 0) {
    const double shape = static_cast<double>(models::decoder_params(n.decoder));
    if (std::abs(shape / params - 1.0) > 0.01)
      n.description += fmt::format(" (the config's shape makes {}: the tensors hold what gpuvs does not build, or tied weights stored twice)",
                                   count_text(static_cast<std::uint64_t>(shape)));
  }
  return n;
}

}  // namespace gpuvs::import
