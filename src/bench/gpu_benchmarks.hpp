// SPDX-License-Identifier: Apache-2.0
// The GPU benchmarks' registry entries: keys, units, descriptions and the catalog figure each one is
// scored against. They run in the CUDA plugin; here they are waived with the reason when the plugin,
// the driver or enough GPUs are missing, and each result is stamped with the GPU's clocks, power,
// temperature and throttle reasons read through NVML while the benchmark's last work was running.
#pragma once
#include <string>
#include <vector>

#include "bench/registry.hpp"

namespace gpuvs::bench {

std::vector<Benchmark> gpu_benchmarks();

/// Theoretical one-direction PCIe bandwidth in GB/s for a link generation and width (after line coding).
double pcie_gbs(int gen, int width);

/// One line on GPU benchmarking here: "CUDA plugin: <build info>; 1 GPU" or why GPU benchmarks are waived.
std::string gpu_status();

/// "CUDA plugin: <runtime, cuBLASLt, NCCL versions, architectures>" or "CUDA plugin: none (why)".
std::string plugin_info();

/// Checks --device against the GPUs present: InputError when it names a GPU that is not there.
void check_device(const BenchOptions& opt);

}  // namespace gpuvs::bench
