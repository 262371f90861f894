// SPDX-License-Identifier: Apache-2.0
// NVIDIA nvbandwidth's stdout (src/measured/nvbandwidth): the header's version and device lines, each testcase's
// description, column indices and matrix rows (N/A, the old 0.00 diagonal), SUM and Waived lines.
#include <cmath>

#include "fuzz_util.hpp"
#include "measured/nvbandwidth.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace gpuvs;
  fuzz::expect_clean([&] {
    const auto runs = measured::read_nvbandwidth(std::string(reinterpret_cast<const char*>(data), size), "fuzz.out");
    for (const auto& m : runs)  // what a reader returns is a usable figure
      if (!(m.value > 0) || !std::isfinite(m.value) || m.gpus < 1 || m.workload.empty() || m.mode != "micro") std::abort();
  });
  return 0;
}
