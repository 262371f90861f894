// SPDX-License-Identifier: Apache-2.0
// A workload as the user asked for it, resolved once: the network a name or a model file gives under the
// options that shape it, its family, and the graphs built from it. Commands resolve a workload here and pass
// it down by `const Workload&`; nothing below resolves the name again. Which pricer answers a request — the
// LLM serving model or the per-op graph roofline — is decided here too, by one rule for every command.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "ir/ir.hpp"
#include "models/networks.hpp"

namespace gpuvs::workload {

/// A graph built from a workload, and a number no other graph of this process has, before or after: a key for
/// what is computed from the graph (an address would be, once the graph is gone, another graph's).
struct BuiltGraph {
  ir::Graph graph;
  std::uint64_t serial = 0;
};

class Workload {
 public:
  /// `name` resolved by workload/resolve.hpp's rule (a model file by its extension, else a built-in name), with
  /// the keys of `options` that shape a network: `gpt`'s shape keys, an ONNX file's symbolic dims. Other keys are
  /// the caller's and ignored here. InputError as resolve_network's.
  explicit Workload(std::string name, const std::map<std::string, std::string>& options = {});

  /// The name as the user gave it (a built-in id or a path).
  const std::string& name() const { return name_; }
  const models::NetworkInfo& network() const { return net_; }
  models::Family family() const { return net_.family; }
  /// The option values that shaped it (the subset of the options it was resolved with).
  const std::map<std::string, std::string>& shape() const { return shape_; }
  /// True when `name` under `options` resolves to this workload: the same name and the same shape options.
  bool is(const std::string& name, const std::map<std::string, std::string>& options) const;
  /// std::logic_error unless is(name, options): a request priced with another request's workload is a bug.
  void check_is(const std::string& name, const std::map<std::string, std::string>& options) const;

  /// The graph under `opt` (forward, plus backward and Adam when opt.training): built on first use and kept
  /// while this workload or a copy of it lives, up to ~600 k nodes held in its store (then the held graphs are
  /// let go; one a caller still holds lives on). The fitter and the advisor price the same graphs many times,
  /// and building dominates pricing. Safe to call from several threads.
  std::shared_ptr<const BuiltGraph> graph(const models::NetworkOptions& opt) const;

  /// Where graphs are kept: one per workload, or one for all the workloads of a Workloads, so that the bound
  /// on nodes held is the collection's.
  struct GraphStore;

 private:
  friend class Workloads;
  Workload(std::string name, const std::map<std::string, std::string>& options, std::shared_ptr<GraphStore> store);
  std::string name_;
  models::NetworkInfo net_;
  std::map<std::string, std::string> shape_;
  std::uint64_t id_ = 0;                // tells this workload's graphs from the others' in a shared store
  std::shared_ptr<GraphStore> graphs_;  // shared by copies: a copy prices the graphs its original built
};

/// Workloads resolved once each, by name and shape options: for a caller that meets the same workloads again
/// and again (validation rows priced under every candidate constant of a fit). Safe from several threads.
class Workloads {
 public:
  Workloads();
  /// The workload `name` under `options` resolves to, resolved on the first request. Its graphs are kept in
  /// one store for all (600 k nodes in all, as one workload's).
  const Workload& get(const std::string& name, const std::map<std::string, std::string>& options = {});

 private:
  std::shared_ptr<Workload::GraphStore> store_;
  std::mutex mutex_;
  std::map<std::string, std::unique_ptr<const Workload>> held_;
};

/// Which model prices a request.
enum class Pricer {
  graph,    // the per-op roofline over the workload's graph (perf/predict.hpp)
  serving,  // the LLM serving model: prefill, decode, whole requests under an engine's batching (perf/serving.hpp)
};
/// The one rule, for predict, compare, validate and advise alike: prefill and decode are LLM serving whatever
/// the workload (the serving model refuses what is no decoder); inference ("infer") of a decoder is LLM
/// serving; training, and inference of any other family, is the graph's. `mode`: train, infer, prefill, decode.
Pricer pricer_for(const std::string& mode, models::Family family);

}  // namespace gpuvs::workload
