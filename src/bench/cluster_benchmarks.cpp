// SPDX-License-Identifier: Apache-2.0
#include "bench/cluster_benchmarks.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <optional>

#include "core/error.hpp"
#include "core/stats.hpp"
#include "core/strings.hpp"
#include "dist/world.hpp"
#include "gpu/plugin_api.hpp"
#include "gpu/plugin_loader.hpp"

namespace gpuvs::bench {

namespace {

using nlohmann::json;

/// Element i of rank r's send buffer: small whole numbers, so every sum over ranks is exact in float.
float pattern(int rank, std::int64_t i) { return static_cast<float>((rank + 1) * (1 + i % 7)); }

/// Sizes in bytes, nccl-tests style (a geometric sweep), each a whole number of floats for every rank.
std::vector<std::int64_t> sweep_bytes(bool quick, int ranks) {
  std::vector<std::int64_t> out;
  const std::int64_t last = quick ? (std::int64_t{4} << 20) : (std::int64_t{64} << 20);
  const std::int64_t unit = 4 * static_cast<std::int64_t>(ranks);
  for (std::int64_t b = 8; b <= last; b *= 4) out.push_back(std::max(unit, (b + unit - 1) / unit * unit));
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

int repetitions(std::int64_t bytes, bool quick) {
  if (bytes <= (64 << 10)) return quick ? 20 : 50;
  if (bytes <= (4 << 20)) return quick ? 10 : 20;
  return 5;
}

/// A collectives row, from every rank's times (each iteration's slowest rank's).
json collective_row(const std::string& op, const std::string& transport, std::int64_t bytes, const std::vector<double>& mine, double wrong) {
  const dist::World& w = dist::world();
  const std::size_t n = mine.size();
  std::vector<double> all(n * static_cast<std::size_t>(w.size), 0.0);
  std::copy(mine.begin(), mine.end(), all.begin() + static_cast<std::ptrdiff_t>(n * static_cast<std::size_t>(w.rank)));
  dist::allreduce_sum(all.data(), static_cast<std::int64_t>(all.size()), "benchmark times");
  dist::allreduce_sum(&wrong, 1, "benchmark check");
  std::vector<double> slowest(n, 0.0);
  for (std::size_t r = 0; r < static_cast<std::size_t>(w.size); ++r)
    for (std::size_t i = 0; i < n; ++i) slowest[i] = std::max(slowest[i], all[r * n + i]);
  const stats::Summary s = stats::summarize(slowest);
  const double algbw = static_cast<double>(bytes) / s.median / 1e9;
  return {{"op", op},
          {"transport", transport},
          {"bytes", bytes},
          {"count", bytes / 4},
          {"type", "float"},
          {"redop", op == "allgather" ? "none" : "sum"},
          {"time_us", s.median * 1e6},
          {"spread", s.rel_mad},
          {"repetitions", n},
          {"algbw_gbs", algbw},
          {"busbw_gbs", algbw * busbw_factor(op, w.size)},
          {"wrong", static_cast<std::int64_t>(wrong)}};
}

json measure_collective(dist::Collective c, const std::string& op, std::int64_t bytes, bool quick) {
  const dist::World& w = dist::world();
  const std::int64_t count = bytes / 4, per_rank = count / w.size;
  std::vector<float> send(static_cast<std::size_t>(count)), recv;
  for (std::int64_t i = 0; i < count; ++i) send[static_cast<std::size_t>(i)] = pattern(w.rank, i);
  const std::vector<double> times = dist::time_collective(c, send, recv, 2, repetitions(bytes, quick));
  // Every element of the last result against what it must hold.
  const double ranks_sum = w.size * (w.size + 1) / 2.0;
  double wrong = 0;
  for (std::size_t k = 0; k < recv.size(); ++k) {
    const auto i = static_cast<std::int64_t>(k);
    double want = 0;
    switch (c) {
      case dist::Collective::allreduce: want = static_cast<double>(1 + i % 7) * ranks_sum; break;
      case dist::Collective::allgather: want = pattern(static_cast<int>(i / per_rank), i); break;
      case dist::Collective::reduce_scatter: want = static_cast<double>(1 + (w.rank * per_rank + i) % 7) * ranks_sum; break;
    }
    wrong += recv[k] != static_cast<float>(want);
  }
  // time_collective's times are already the slowest rank's: the row's maximum over ranks leaves them as they are.
  return collective_row(op, "mpi", bytes, times, wrong);
}

/// The rank pairs point-to-point measures: the nodes' first ranks when there are several nodes, else every rank.
std::vector<int> pair_ends(const dist::World& w) {
  std::vector<int> ends;
  if (w.nodes > 1) {
    for (int node = 0; node < w.nodes; ++node)
      for (int r = 0; r < w.size; ++r)
        if (w.node_of_rank[static_cast<std::size_t>(r)] == node) {
          ends.push_back(r);
          break;
        }
  } else {
    for (int r = 0; r < w.size; ++r) ends.push_back(r);
  }
  return ends;
}

/// Why this rank cannot join an NCCL group on its local rank's GPU; empty when it can.
std::string nccl_obstacle(gpu::Api*& api) {
  const dist::World& w = dist::world();
  std::string why;
  api = gpu::plugin(why);
  if (!api) return why;
  const int count = api->device_count(why);
  if (count == 0) return why;
  if (w.local_rank >= count)
    return fmt::format("it is local rank {} on a node with {} GPU{} (one rank per GPU)", w.local_rank, count, count == 1 ? "" : "s");
  return "";
}

}  // namespace

const std::vector<std::string>& cluster_keys() {
  static const std::vector<std::string> keys = {"mpi.allreduce",  "mpi.allgather",  "mpi.reduce_scatter",  "mpi.sendrecv",
                                                "nccl.allreduce", "nccl.allgather", "nccl.reduce_scatter", "nccl.sendrecv"};
  return keys;
}

double busbw_factor(const std::string& op, int ranks) {
  const double n = ranks;
  if (op == "allreduce") return ranks > 1 ? 2.0 * (n - 1) / n : 1.0;
  if (op == "allgather" || op == "reduce_scatter") return ranks > 1 ? (n - 1) / n : 1.0;
  return 1.0;
}

/// Rank 0's record of the sweep: the ranks and nodes with their probes, every row, and the slowest link.
json cluster_record(const dist::World& w, const std::vector<std::string>& gathered, const json& nccl_status, const json& collectives, const json& pairs) {
  json per_rank = json::array();
  for (const auto& g : gathered) per_rank.push_back(json::parse(g));
  json per_node = json::array();
  for (int node = 0; node < w.nodes; ++node) {
    json ranks = json::array();
    json first;
    for (const auto& r : per_rank)
      if (r["node"] == node) {
        ranks.push_back(r["rank"]);
        if (first.is_null()) first = r;
      }
    per_node.push_back({{"node", node}, {"host", first["host"]}, {"ranks", ranks}, {"devices", first["devices"]}});
  }
  const bool on_gpus = nccl_status.is_object() && nccl_status["status"] == "ok";
  json record = {{"ranks", w.size},
                 {"nodes", w.nodes},
                 {"transport", on_gpus ? "MPI on host memory; NCCL between GPUs (" + nccl_status["library"].get<std::string>() + ")" : "MPI on host memory"},
                 {"per_rank", per_rank},
                 {"per_node", per_node},
                 {"collectives", collectives},
                 {"pairs", pairs}};
  if (!nccl_status.is_null()) record["nccl"] = nccl_status;
  // The slowest link is the GPUs' where NCCL measured them (what training uses), else the hosts'.
  const json* slow = nullptr;
  for (const auto& p : pairs) {
    const bool better_transport = slow && p["transport"] == "nccl" && (*slow)["transport"] != "nccl";
    const bool same_transport = slow && p["transport"] == (*slow)["transport"];
    if (!slow || better_transport || (same_transport && p["bandwidth_gbs"].get<double>() < (*slow)["bandwidth_gbs"].get<double>())) slow = &p;
  }
  if (slow) record["slowest_link"] = *slow;
  return record;
}

json run_cluster_benchmarks(const ClusterOptions& opt, const json& this_rank_probe) {
  const dist::World& w = dist::world();
  for (const auto& p : opt.parts)
    if (std::find(cluster_keys().begin(), cluster_keys().end(), p) == cluster_keys().end())
      throw InputError(fmt::format("--only {}: not a cluster benchmark (known: {})", strings::printable(p), strings::join(cluster_keys(), ", ")));
  auto want = [&](const char* key) { return opt.parts.empty() || std::find(opt.parts.begin(), opt.parts.end(), key) != opt.parts.end(); };
  json rank_info = {{"rank", w.rank}, {"host", w.host}, {"node", w.node}, {"local_rank", w.local_rank}, {"devices", this_rank_probe}};
  const std::vector<std::string> gathered = dist::gather(rank_info.dump(), "gather the probes");

  json collectives = json::array();
  const std::vector<std::pair<dist::Collective, std::string>> ops = {
      {dist::Collective::allreduce, "allreduce"}, {dist::Collective::allgather, "allgather"}, {dist::Collective::reduce_scatter, "reduce_scatter"}};
  for (const auto& [c, op] : ops) {
    if (!want(("mpi." + op).c_str())) continue;
    // One untimed pass at the first size before the sweep: the first series after start-up ran ~50% slow at
    // 8 bytes however many warm-up calls it had (1.05 against 0.69 us; docs/PERFORMANCE.md). The C peer does the same.
    const std::vector<std::int64_t> sizes = sweep_bytes(opt.quick, w.size);
    (void)measure_collective(c, op, sizes.front(), opt.quick);
    for (std::int64_t bytes : sizes) collectives.push_back(measure_collective(c, op, bytes, opt.quick));
  }

  // Point to point: between the nodes' first ranks when there are several nodes, else between every rank pair.
  json pairs = json::array();
  const std::vector<int> ends = pair_ends(w);
  const std::int64_t big = opt.quick ? (std::int64_t{1} << 20) : (std::int64_t{16} << 20);
  auto pair_row = [&](int a, int b, double t_big, double t_small, const char* transport) {
    // The measuring pair's figures reach every rank.
    double figures[2] = {w.rank == a ? t_big : 0.0, w.rank == a ? t_small : 0.0};
    dist::allreduce_sum(figures, 2, "pair figures");
    const bool inter = w.node_of_rank[static_cast<std::size_t>(a)] != w.node_of_rank[static_cast<std::size_t>(b)];
    return json{{"a", a}, {"b", b}, {"transport", transport}, {"scope", inter ? "inter-node" : "intra-node"}, {"bytes", big},
                {"bandwidth_gbs", static_cast<double>(big) / figures[0] / 1e9}, {"latency_us", figures[1] * 1e6}};
  };
  if (want("mpi.sendrecv") && w.size > 1)
    for (std::size_t i = 0; i < ends.size(); ++i)
      for (std::size_t j = i + 1; j < ends.size(); ++j) {
        const int a = ends[i], b = ends[j];
        const double t_big = dist::time_send_recv(a, b, big, opt.quick ? 3 : 5);
        const double t_small = dist::time_send_recv(a, b, 8, opt.quick ? 20 : 50);
        pairs.push_back(pair_row(a, b, t_big, t_small, "mpi"));
      }

  // The same over NCCL between the ranks' GPUs (one per rank), where every rank has one: asked for by name,
  // or by default when all can. The decision is the job's, so every rank takes the same path.
  const bool named_nccl = std::any_of(opt.parts.begin(), opt.parts.end(), [](const std::string& p) { return p.rfind("nccl.", 0) == 0; });
  json nccl_status;
  if (opt.parts.empty() || named_nccl) {
    gpu::Api* api = nullptr;
    const std::string obstacle = nccl_obstacle(api);
    const std::vector<std::string> obstacles = dist::gather(obstacle, "gather the GPU checks");
    std::string first_obstacle;
    for (std::size_t r = 0; r < obstacles.size() && first_obstacle.empty(); ++r)
      if (!obstacles[r].empty()) first_obstacle = fmt::format("rank {} cannot join an NCCL group: {}", r, obstacles[r]);
    first_obstacle = dist::broadcast(first_obstacle, "the GPU checks");
    if (!first_obstacle.empty()) {
      if (named_nccl) throw InputError(fmt::format("--only {}: {}", strings::join(opt.parts, ","), first_obstacle));
      nccl_status = {{"status", "waived"}, {"why", first_obstacle}};
    } else {
      const std::string id = dist::broadcast(w.rank == 0 ? api->nccl_unique_id() : std::string(), "NCCL group id");
      std::optional<dist::Deadline> waiting(std::in_place, "joining the NCCL group");
      const auto group = api->open_rank_collectives(w.local_rank, id, w.rank, w.size);
      waiting.reset();
      nccl_status = {{"status", "ok"}, {"library", group->describe()}};
      const std::vector<std::pair<gpu::GroupOp, std::string>> gpu_ops = {
          {gpu::GroupOp::allreduce, "allreduce"}, {gpu::GroupOp::allgather, "allgather"}, {gpu::GroupOp::reduce_scatter, "reduce_scatter"}};
      for (const auto& [op, name] : gpu_ops) {
        if (!want(("nccl." + name).c_str())) continue;
        for (std::int64_t bytes : sweep_bytes(opt.quick, w.size)) {
          std::int64_t wrong = 0;
          waiting.emplace("an NCCL benchmark collective");
          const std::vector<double> t = group->time(op, bytes / 4, 2, repetitions(bytes, opt.quick), wrong);
          waiting.reset();
          collectives.push_back(collective_row(name, "nccl", bytes, t, static_cast<double>(wrong)));
        }
      }
      if (want("nccl.sendrecv"))
        for (std::size_t i = 0; i < ends.size(); ++i)
          for (std::size_t j = i + 1; j < ends.size(); ++j) {
            const int a = ends[i], b = ends[j];
            waiting.emplace("NCCL send/recv between a pair");
            const double t_big = group->send_recv(a, b, big, opt.quick ? 3 : 5);
            const double t_small = group->send_recv(a, b, 8, opt.quick ? 20 : 50);
            waiting.reset();
            pairs.push_back(pair_row(a, b, t_big, t_small, "nccl"));
          }
    }
  }
  if (w.rank != 0) return nullptr;
  return cluster_record(w, gathered, nccl_status, collectives, pairs);
}

std::optional<MeasuredNetwork> measured_network(const json& c) {
  if (!c.is_object() || c.value("nodes", 1) < 2 || !c.contains("pairs")) return std::nullopt;
  // Between GPUs (NCCL) where measured, else between hosts (MPI); the slowest inter-node pair of that kind.
  bool gpu_pairs = false;
  for (const auto& p : c["pairs"]) gpu_pairs = gpu_pairs || (p.value("scope", "") == "inter-node" && p.value("transport", "mpi") == "nccl");
  const json* slow = nullptr;
  for (const auto& p : c["pairs"])
    if (p.value("scope", "") == "inter-node" && (p.value("transport", "mpi") == "nccl") == gpu_pairs &&
        (!slow || p.value("bandwidth_gbs", 0.0) < (*slow).value("bandwidth_gbs", 0.0)))
      slow = &p;
  if (!slow || slow->value("bandwidth_gbs", 0.0) <= 0) return std::nullopt;
  // The busiest node shares its link among its GPUs (its ranks when it has none).
  std::size_t sharing = 1;
  for (const auto& n : c.value("per_node", json::array())) {
    const json& dev = n.value("devices", json::object());
    const std::size_t gpus = dev.contains("gpus") && dev["gpus"].is_array() ? dev["gpus"].size() : 0;
    sharing = std::max(sharing, gpus > 0 ? gpus : n.value("ranks", json::array()).size());
  }
  MeasuredNetwork m;
  m.gbs_per_gpu = slow->value("bandwidth_gbs", 0.0) / static_cast<double>(sharing);
  m.latency_s = slow->value("latency_us", 0.0) * 1e-6;
  m.name = fmt::format("this cluster's network, measured: {:.2f} GB/s between nodes (rank {} <-> rank {}, the slowest pair), shared by {}",
                       slow->value("bandwidth_gbs", 0.0), slow->value("a", 0), slow->value("b", 0), sharing);
  m.source = gpu_pairs ? "gpuvs evaluate under MPI: NCCL send/recv between the GPUs of the nodes' first ranks"
                       : "gpuvs evaluate under MPI: send/recv between the nodes' first ranks over MPI on host memory";
  return m;
}

std::string cluster_text(const json& c) {
  std::string out = fmt::format("cluster: {} ranks on {} node{} ({})\n", c.value("ranks", 0), c.value("nodes", 0), c.value("nodes", 0) == 1 ? "" : "s",
                                c.value("transport", ""));
  for (const auto& n : c.value("per_node", json::array())) {
    std::vector<std::string> ranks;
    for (const auto& r : n.value("ranks", json::array())) ranks.push_back(r.dump());
    const json& dev = n.value("devices", json::object());
    const std::string cpu = dev.contains("cpu") && dev["cpu"].is_object() ? dev["cpu"].value("model", "") : "";
    const std::size_t gpus = dev.contains("gpus") && dev["gpus"].is_array() ? dev["gpus"].size() : 0;
    out += fmt::format("  node {} {}: ranks {}; {}; {} GPU{}\n", n.value("node", 0), n.value("host", ""), strings::join(ranks, ","), cpu, gpus,
                       gpus == 1 ? "" : "s");
  }
  std::string last_op;
  for (const auto& r : c.value("collectives", json::array())) {
    const std::string transport = r.value("transport", "mpi");
    if (transport + r.value("op", "") != last_op) {
      last_op = transport + r.value("op", "");
      out += fmt::format("\n# {} over {} ({} ranks; sizes in bytes, time in us, bandwidths in GB/s)\n", r.value("op", ""),
                         transport == "nccl" ? "NCCL, GPU memory" : "MPI, host memory", c.value("ranks", 0));
      out += fmt::format("{:>12} {:>10} {:>6} {:>6} {:>10} {:>9} {:>9} {:>7}\n", "size", "count", "type", "redop", "time", "algbw", "busbw", "#wrong");
    }
    out += fmt::format("{:>12} {:>10} {:>6} {:>6} {:>10.1f} {:>9.2f} {:>9.2f} {:>7}\n", r.value("bytes", 0), r.value("count", 0), r.value("type", ""),
                       r.value("redop", ""), r.value("time_us", 0.0), r.value("algbw_gbs", 0.0), r.value("busbw_gbs", 0.0), r.value("wrong", 0));
  }
  if (!c.value("pairs", json::array()).empty()) {
    out += "\n# send/recv between pairs (GB/s at the large size; latency of 8 bytes in us)\n";
    for (const auto& p : c["pairs"])
      out += fmt::format("  rank {} <-> rank {} ({}, {}): {:.2f} GB/s, {:.1f} us\n", p.value("a", 0), p.value("b", 0), p.value("transport", "mpi"),
                         p.value("scope", ""), p.value("bandwidth_gbs", 0.0), p.value("latency_us", 0.0));
    const json& s = c["slowest_link"];
    out += fmt::format("  slowest link: rank {} <-> rank {} ({}, {}), {:.2f} GB/s\n", s.value("a", 0), s.value("b", 0), s.value("transport", "mpi"),
                       s.value("scope", ""), s.value("bandwidth_gbs", 0.0));
  }
  if (c.contains("nccl") && c["nccl"].value("status", "") == "waived")
    out += fmt::format("\nNCCL between GPUs: waived ({})\n", c["nccl"].value("why", ""));
  return out;
}

}  // namespace gpuvs::bench
