// SPDX-License-Identifier: Apache-2.0
// The GPU catalog: sourced device specifications (data/gpus.toml, compiled into the binary) plus any
// device files the user adds. Peaks are dense unless a field says sparse; the accumulate mode is part of
// the precision's name (fp16 = FP16 accumulate; fp16_fp32acc, bf16, fp8_fp32acc accumulate in FP32).
#pragma once
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gpuvs::catalog {

/// A tensor-core peak in TFLOPS (TOPS for int8). Absent when the device lacks the precision.
struct Peak {
  std::optional<double> dense, sparse;
  bool present() const { return dense.has_value(); }
};

struct Gpu {
  std::string id, name;
  std::vector<std::string> aliases;
  std::string vendor;   // nvidia | amd
  std::string segment;  // geforce | workstation | datacenter
  std::string arch, chip, compute_capability;
  int sm_count = 0;  // SMs (AMD: compute units)
  double boost_mhz = 0;
  std::string memory_type;
  double memory_gb = 0;             // as marketed: binary gigabytes (GiB)
  double memory_bandwidth_gbs = 0;  // GB/s, 1e9 bytes
  std::optional<double> l2_mb;
  double fp32_tflops = 0;  // non-tensor FP32
  Peak tf32, fp16, fp16_fp32acc, bf16, fp8, fp8_fp32acc, int8;
  std::string nvlink;      // "none" or a description
  double nvlink_gbs = 0;   // bidirectional per-GPU aggregate, GB/s
  int nvlink_mesh_links = 0;  // > 0: no switch; the GPUs of a server are a full mesh, this many links each, one per peer
  bool p2p = false;        // peer-to-peer between cards works (GeForce 40/50: no)
  int pcie_gen = 0;
  double tdp_w = 0;
  std::string ecc;         // yes | no | optional
  std::string ecc_note;
  int mig_max = 0;
  std::string mig_note;
  std::optional<double> msrp_usd, price_basis_usd, cloud_usd_per_hr;
  std::string cloud_note;
  std::vector<std::string> sources;  // ids into sources()
  std::string confidence;
  std::vector<std::string> derived;  // values computed from others, and how
  std::string notes;
  std::string origin;  // "built-in" or the file it came from
  int line = 0;        // where its [[gpu]] table starts

  double memory_bytes() const { return memory_gb * 1073741824.0; }
  bool has_nvlink() const { return nvlink != "none" && nvlink_gbs > 0; }
};

class Catalog {
 public:
  /// The built-in catalog.
  static Catalog builtin();
  /// Parses device tables from TOML text; `where` names it in errors ("FILE:LINE: ..."). Devices whose id
  /// is already present replace the earlier entry (so a user file can correct a built-in spec).
  void add_text(const std::string& text, const std::string& where);
  void add_file(const std::filesystem::path& path);

  const std::vector<Gpu>& gpus() const { return gpus_; }
  /// By id or alias, case-insensitive. Unknown: InputError with the closest ids; a family prefix shared
  /// by several ids ("a100"): InputError listing them.
  const Gpu& find(std::string_view id_or_alias) const;

 private:
  std::vector<Gpu> gpus_;
};

/// Source id ("S13") -> its description, from data/gpu-sources.md.
const std::map<std::string, std::string>& sources();

}  // namespace gpuvs::catalog
