// SPDX-License-Identifier: Apache-2.0
#include "perf/parallel.hpp"

#include <fmt/format.h>


#include <algorithm>
#include <cmath>

#include "core/error.hpp"
#include "core/toml_input.hpp"
#include "core/strings.hpp"
#include "perf/system_facts.hpp"

namespace gpuvs::embedded {
extern const char* const kNetworks;
}

namespace gpuvs::perf {

std::vector<Fabric> parse_fabrics(const std::string& text, const std::string& where) {
  const toml::table t = parse_toml(text, where);
  std::vector<Fabric> out;
  const auto* arr = t["network"].as_array();
  if (!arr) throw InputError(fmt::format("{}: no [[network]] tables", where));
  for (const auto& node : *arr) {
    const auto* n = node.as_table();
    const int line = static_cast<int>(node.source().begin.line);
    if (!n) throw InputError(fmt::format("{}:{}: a network must be a table", where, line));
    Fabric w;
    w.id = (*n)["id"].value_or(std::string());
    w.name = (*n)["name"].value_or(std::string());
    w.source = (*n)["source"].value_or(std::string());
    w.gbs_per_gpu = (*n)["gbs_per_gpu"].value_or(0.0);
    w.latency_s = (*n)["latency_us"].value_or(0.0) * 1e-6;
    w.nvlink_domain = static_cast<int>((*n)["nvlink_domain"].value_or(std::int64_t{0}));
    if (w.id.empty() || w.name.empty() || w.source.empty() || !(w.gbs_per_gpu > 0) || !(w.latency_s > 0) || w.nvlink_domain < 0)
      throw InputError(fmt::format("{}:{}: a network needs id, name, source, gbs_per_gpu > 0, latency_us > 0", where, line));
    out.push_back(w);
  }
  return out;
}

namespace {
std::vector<Fabric>& fabric_table() {
  static std::vector<Fabric> n = parse_fabrics(embedded::kNetworks, "built-in data/networks.toml");
  return n;
}
}  // namespace

const std::vector<Fabric>& fabrics() { return fabric_table(); }

void register_fabric(const Fabric& fabric) {
  auto& t = fabric_table();
  for (auto& n : t)
    if (n.id == fabric.id) {
      n = fabric;
      return;
    }
  t.push_back(fabric);
}

const Fabric& fabric_by_id(const std::string& id) {
  std::vector<std::string> ids;
  for (const auto& n : fabrics()) {
    if (n.id == id) return n;
    ids.push_back(n.id);
  }
  throw InputError(fmt::format("network '{}' is unknown (known: {})", strings::printable(id), strings::join(ids, ", ")));
}

const Fabric& default_fabric(const catalog::Gpu& gpu, std::string* why) {
  auto say = [&](const std::string& s) {
    if (why) *why = s;
  };
  const bool sxm = gpu.segment == "datacenter" && gpu.has_nvlink() && gpu.nvlink.find("bridge") == std::string::npos;
  if (sxm && gpu.arch == "Ampere") {
    say("DGX A100-class nodes: InfiniBand HDR, 8 x 200 Gb/s (network=ID to change)");
    return fabric_by_id("ib-hdr-8x200");
  }
  if (sxm && (gpu.arch == "Hopper" || gpu.arch.rfind("Blackwell", 0) == 0)) {
    say("DGX H100/B200-class nodes: InfiniBand NDR, 8 x 400 Gb/s (network=ID to change)");
    return fabric_by_id("ib-ndr-8x400");
  }
  say("outside DGX-class nodes no GPU fabric is typical: one 100 GbE NIC per node (network=ID to change)");
  return fabric_by_id("eth-100");
}

ParallelLayout make_layout(int gpus, int tp, int pp, int cp, int vp, std::int64_t micro_batch, std::int64_t global_batch,
                           int layers, int heads, std::int64_t seq_len, const std::string& network) {
  ParallelLayout l;
  for (auto [name, v] : {std::pair<const char*, int>{"tp", tp}, {"pp", pp}, {"cp", cp}, {"vp", vp}})
    if (v < 1 || v > 4096) throw InputError(fmt::format("{}={} must be a whole number from 1 to 4096", name, v));
  if (gpus % (tp * pp * cp) != 0)
    throw InputError(fmt::format("{} GPUs do not divide into tp={} x pp={} x cp={} (= {}) groups", gpus, tp, pp, cp, tp * pp * cp));
  if (heads % tp != 0) throw InputError(fmt::format("tp={} does not divide the {} attention heads", tp, heads));
  if (layers % (pp * vp) != 0)
    throw InputError(fmt::format("pp={} x vp={} does not divide the {} layers", pp, vp, layers));
  if (vp > 1 && pp == 1) throw InputError("vp > 1 (interleaved stages) needs pp > 1");
  if (seq_len % cp != 0 || seq_len / cp < 1) throw InputError(fmt::format("cp={} does not divide the sequence of {}", cp, seq_len));
  if (micro_batch < 1) throw InputError("the micro-batch must be at least 1");
  l.tp = tp;
  l.pp = pp;
  l.cp = cp;
  l.vp = vp;
  l.dp = gpus / (tp * pp * cp);
  l.micro_batch = micro_batch;
  l.global_batch = global_batch > 0 ? global_batch : micro_batch * l.dp;
  if (l.global_batch % (micro_batch * l.dp) != 0)
    throw InputError(fmt::format("global_batch={} is not a multiple of data-parallel {} x micro-batch {}", l.global_batch, l.dp,
                                 micro_batch));
  l.micro_batches = l.global_batch / (micro_batch * l.dp);
  l.network = network;
  return l;
}

Link group_link(const catalog::Gpu& gpu, const ParallelLayout& l, int size, int stride, bool collective) {
  if (size <= 1) return Link{"none", 0, 0, "none"};
  const Fabric& fabric = fabric_by_id(l.network);
  const int span = size * stride;  // ranks from the group's first to past its last
  // Inside one node: NVLink, PCIe peer-to-peer or staged through host memory, as for one server.
  if (span <= l.gpus_per_node) return l.nvls ? link_for(gpu, size) : without_nvls(link_for(gpu, size));
  if (fabric.nvlink_domain > 0 && span <= fabric.nvlink_domain && gpu.has_nvlink()) {
    Link k = link_for(gpu, std::min(size, l.gpus_per_node));
    if (!l.nvls) k = without_nvls(k);
    k.description = fmt::format("{} (NVLink domain of {})", k.description, fabric.nvlink_domain);
    return k;
  }
  Link k;
  k.kind = "network";
  k.bus_gbs = fabric.gbs_per_gpu * system_facts().network_busbw;
  k.latency_s = fabric.latency_s;
  k.description = fabric.name;
  // Several of the group's ranks on each node (a group laid out with a stride under a node's width): NCCL's rings run
  // through the node's own link and cross between nodes on every rank's NIC at once (one NIC per GPU, rail-aligned),
  // so the node boundary carries that many NICs' worth, and the ring runs at the slower of it and the link inside.
  const int per_node = collective ? std::min(size, std::max(1, l.gpus_per_node / stride)) : 1;
  if (per_node > 1) {
    const Link inside = link_for(gpu, per_node);
    if (per_node * k.bus_gbs < inside.bus_gbs) {
      k.bus_gbs *= per_node;
      k.description = fmt::format("{} ({} ranks a node, each on its own NIC)", fabric.name, per_node);
    } else {
      k.bus_gbs = inside.bus_gbs;
      k.description = fmt::format("{} inside each node ({} ranks a node; {} between nodes is not the limit)", inside.description, per_node,
                                  fabric.name);
    }
  }
  return k;
}

namespace {
// What a window cannot hide of an exchange: what it leaves over, and never less than the last bucket, which nothing
// follows (never more than the whole).
double exposed_part(double seconds, double window_s, double last_bucket_s) {
  return std::max(seconds - window_s, std::min(last_bucket_s, seconds));
}
}  // namespace

DataParallelExchange data_parallel_exchange(const std::string& sharding, bool gather_overlap, double grad_bytes, double weight_bytes,
                                            double forward_s, double backward_s, double bucket_bytes, int n, const Link& link) {
  DataParallelExchange x;
  const double grad_bucket = std::min(bucket_bytes, grad_bytes), weight_bucket = std::min(bucket_bytes, weight_bytes);
  if (sharding == "full") {
    x.bytes = 2.0 * weight_bytes + grad_bytes;
    x.seconds = 2.0 * allgather_seconds(weight_bytes, n, link) + allgather_seconds(grad_bytes, n, link);
    x.exposed_s = exposed_part(x.seconds, forward_s + backward_s, allgather_seconds(weight_bucket, n, link) + allgather_seconds(grad_bucket, n, link));
  } else if (sharding == "zero1" || sharding == "zero2") {
    x.bytes = grad_bytes + weight_bytes;
    const double reduce_s = allgather_seconds(grad_bytes, n, link), gather_s = allgather_seconds(weight_bytes, n, link);
    x.seconds = reduce_s + gather_s;
    x.exposed_s = exposed_part(reduce_s, backward_s, allgather_seconds(grad_bucket, n, link)) +
                  (gather_overlap ? exposed_part(gather_s, forward_s, allgather_seconds(weight_bucket, n, link)) : gather_s);
  } else {
    x.bytes = 2.0 * grad_bytes;
    x.seconds = allreduce_seconds(grad_bytes, n, link);
    x.exposed_s = exposed_part(x.seconds, backward_s, allreduce_seconds(grad_bucket, n, link));
  }
  return x;
}

ParallelStep parallel_step(const catalog::Gpu& gpu, const ParallelLayout& l, const StageCost& stage, const TrafficShape& t) {
  ParallelStep s;
  s.tp_link = group_link(gpu, l, l.tp, 1);
  s.cp_link = group_link(gpu, l, l.cp, l.tp);
  s.dp_link = group_link(gpu, l, l.dp, l.tp * l.cp);
  // Neighbouring stages sit tp x cp x dp ranks apart; once the pipeline spans more than a node, its slowest
  // boundary crosses the network, and the schedule runs at that boundary's pace.
  s.pp_link = group_link(gpu, l, l.pp, l.tp * l.cp * l.dp, false);
  // Across nodes, each of a stage's tp ranks sends its 1/tp share of the boundary activation to its peer on its own
  // NIC, and the next stage gathers it over its node's link (Megatron's scatter/gather, Narayanan et al. 2021, 4.1;
  // with sequence parallelism the activation is split so already): the boundary carries tp NICs' worth.
  if (s.pp_link.kind == "network" && l.tp > 1) {
    const int nics = std::min(l.tp, l.gpus_per_node);
    s.pp_link.bus_gbs *= nics;
    s.pp_link.description = fmt::format("{} ({} NICs a stage boundary: the tp ranks' shares)", s.pp_link.description, nics);
  }
  // TP: all-reduce of one layer's activations, 2 forward + 2 backward (+2 when the forward is recomputed).
  const double act = t.tokens * t.hidden * t.act_bytes;
  const int per_layer = t.recompute_full ? 6 : 4;
  s.tp_s = l.tp > 1 ? per_layer * t.stage_layers * allreduce_seconds(act, l.tp, s.tp_link) : 0.0;
  // Overlapped with the GEMMs, only what the GEMMs cannot cover stays exposed.
  if (t.tp_overlap) s.tp_s = std::max(0.0, s.tp_s - stage.gemm_s);
  // Sequence parallelism: the replicated norms, adds and dropout run on 1/tp of the tokens.
  const double split_saving = t.sequence_parallel && l.tp > 1 ? stage.replicated_s * (1.0 - 1.0 / l.tp) : 0.0;
  // CP: the stage's attention covers the whole sequence from a 1/cp chunk of queries (cp x the local
  // work); each layer passes K and V around the ring (cp - 1) times forward and twice that backward,
  // overlapped with that attention.
  const double attention = stage.attention_s * l.cp;
  if (l.cp > 1) {
    const double kv = t.tokens * t.kv_bytes_per_token;
    const double ring = 3.0 * (l.cp - 1) * t.stage_layers *
                        (kv / (s.cp_link.bus_gbs * 1e9) + s.cp_link.latency_s);
    s.cp_exposed_s = std::max(0.0, ring - attention);
  }
  // PP: the boundary activation forward and its gradient back, per virtual stage.
  s.pp_s = l.pp > 1 ? 2.0 * l.vp * (act / (s.pp_link.bus_gbs * 1e9) + s.pp_link.latency_s) : 0.0;
  // With an interleaved schedule a chunk's sends run while the rank computes another chunk: only what that
  // compute cannot cover stays exposed.
  if (t.pp_overlap && l.vp > 1) s.pp_s = std::max(0.0, s.pp_s - stage.compute_s);
  s.microbatch_s = stage.compute_s - split_saving + (attention - stage.attention_s) + s.tp_s + s.cp_exposed_s + s.pp_s;
  s.bubble_s = static_cast<double>(l.pp - 1) / l.vp * s.microbatch_s;
  // DP: this rank's gradients reduced over the data-parallel group once per step, behind the last micro-batch's
  // backward; a sharded optimizer's gathered weights behind the first one's forward, or after the update.
  if (l.dp > 1) {
    const DataParallelExchange x =
        data_parallel_exchange(t.sharding, t.param_gather_overlap, stage.params * t.grad_bytes_per_param, stage.params * t.weight_bytes_per_param,
                               stage.compute_s - stage.backward_s, stage.backward_s, system_facts().megatron_bucket_bytes, l.dp, s.dp_link);
    s.dp_s = x.seconds;
    s.dp_exposed_s = x.exposed_s;
  }
  s.optimizer_s = stage.optimizer_s;
  s.step_s = static_cast<double>(l.micro_batches) * s.microbatch_s + s.bubble_s + s.dp_exposed_s + s.optimizer_s;
  return s;
}

}  // namespace gpuvs::perf
