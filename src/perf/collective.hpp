// SPDX-License-Identifier: Apache-2.0
// Multi-GPU communication: which link carries the traffic, how fast, and the collective times that data
// parallel training needs (nccl-tests conventions: bus bandwidth, ring algorithms).
#pragma once
#include <map>
#include <string>

#include "catalog/catalog.hpp"

namespace gpuvs::perf {

struct Link {
  std::string kind;         // nvlink | pcie | pcie-via-host
  double bus_gbs = 0;       // achievable per-GPU unidirectional bandwidth for ring collectives, GB/s
  double latency_s = 0;     // per ring step
  std::string description;
  // NVLink SHARP: the share of bus_gbs an all-reduce through the switch keeps (data/system.toml [nccl]), 0 where the
  // board's switch has none or the software does not use it (without_nvls).
  double nvls_efficiency = 0;
};

/// The link between `n` GPUs of this kind in one server. NVLink when the card has it and the group fits
/// the NVLink domain (8 on SXM boards, 2 with a bridge); else PCIe, staged through host memory when the
/// cards have no PCIe peer-to-peer (every GeForce card: their P2P works only over an NVLink bridge).
/// A full mesh without a switch (MI300X's Infinity Fabric: one link per pair) gives a group of n GPUs n - 1 of
/// a GPU's links: two GPUs one link, eight GPUs seven.
/// Over an NVSwitch of a generation with NVLink SHARP (HGX H100/H200, B200/B300 boards), the link carries
/// nvls_efficiency; NCCL (2.17 and later) then runs all-reduce through the switch where that is faster.
Link link_for(const catalog::Gpu& gpu, int n);
/// The link as software without NVLink SHARP uses it (NCCL before 2.17, NCCL_NVLS_ENABLE=0): rings only.
Link without_nvls(Link link);
/// The `nvls` option: "1" or absent (NCCL's default since 2.17) true, "0" false; InputError for anything else.
bool nvls_option(const std::map<std::string, std::string>& options);

/// PCIe x16 unidirectional bandwidth by generation, GB/s (gen3 15.75, gen4 31.5, gen5 63).
double pcie_x16_gbs(int gen);

/// All-reduce of `bytes` over `n` GPUs. Where the link has NVLink SHARP, the faster of the ring and NVLS: one
/// latency, (1 + 1/n) x bytes each way per GPU at nvls_efficiency of the bus (the switch reduces and multicasts).
/// Ring: 2 (n-1) steps moving 2 (n-1)/n x bytes. Over NVLink and PCIe
/// peer-to-peer, as NCCL runs it: the fastest of its protocols (LL, LL128 over NVLink, Simple), each a base
/// latency, a latency per step and a share of the bus bandwidth (data/system.toml's [nccl] facts, NCCL's own cost
/// model); over a network or staged through host memory, one latency per step at the full bus bandwidth.
double allreduce_seconds(double bytes, int n, const Link& link);
/// Ring all-gather (or reduce-scatter) of `bytes` in total: n-1 steps moving (n-1)/n x bytes, priced as above.
double allgather_seconds(double bytes, int n, const Link& link);
/// The protocol allreduce_seconds (gather: allgather_seconds) prices `bytes` with: "NVLS", "LL", "LL128", "Simple",
/// or "ring" where no NCCL protocol table applies (a network, host-staged PCIe).
std::string collective_protocol(double bytes, int n, const Link& link, bool gather = false);

}  // namespace gpuvs::perf
