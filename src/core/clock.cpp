// SPDX-License-Identifier: Apache-2.0
#include "core/clock.hpp"

#include <chrono>
#include <ctime>

namespace gpuvs::clock {

std::string utc_now() {
  const std::time_t t = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

}  // namespace gpuvs::clock
