// SPDX-License-Identifier: Apache-2.0
#include "workload/workload.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <stdexcept>
#include <utility>

#include "workload/resolve.hpp"

namespace gpuvs::workload {

namespace {

// Bounded by nodes held (a few hundred bytes each), not by graphs: a 2 T-parameter decoder is 100 x the nodes
// of ResNet-50. 600 k nodes is ~350 MB (advise over Llama-2-70B peaks at 740 MB RSS).
constexpr std::size_t kMaxNodesHeld = 600'000;
constexpr std::size_t kMaxGraphsHeld = 256;

std::atomic<std::uint64_t> g_next_serial{1};  // graphs' and workloads' numbers: never reused

// Everything in NetworkOptions that shapes a graph.
std::string options_key(const models::NetworkOptions& o) {
  return fmt::format("{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}", o.batch, static_cast<int>(o.dtype), o.seq_len, o.flash_attention,
                     o.training, o.decode_context, o.lora_rank, static_cast<int>(o.lora_targets), o.sample_len, o.head_copies,
                     o.fused_qkv, o.tensor_parallel, o.stage_layers, o.first_stage, o.last_stage);
}

// The keys of `options` that shape `net`: gpt's shape keys when it is gpt, an ONNX file's symbolic dims.
std::map<std::string, std::string> shaping(const models::NetworkInfo& net, const std::map<std::string, std::string>& options) {
  std::map<std::string, std::string> out;
  const auto& gpt = models::gpt_shape_keys();
  for (const auto& [k, v] : options)
    if (std::find(gpt.begin(), gpt.end(), k) != gpt.end() ||
        std::find(net.shape_options.begin(), net.shape_options.end(), k) != net.shape_options.end())
      out.emplace(k, v);
  return out;
}

std::string workloads_key(const std::string& name, const std::map<std::string, std::string>& options) {
  std::string key = name;
  for (const auto& [k, v] : options) key += fmt::format("\x1f{}={}", k, v);
  return key;
}

}  // namespace

struct Workload::GraphStore {
  std::mutex mutex;
  std::map<std::string, std::shared_ptr<const BuiltGraph>> held;
  std::size_t nodes_held = 0;
};

Workload::Workload(std::string name, const std::map<std::string, std::string>& options)
    : Workload(std::move(name), options, std::make_shared<GraphStore>()) {}

Workload::Workload(std::string name, const std::map<std::string, std::string>& options, std::shared_ptr<GraphStore> store)
    : name_(std::move(name)),
      net_(resolve_network(name_, options)),
      shape_(shaping(net_, options)),
      id_(g_next_serial.fetch_add(1)),
      graphs_(std::move(store)) {}

bool Workload::is(const std::string& name, const std::map<std::string, std::string>& options) const {
  return name == name_ && shaping(net_, options) == shape_;
}

void Workload::check_is(const std::string& name, const std::map<std::string, std::string>& options) const {
  if (!is(name, options))
    throw std::logic_error(fmt::format("a request for workload '{}' was priced with workload '{}' (resolved under other shape options?)", name,
                                       name_));
}

std::shared_ptr<const BuiltGraph> Workload::graph(const models::NetworkOptions& opt) const {
  const std::string key = fmt::format("{}#{}", id_, options_key(opt));
  {
    const std::lock_guard<std::mutex> lock(graphs_->mutex);
    if (auto it = graphs_->held.find(key); it != graphs_->held.end()) return it->second;
  }
  // Built outside the lock: a large decoder takes a while, and other threads' graphs need not wait for it. Two
  // threads asking for one new graph at once may both build it; the first stored is kept.
  auto built = std::make_shared<BuiltGraph>(BuiltGraph{models::build_network(net_, opt), g_next_serial.fetch_add(1)});
  const std::lock_guard<std::mutex> lock(graphs_->mutex);
  if (auto it = graphs_->held.find(key); it != graphs_->held.end()) return it->second;
  if (graphs_->nodes_held + built->graph.size() > kMaxNodesHeld || graphs_->held.size() >= kMaxGraphsHeld) {
    graphs_->held.clear();
    graphs_->nodes_held = 0;
  }
  graphs_->nodes_held += built->graph.size();
  graphs_->held.emplace(key, built);
  return built;
}

Workloads::Workloads() : store_(std::make_shared<Workload::GraphStore>()) {}

const Workload& Workloads::get(const std::string& name, const std::map<std::string, std::string>& options) {
  const std::string key = workloads_key(name, options);
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    if (auto it = held_.find(key); it != held_.end()) return *it->second;
  }
  std::unique_ptr<const Workload> w(new Workload(name, options, store_));
  const std::lock_guard<std::mutex> lock(mutex_);
  return *held_.emplace(key, std::move(w)).first->second;
}

Pricer pricer_for(const std::string& mode, models::Family family) {
  if (mode == "prefill" || mode == "decode") return Pricer::serving;
  if (mode == "infer" && family == models::Family::decoder) return Pricer::serving;
  return Pricer::graph;
}

}  // namespace gpuvs::workload
