// SPDX-License-Identifier: Apache-2.0
// NVIDIA nccl-tests' stdout (all_reduce_perf, all_gather_perf, reduce_scatter_perf, alltoall_perf, ...): one
// Measurement per size row, its out-of-place bus bandwidth (nccl-tests' busbw: the figure comparable across
// collectives and rank counts), with the ranks' device names, the hosts they ran on, the data type and, where
// the build prints them (nccl-tests 2.13 and later), the collective's name and the NCCL library version. An
// older build names no collective: an all-reduce is told by its bus factor (busbw/algbw = 2(n-1)/n), a
// reduce-scatter by (n-1)/n with a reduction; anything else is refused as ambiguous.
#pragma once
#include <string>
#include <vector>

#include "measured/measurement.hpp"

namespace gpuvs::measured {

/// True when `text` starts like nccl-tests' output (its "# nThread" or "# nccl-tests version" header within the
/// first lines).
bool looks_like_nccl_tests(const std::string& text);

/// The measurements in `text` (an nccl-tests output named `where`): workload "allreduce", "allgather",
/// "reducescatter", "alltoall", "broadcast", "reduce" or "sendrecv"; mode "micro"; unit "GB/s busbw"; gpu the
/// ranks' device name (several names joined by ", " when the ranks differ); gpus the rank count. InputError
/// "WHERE:LINE: ..." for a row whose fields do not match the header, a figure that is not a finite number, a
/// row that failed nccl-tests' own check (#wrong above 0), no device list, no rows, or a collective it cannot tell.
std::vector<Measurement> read_nccl_tests(const std::string& text, const std::string& where);

}  // namespace gpuvs::measured
