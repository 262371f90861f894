// SPDX-License-Identifier: Apache-2.0
#include "perf/collective.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "core/error.hpp"
#include "core/strings.hpp"
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
    if (gpu.nvlink_mesh_links > 0 && n - 1 < gpu.nvlink_mesh_links) {
      // A full mesh without a switch: each GPU reaches a peer over that pair's own link, so a group of n has n - 1
      // of its links to run its rings over; the rest lead to GPUs outside the group.
      const double per_link = gpu.nvlink_gbs / 2.0 / gpu.nvlink_mesh_links;
      l.bus_gbs = (n - 1) * per_link * system_facts().nvlink_busbw;
      l.description = fmt::format("{}: a full mesh, {} of its {} links to the group's peers ({:g} GB/s per direction)", gpu.nvlink, n - 1,
                                  gpu.nvlink_mesh_links, (n - 1) * per_link);
    }
    // NVLink SHARP lives in the NVSwitch of HGX boards of these generations; a bridge has no switch.
    const SystemFacts& f = system_facts();
    for (const auto* share : {&f.nvls_hopper, &f.nvls_blackwell}) {
      const auto& ccs = share->compute_capabilities;
      if (!bridge && std::find(ccs.begin(), ccs.end(), gpu.compute_capability) != ccs.end()) l.nvls_efficiency = share->efficiency;
    }
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

Link without_nvls(Link link) {
  link.nvls_efficiency = 0;
  return link;
}

bool nvls_option(const std::map<std::string, std::string>& options) {
  const auto it = options.find("nvls");
  if (it == options.end() || it->second == "1") return true;
  if (it->second != "0") throw InputError(fmt::format("option nvls={} must be 0 or 1", strings::printable(it->second)));
  return false;
}

namespace {

struct Priced {
  double seconds = 0;
  const char* protocol = "ring";
};

/// A ring collective of `steps` steps moving `moved` bytes per GPU: NCCL's cheapest protocol where its table
/// covers the link (NVLink, PCIe peer-to-peer), else one latency per step at the bus bandwidth.
Priced ring(double moved, double steps, const Link& link, bool gather) {
  const SystemFacts& f = system_facts();
  const double bus = link.bus_gbs * 1e9;
  if (link.kind != "nvlink" && link.kind != "pcie") return {moved / bus + steps * link.latency_s, "ring"};
  const bool nvlink = link.kind == "nvlink";
  const double ll_bus = std::min(bus * (gather ? f.nccl_ll_gather_share : f.nccl_ll_allreduce_share), f.nccl_ll_max_busbw_gbs * 1e9);
  Priced best{f.nccl_simple_base_s + steps * (nvlink ? f.nccl_simple_step_nvlink_s : f.nccl_simple_step_pcie_s) + moved / bus, "Simple"};
  const double ll = f.nccl_ll_base_s + steps * (nvlink ? f.nccl_ll_step_nvlink_s : f.nccl_ll_step_pcie_s) + moved / ll_bus;
  if (ll < best.seconds) best = {ll, "LL"};
  if (nvlink) {  // LL128 is on by default over NVLink only
    const double ll128 = f.nccl_ll128_base_s + steps * f.nccl_ll128_step_nvlink_s + moved / (bus * f.nccl_ll128_share);
    if (ll128 < best.seconds) best = {ll128, "LL128"};
  }
  return best;
}

Priced allreduce(double bytes, int n, const Link& link) {
  const double steps = 2.0 * (n - 1);
  Priced best = ring(steps / n * bytes, steps, link, false);
  if (link.kind == "nvlink" && link.nvls_efficiency > 0) {
    // The switch reads each GPU's bytes once and returns it its 1/n of the sum (B out, B/n in), then takes that
    // 1/n once and multicasts every GPU's share to all (B/n out, B in): (1 + 1/n) x bytes each way.
    const double nvls = system_facts().nccl_nvls_latency_s + (1.0 + 1.0 / n) * bytes / (link.bus_gbs * 1e9 * link.nvls_efficiency);
    if (nvls < best.seconds) best = {nvls, "NVLS"};
  }
  return best;
}

Priced allgather(double bytes, int n, const Link& link) {
  const double steps = n - 1.0;
  return ring(steps / n * bytes, steps, link, true);
}

}  // namespace

double allreduce_seconds(double bytes, int n, const Link& link) {
  if (n <= 1 || link.bus_gbs <= 0) return 0.0;
  return allreduce(bytes, n, link).seconds;
}

double allgather_seconds(double bytes, int n, const Link& link) {
  if (n <= 1 || link.bus_gbs <= 0) return 0.0;
  return allgather(bytes, n, link).seconds;
}

std::string collective_protocol(double bytes, int n, const Link& link, bool gather) {
  if (n <= 1 || link.bus_gbs <= 0) return "none";
  return gather ? allgather(bytes, n, link).protocol : allreduce(bytes, n, link).protocol;
}

}  // namespace gpuvs::perf
