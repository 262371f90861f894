// SPDX-License-Identifier: Apache-2.0
#include "core/sysmem.hpp"

#include <algorithm>
#include <fstream>
#include <sstream>
#include <string>

namespace gpuvs::sysmem {

namespace {

std::optional<std::uint64_t> read_number(const char* path) {
  std::ifstream in(path);
  std::string text;
  if (!(in >> text) || text == "max") return std::nullopt;
  try {
    return std::stoull(text);
  } catch (...) {
    return std::nullopt;
  }
}

}  // namespace

std::optional<std::uint64_t> available_bytes() {
  std::optional<std::uint64_t> avail;
  std::ifstream meminfo("/proc/meminfo");
  std::string line;
  while (std::getline(meminfo, line)) {
    if (line.rfind("MemAvailable:", 0) != 0) continue;
    std::istringstream s(line.substr(13));
    std::uint64_t kib = 0;
    if (s >> kib) avail = kib * 1024;
  }
  // A cgroup limit (v2, then v1) less what the group already uses.
  for (const auto& [limit_path, usage_path] : {std::pair{"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory.current"},
                                               std::pair{"/sys/fs/cgroup/memory/memory.limit_in_bytes", "/sys/fs/cgroup/memory/memory.usage_in_bytes"}}) {
    const auto limit = read_number(limit_path), usage = read_number(usage_path);
    if (limit && usage && *limit < (std::uint64_t{1} << 60)) {
      const std::uint64_t left = *limit > *usage ? *limit - *usage : 0;
      avail = avail ? std::min(*avail, left) : left;
      break;
    }
  }
  return avail;
}

}  // namespace gpuvs::sysmem
