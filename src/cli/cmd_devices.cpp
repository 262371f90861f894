// SPDX-License-Identifier: Apache-2.0
// gpuvs devices: the hardware this machine has — CPU and NVIDIA GPUs — as tf.config.list_physical_devices
// would list it, with the matching catalog entry for each GPU.
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "catalog/catalog.hpp"
#include "bench/gpu_benchmarks.hpp"
#include "cli/assumption_options.hpp"
#include "cli/commands.hpp"
#include "cli/devices_json.hpp"
#include "cli/output.hpp"
#include "core/strings.hpp"
#include "core/units.hpp"
#include "hw/cpu.hpp"
#include "hw/match.hpp"
#include "hw/nvidia.hpp"

namespace gpuvs::cli {

nlohmann::json devices_record(const hw::CpuInfo& cpu, const hw::NvidiaReport& gpu) {
  nlohmann::json gpus = nlohmann::json::array();
  for (const auto& d : gpu.gpus)
    gpus.push_back({{"index", d.index}, {"name", d.name}, {"uuid", d.uuid}, {"pci_bus_id", d.pci_bus_id},
                    {"compute_capability", fmt::format("{}.{}", d.cc_major, d.cc_minor)}, {"sm_count", d.sm_count},
                    {"memory_total_bytes", d.memory_total_bytes}, {"memory_free_bytes", d.memory_free_bytes},
                    {"clock_sm_mhz", d.clock_sm_mhz}, {"clock_sm_max_mhz", d.clock_sm_max_mhz},
                    {"clock_mem_max_mhz", d.clock_mem_max_mhz},
                    {"pcie", {{"gen", d.pcie_gen}, {"width", d.pcie_width}, {"gen_max", d.pcie_gen_max},
                              {"width_max", d.pcie_width_max}}},
                    {"nvlink_links_active", d.nvlink_links_active},
                    {"ecc", {{"mode", d.ecc_mode}, {"corrected", d.ecc_corrected}, {"uncorrected", d.ecc_uncorrected}}},
                    {"mig_mode", d.mig_mode}, {"mig_instances", d.mig_instances}, {"power_limit_w", d.power_limit_w},
                    {"catalog_id", d.catalog_id.empty() ? nlohmann::json(nullptr) : nlohmann::json(d.catalog_id)}});
  nlohmann::json j{
      {"schema_version", 1},
      {"cpu",
       {{"model", cpu.model}, {"vendor", cpu.vendor}, {"sockets", cpu.sockets}, {"cores", cpu.cores},
        {"threads", cpu.threads}, {"numa_nodes", cpu.numa_nodes}, {"l1d_bytes", cpu.l1d_bytes},
        {"l2_bytes", cpu.l2_bytes}, {"l3_bytes", cpu.l3_bytes}, {"memory_bytes", cpu.memory_bytes},
        {"features", cpu.features()}}},
      {"nvidia",
       {{"status", gpu.status}, {"detail", gpu.detail}, {"cuda_driver_version", gpu.cuda_driver_version},
        {"driver_version", gpu.driver_version}, {"nvml", gpu.nvml}, {"gpus", gpus}, {"p2p", gpu.p2p}}},
      {"cuda_plugin", bench::plugin_info()}};
  return j;
}

namespace {

struct DevicesArgs {
  Output out = Output::table;
};

int run_devices(const DevicesArgs& a) {
  const hw::CpuInfo cpu = hw::probe_cpu();
  const hw::NvidiaReport gpu = hw::probe_nvidia_matched(catalog::Catalog::builtin());
  if (print_structured(devices_record(cpu, gpu), a.out, {})) return 0;  // csv, md: one row, the GPUs a cell of JSON
  fmt::print("CPU  {} ({} socket{}, {} cores, {} threads, {} NUMA node{})\n", cpu.model, cpu.sockets,
             cpu.sockets == 1 ? "" : "s", cpu.cores, cpu.threads, cpu.numa_nodes, cpu.numa_nodes == 1 ? "" : "s");
  fmt::print("     caches L1d {}, L2 {}, L3 {}; memory {}\n", units::format_bytes_binary(static_cast<double>(cpu.l1d_bytes)),
             units::format_bytes_binary(static_cast<double>(cpu.l2_bytes)),
             units::format_bytes_binary(static_cast<double>(cpu.l3_bytes)),
             units::format_bytes_binary(static_cast<double>(cpu.memory_bytes)));
  fmt::print("     ISA {}\n", strings::join(cpu.features(), " "));
  if (gpu.status != "ok") {
    fmt::print("GPU  none: {}\n", gpu.detail);
    fmt::print("     {}\n", bench::plugin_info());
    return 0;
  }
  fmt::print("     {}\n", bench::plugin_info());
  fmt::print("GPU  driver {} (CUDA {}.{}), NVML {}\n", gpu.driver_version.empty() ? "?" : gpu.driver_version,
             gpu.cuda_driver_version / 1000, gpu.cuda_driver_version % 1000 / 10, gpu.nvml ? "yes" : "not available");
  for (const auto& d : gpu.gpus) {
    fmt::print("  [{}] {} (cc {}.{}, {} SMs, {} total, {} free) catalog: {}\n", d.index, d.name, d.cc_major, d.cc_minor,
               d.sm_count, units::format_bytes_binary(static_cast<double>(d.memory_total_bytes)),
               units::format_bytes_binary(static_cast<double>(d.memory_free_bytes)),
               d.catalog_id.empty() ? "no match" : d.catalog_id);
    fmt::print("      SM clock {} / {} MHz, memory clock {} MHz; PCIe gen {} x{} (max gen {} x{}); NVLink links {}; "
               "ECC {} ({} corrected, {} uncorrected); MIG {}{}; power limit {:.0f} W; {}\n",
               d.clock_sm_mhz, d.clock_sm_max_mhz, d.clock_mem_max_mhz, d.pcie_gen, d.pcie_width, d.pcie_gen_max,
               d.pcie_width_max, d.nvlink_links_active, d.ecc_mode, d.ecc_corrected, d.ecc_uncorrected, d.mig_mode,
               d.mig_mode == "enabled" ? fmt::format(" ({} instances)", d.mig_instances) : "", d.power_limit_w, d.uuid);
  }
  if (gpu.gpus.size() > 1) {
    fmt::print("  peer-to-peer access:\n");
    for (std::size_t i = 0; i < gpu.p2p.size(); ++i) {
      std::string line = fmt::format("    [{}]", i);
      for (std::size_t j = 0; j < gpu.p2p[i].size(); ++j) line += i == j ? "  -" : gpu.p2p[i][j] ? " yes" : "  no";
      fmt::print("{}\n", line);
    }
  }
  return 0;
}

}  // namespace

Runner add_devices_command(CLI::App& app) {
  auto a = std::make_shared<DevicesArgs>();
  auto* sub = app.add_subcommand("devices", "List this machine's CPU and NVIDIA GPUs (driver and NVML loaded at run time)");
  add_output_option(sub, a->out);
  return [a] { return run_devices(*a); };
}

}  // namespace gpuvs::cli
