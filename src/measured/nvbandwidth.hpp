// SPDX-License-Identifier: Apache-2.0
// NVIDIA nvbandwidth's stdout: the copy bandwidths of a machine's links, one matrix per testcase ("Running
// host_to_device_memcpy_ce." then its description, e.g. "memcpy CE CPU(row) -> GPU(column) bandwidth (GB/s)", the
// column indices, one row per source, "N/A" where a pair does not apply (0.00 on the diagonal before v0.5), and
// "SUM <testcase> <total>"; a testcase the machine cannot run is "Waived"), after a
// header with the tool's version and, from v0.6, one "Device N: NAME (BUS ID)" line per GPU. The copy-engine
// unidirectional testcases gpuvs prices become one Measurement each, mode "micro", unit "GB/s", the median of the
// matrix's figures (each a pair measured alone, so a typical link's figure): host_to_device_memcpy_ce as workload
// "h2d", device_to_host_memcpy_ce as "d2h", device_to_device_memcpy_{read,write}_ce as "p2p-copy" over 2 GPUs.
// Bidirectional, SM-copy, all-to-one and latency testcases are read past: gpuvs has no figure of them.
#pragma once
#include <string>
#include <vector>

#include "measured/measurement.hpp"

namespace gpuvs::measured {

/// True when `text` holds nvbandwidth's version line, or a "Running <testcase>." line followed by a "bandwidth
/// (GB/s)" description.
bool looks_like_nvbandwidth(const std::string& text);

/// The priced testcases in `text` (named `where`): gpu the device name when every "Device N:" line names the same
/// card (several names joined by ", "; empty when none is printed); library_version the tool's. InputError
/// "WHERE:LINE: ..." for column indices or a matrix row that are not whole numbers and figures (or N/A), a figure
/// that is not a positive finite number (but the diagonal's 0.00), or no priced testcase with a figure at all.
std::vector<Measurement> read_nvbandwidth(const std::string& text, const std::string& where);

}  // namespace gpuvs::measured
