// SPDX-License-Identifier: Apache-2.0
// nccl-tests' stdout (src/measured/nccl_tests): header lines, the device list, the column header and the size rows,
// as the tool prints them, with NCCL's and MPI's own log lines mixed in.
#include "fuzz_util.hpp"
#include "measured/nccl_tests.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace gpuvs;
  fuzz::expect_clean([&] {
    const auto rows = measured::read_nccl_tests(std::string(reinterpret_cast<const char*>(data), size), "fuzz.out");
    for (const auto& m : rows)  // what a reader returns is a usable figure
      if (!(m.value > 0) || m.gpus < 1 || m.workload.empty() || !(m.message_bytes >= 0)) std::abort();
  });
  return 0;
}
