// SPDX-License-Identifier: Apache-2.0
// Wall-clock timestamps for records (benchmark files, stored runs).
#pragma once
#include <string>

namespace gpuvs::clock {

/// Now in UTC, ISO 8601 to the second: "2026-11-29T16:43:45Z".
std::string utc_now();

}  // namespace gpuvs::clock
