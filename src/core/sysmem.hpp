// SPDX-License-Identifier: Apache-2.0
// Memory this process may still use: the kernel's MemAvailable, lowered by a cgroup limit when one is set
// (containers, Slurm jobs). Used to refuse, before allocating, work that cannot fit.
#pragma once
#include <cstdint>
#include <optional>

namespace gpuvs::sysmem {

/// Bytes available now; nullopt when the system does not say (no /proc/meminfo).
std::optional<std::uint64_t> available_bytes();

}  // namespace gpuvs::sysmem
