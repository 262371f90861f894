#include "bench/cluster_benchmarks.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "core/error.hpp"
#include "core/stats.hpp"
#include "core/strings.hpp"
#include "dist/world.hpp"

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
  dist::allreduce_sum(&wrong, 1, "benchmark check");
  const stats::Summary s = stats::summarize(times);
  const double algbw = static_cast<double>(bytes) / s.median / 1e9;
  return {{"op", op},
          {"bytes", bytes},
          {"count", count},
          {"type", "float"},
          {"redop", c == dist::Collective::allgather ? "none" : "sum"},
          {"time_us", s.median * 1e6},
          {"spread", s.rel_mad},
          {"repetitions", times.size()},
          {"algbw_gbs", algbw},
          {"busbw_gbs", algbw * busbw_factor(op, w.size)},
          {"wrong", static_cast<std::int64_t>(wrong)}};
}

}  // namespace

const std::vector<std::string>& cluster_keys() {
  static const std::vector<std::string> keys = {"mpi.allreduce", "mpi.allgather", "mpi.reduce_scatter", "mpi.sendrecv"};
  return keys;
}

double busbw_factor(const std::string& op, int ranks) {
  const double n = ranks;
  if (op == "allreduce") return ranks > 1 ? 2.0 * (n - 1) / n : 1.0;
  if (op == "allgather" || op == "reduce_scatter") return ranks > 1 ? (n - 1) / n : 1.0;
  return 1.0;
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
    for (std::int64_t bytes : sweep_bytes(opt.quick, w.size)) collectives.push_back(measure_collective(c, op, bytes, opt.quick));
  }

  // Point to point: between the nodes' first ranks when there are several nodes, else between every rank pair.
  json pairs = json::array();
  if (want("mpi.sendrecv") && w.size > 1) {
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
    const std::int64_t big = opt.quick ? (std::int64_t{1} << 20) : (std::int64_t{16} << 20);
    for (std::size_t i = 0; i < ends.size(); ++i)
      for (std::size_t j = i + 1; j < ends.size(); ++j) {
        const int a = ends[i], b = ends[j];
        const double t_big = dist::time_send_recv(a, b, big, opt.quick ? 3 : 5);
        const double t_small = dist::time_send_recv(a, b, 8, opt.quick ? 20 : 50);
        // The measuring pair's figures reach rank 0 through the gather below.
        double figures[2] = {w.rank == a ? t_big : 0.0, w.rank == a ? t_small : 0.0};
        dist::allreduce_sum(figures, 2, "pair figures");
        const bool inter = w.node_of_rank[static_cast<std::size_t>(a)] != w.node_of_rank[static_cast<std::size_t>(b)];
        pairs.push_back({{"a", a}, {"b", b}, {"scope", inter ? "inter-node" : "intra-node"}, {"bytes", big},
                         {"bandwidth_gbs", static_cast<double>(big) / figures[0] / 1e9}, {"latency_us", figures[1] * 1e6}});
      }
  }
  if (w.rank != 0) return nullptr;

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
  json record = {{"ranks", w.size}, {"nodes", w.nodes}, {"transport", "MPI on host memory"}, {"per_rank", per_rank}, {"per_node", per_node},
                 {"collectives", collectives}, {"pairs", pairs}};
  if (!pairs.empty()) {
    const auto slow = std::min_element(pairs.begin(), pairs.end(),
                                       [](const json& x, const json& y) { return x["bandwidth_gbs"].get<double>() < y["bandwidth_gbs"].get<double>(); });
    record["slowest_link"] = *slow;
  }
  return record;
}

std::optional<MeasuredNetwork> measured_network(const json& c) {
  if (!c.is_object() || c.value("nodes", 1) < 2 || !c.contains("pairs")) return std::nullopt;
  const json* slow = nullptr;
  for (const auto& p : c["pairs"])
    if (p.value("scope", "") == "inter-node" && (!slow || p.value("bandwidth_gbs", 0.0) < (*slow).value("bandwidth_gbs", 0.0))) slow = &p;
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
  m.source = "gpuvs evaluate under MPI: send/recv between the nodes' first ranks over MPI on host memory";
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
    if (r.value("op", "") != last_op) {
      last_op = r.value("op", "");
      out += fmt::format("\n# {} ({} ranks; sizes in bytes, time in us, bandwidths in GB/s)\n", last_op, c.value("ranks", 0));
      out += fmt::format("{:>12} {:>10} {:>6} {:>6} {:>10} {:>9} {:>9} {:>7}\n", "size", "count", "type", "redop", "time", "algbw", "busbw", "#wrong");
    }
    out += fmt::format("{:>12} {:>10} {:>6} {:>6} {:>10.1f} {:>9.2f} {:>9.2f} {:>7}\n", r.value("bytes", 0), r.value("count", 0), r.value("type", ""),
                       r.value("redop", ""), r.value("time_us", 0.0), r.value("algbw_gbs", 0.0), r.value("busbw_gbs", 0.0), r.value("wrong", 0));
  }
  if (!c.value("pairs", json::array()).empty()) {
    out += "\n# send/recv between pairs (GB/s at the large size; latency of 8 bytes in us)\n";
    for (const auto& p : c["pairs"])
      out += fmt::format("  rank {} <-> rank {} ({}): {:.2f} GB/s, {:.1f} us\n", p.value("a", 0), p.value("b", 0), p.value("scope", ""),
                         p.value("bandwidth_gbs", 0.0), p.value("latency_us", 0.0));
    const json& s = c["slowest_link"];
    out += fmt::format("  slowest link: rank {} <-> rank {} ({}), {:.2f} GB/s\n", s.value("a", 0), s.value("b", 0), s.value("scope", ""),
                       s.value("bandwidth_gbs", 0.0));
  }
  return out;
}

}  // namespace gpuvs::bench
