// SPDX-License-Identifier: Apache-2.0
// The cluster's benchmarks under MPI (`mpirun -np N gpuvs bench`): every rank's device probe gathered to
// rank 0; a collectives sweep as nccl-tests reports it (size, count, time, algorithm and bus bandwidth,
// #wrong from checking every element of every result) for all-reduce, all-gather and reduce-scatter over the
// ranks; point-to-point send/recv between node pairs (between rank pairs on one node) as a bandwidth matrix
// with its slowest link named. These run on host memory through MPI and, where every rank has a GPU (one
// per rank, its local rank's), again over NCCL between the GPUs: rank 0 makes the NCCL group's id and MPI
// broadcasts it (the CUDA plugin does the NCCL calls). Rows and pairs say which ("transport": mpi | nccl).
//
// Bus bandwidth (nccl-tests): all-reduce 2(n-1)/n x algbw, all-gather and reduce-scatter (n-1)/n x algbw,
// algbw = bytes / time with bytes the whole buffer (GB = 1e9 bytes, time the slowest rank's median).
#pragma once
#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

namespace gpuvs::bench {

struct ClusterOptions {
  bool quick = false;               // sizes up to 4 MiB, fewer repetitions
  /// "mpi.allreduce", "mpi.allgather", "mpi.reduce_scatter", "mpi.sendrecv", the same with "nccl."; empty:
  /// every MPI part, and every NCCL part where all ranks have a GPU (else record["nccl"] says why not).
  std::vector<std::string> parts;
};

/// The benchmark keys of the cluster's parts.
const std::vector<std::string>& cluster_keys();

/// Every rank calls it with its own probe (devices_record). Rank 0 gets the record; the others get null.
/// InputError (on every rank) for an unknown part, and for NCCL parts named where a rank has no GPU.
nlohmann::json run_cluster_benchmarks(const ClusterOptions& opt, const nlohmann::json& this_rank_probe);

/// nccl-tests-style text of a record: the nodes, each collective's table, the pair matrix, the slowest link.
std::string cluster_text(const nlohmann::json& cluster);

/// The network a record measured between nodes, for the performance model's multi-node figures: the slowest
/// inter-node pair's bandwidth (between GPUs where NCCL measured, else between hosts) shared by the GPUs of a
/// node (by its ranks when it has none), its 8-byte latency; id "measured". nullopt for one node.
struct MeasuredNetwork {
  std::string id = "measured", name, source;
  double gbs_per_gpu = 0, latency_s = 0;
};
std::optional<MeasuredNetwork> measured_network(const nlohmann::json& cluster);

/// nccl-tests' bus-bandwidth factor for `op` ("allreduce", "allgather", "reduce_scatter", "sendrecv") on n ranks.
double busbw_factor(const std::string& op, int ranks);

}  // namespace gpuvs::bench
