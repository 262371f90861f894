// SPDX-License-Identifier: Apache-2.0
// Multi-GPU, multi-node training plans for decoders: tensor (tp), pipeline (pp, interleaved into vp
// virtual stages), context (cp) and data parallelism (dp = GPUs / (tp pp cp)), micro-batches accumulated
// to a global batch, ZeRO/FSDP sharding, and the network each collective crosses. Arithmetic, not
// simulation (Narayanan et al. 2021, Korthikanti et al. 2022):
//   - one rank's stage graph (its tp shard of layers/pp blocks; the first stage holds the embedding, the
//     last the logits and loss) priced per micro-batch, the slower of the two end stages setting the pace;
//   - per layer and micro-batch, TP all-reduces of the activations (2 forward, 2 backward, 2 more with full
//     recompute) over the tp group, not overlapped (Megatron's default); CP's ring exchange of K and V,
//     hidden behind the attention it feeds when it can be;
//   - per micro-batch, the stage boundary's activation sent forward and its gradient back (pp > 1);
//   - the pipeline bubble: (pp - 1) / vp micro-batch times per step, i.e. (p - 1) / (m v) of the work;
//   - after the last micro-batch's backward, the gradients reduced over dp (reduce-scatter + all-gather
//     with a distributed optimizer: the same volume), overlapped with that backward except the last bucket.
// Ranks are ordered tp innermost, then cp, dp, pp (Megatron's order): a group stays inside a node's NVLink
// domain while its span fits, else it crosses the inter-node network (data/networks.toml).
#pragma once
#include <string>
#include <vector>

#include "catalog/catalog.hpp"
#include "perf/collective.hpp"

namespace gpuvs::perf {

/// The network between servers (InfiniBand, RoCE, Ethernet, an NVL72 rack's NVLink): a "fabric" in code,
/// so it is never confused with a model network (models::NetworkInfo); users name it with network=ID.
struct Fabric {
  std::string id, name, source;
  double gbs_per_gpu = 0;  // line rate per GPU, one direction, GB/s
  double latency_s = 0;
  int nvlink_domain = 0;   // GPUs joined by NVLink beyond one server (0: a server's own domain)
};

/// data/networks.toml (compiled in).
const std::vector<Fabric>& fabrics();
/// Parses network TOML; InputError "WHERE:LINE: ..." for missing or impossible fields.
std::vector<Fabric> parse_fabrics(const std::string& text, const std::string& where);
/// Adds (or replaces, by id) a network for the rest of this process: a cluster's measured one ("measured",
/// from `gpuvs evaluate` under MPI). Call before predicting on other threads.
void register_fabric(const Fabric& fabric);
/// By id; InputError naming the ids when unknown.
const Fabric& fabric_by_id(const std::string& id);
/// What a cluster of `gpu` usually has (DGX A100: HDR; DGX H100/B200: NDR; anything else: 100 GbE), with
/// the reason, so the output can say what it assumed.
const Fabric& default_fabric(const catalog::Gpu& gpu, std::string* why = nullptr);

struct ParallelLayout {
  int tp = 1, pp = 1, cp = 1, vp = 1, dp = 1;
  std::int64_t micro_batch = 1, global_batch = 0, micro_batches = 1;  // m = global / (dp x micro)
  std::string network;   // inter-node network id
  int gpus_per_node = 8;
  bool nvls = true;      // the collectives' software uses NVLink SHARP where the switch has it (the `nvls` option)
};

/// The layout `gpus` GPUs run with the given splits; InputError when they do not divide (GPUs by tp pp cp,
/// heads by tp, layers by pp vp, global batch by dp x micro-batch) or exceed the model.
ParallelLayout make_layout(int gpus, int tp, int pp, int cp, int vp, std::int64_t micro_batch, std::int64_t global_batch,
                           int layers, int heads, std::int64_t seq_len, const std::string& network);

/// The link a group of `size` ranks spread `stride` ranks apart crosses: the node's own links (NVLink, PCIe
/// peer-to-peer, or staged through host memory) while the group's span stays inside one node, NVLink while
/// it stays inside the network's NVLink domain (an NVL72 rack), else the network. Over the network, a collective
/// whose group has several ranks on each node runs its rings across all their NICs at once (rail-aligned: the
/// slower of that many NICs and the link inside the node); `collective` false (pipeline sends, one pair at a time)
/// keeps one NIC.
Link group_link(const catalog::Gpu& gpu, const ParallelLayout& l, int size, int stride, bool collective = true);

/// One micro-batch on the pace-setting stage, from its priced graph.
struct StageCost {
  double compute_s = 0;    // forward + backward (+ recompute) of one micro-batch, optimizer excluded
  double backward_s = 0;   // the part after the loss: the window the last micro-batch's DP reduction hides in
  double attention_s = 0;  // the attention cores (CP's exchange hides behind them; CP makes them cp x longer)
  double optimizer_s = 0;  // the Adam update as this rank runs it, once per step (its share where sharded)
  double params = 0;       // this rank's parameters
  double replicated_s = 0; // norms, residual adds and dropout on the whole residual stream (sequence parallelism splits them tp ways)
  double gemm_s = 0;       // the GEMMs (tensor-parallel communication overlapped with them hides behind them)
};

/// What crosses the links per micro-batch and per step.
struct TrafficShape {
  double tokens = 0;               // per micro-batch on one rank: micro-batch x seq / cp
  double hidden = 0;
  double act_bytes = 2;            // bytes per activation element
  std::string sharding = "none";   // none or zero1 (Megatron's distributed optimizer): data_parallel_exchange
  bool param_gather_overlap = false;  // zero1's weight gather waits for the next forward (overlap_param_gather)
  double weight_bytes_per_param = 2;  // the weights zero1 gathers
  double kv_bytes_per_token = 0;   // K and V of one layer on one rank, bytes per token
  int stage_layers = 0;            // blocks per stage (layers / pp)
  bool recompute_full = false;
  double grad_bytes_per_param = 2;
  bool sequence_parallel = false;  // Korthikanti et al. 2022: norms and dropout on 1/tp of the tokens, same traffic
  bool tp_overlap = false;         // TP collectives overlapped with the GEMMs (NeMo's userbuffers)
  bool pp_overlap = false;         // interleaved schedules (vp > 1): pipeline sends overlapped with the other
                                   // chunks' compute (Megatron's overlap_p2p_comm)
};

struct ParallelStep {
  double microbatch_s = 0;       // one micro-batch including its TP, CP and PP traffic
  double tp_s = 0, cp_exposed_s = 0, pp_s = 0;  // per micro-batch
  double bubble_s = 0;           // per step
  double dp_s = 0, dp_exposed_s = 0;            // per step
  double optimizer_s = 0;
  double step_s = 0;
  Link tp_link, cp_link, pp_link, dp_link;
};

ParallelStep parallel_step(const catalog::Gpu& gpu, const ParallelLayout& l, const StageCost& stage, const TrafficShape& t);

/// Data parallelism's exchange over a group of `n` ranks in one step, one rule for one server and for decoder plans.
struct DataParallelExchange {
  double bytes = 0;      // each rank sends (and receives) per step
  double seconds = 0;    // all of it
  double exposed_s = 0;  // what no compute hides
};
/// By `sharding`: "none" all-reduces the gradients behind the backward pass but for the last bucket (the update waits
/// for them, so hides nothing); "zero1"/"zero2" reduce-scatter them the same way, and all-gather the updated weights
/// after the update, exposed (DeepSpeed's stages 1 and 2, PyTorch's ZeroRedundancyOptimizer) or, with
/// `gather_overlap`, behind the next forward but for its first bucket (Megatron's overlap_param_gather); "full"
/// gathers the weights twice and reduce-scatters the gradients behind forward and backward, but for the first
/// bucket's gather and the last one's reduce-scatter. `forward_s` and `backward_s`: the compute that can hide it
/// (backward with any recompute; never the update); `bucket_bytes`: the unit the calls are issued in.
DataParallelExchange data_parallel_exchange(const std::string& sharding, bool gather_overlap, double grad_bytes, double weight_bytes,
                                            double forward_s, double backward_s, double bucket_bytes, int n, const Link& link);

}  // namespace gpuvs::perf
