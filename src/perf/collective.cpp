#include "perf/collective.hpp"

#include <fmt/format.h>

#include "perf/system_facts.hpp"

namespace gpuvs::perf {

double pcie_x16_gbs(int gen) {
  switch (gen) {
    case 3: return 15.75;
    case 4: return 31.5;
    case 5: return 63.0;
    case 6: return 121.0;
    default: return gen > 6 ? 121.0 : 7.9;
  }
}

Link link_for(const catalog::Gpu& gpu, int n) {
  Link l;
  const bool bridge = gpu.nvlink.find("bridge") != std::string::npos;
  const int domain = bridge ? 2 : system_facts().gpus_per_server;
  if (n <= 1) {
    l.kind = "none";
    l.description = "single GPU";
    return l;
  }
  if (gpu.has_nvlink() && n <= domain) {
    l.kind = "nvlink";
    l.bus_gbs = gpu.nvlink_gbs / 2.0 * system_facts().nvlink_busbw;  // catalog figure is bidirectional
    l.latency_s = 5e-6;
    l.description = fmt::format("{} ({:g} GB/s per direction)", gpu.nvlink, gpu.nvlink_gbs / 2.0);
    return l;
  }
  const double pcie = pcie_x16_gbs(gpu.pcie_gen) * system_facts().pcie_busbw;
  // GeForce cards do peer-to-peer only over an NVLink bridge (when they have one), never over PCIe.
  if (gpu.p2p && gpu.segment != "geforce") {
    l.kind = "pcie";
    l.bus_gbs = pcie;
    l.latency_s = 10e-6;
    l.description = fmt::format("PCIe gen {} x16 peer-to-peer", gpu.pcie_gen);
  } else {
    // No P2P: every transfer goes device -> host memory -> device, crossing PCIe twice.
    l.kind = "pcie-via-host";
    l.bus_gbs = pcie / 2.0;
    l.latency_s = 20e-6;
    l.description = fmt::format("PCIe gen {} x16 staged through host memory (no peer-to-peer)", gpu.pcie_gen);
  }
  return l;
}

double allreduce_seconds(double bytes, int n, const Link& link) {
  if (n <= 1 || link.bus_gbs <= 0) return 0.0;
  const double steps = 2.0 * (n - 1);
  return steps / n * bytes / (link.bus_gbs * 1e9) + steps * link.latency_s;
}

double allgather_seconds(double bytes, int n, const Link& link) {
  if (n <= 1 || link.bus_gbs <= 0) return 0.0;
  const double steps = n - 1.0;
  return steps / n * bytes / (link.bus_gbs * 1e9) + steps * link.latency_s;
}

}  // namespace gpuvs::perf
