// SPDX-License-Identifier: Apache-2.0
// trtllm-bench's report (src/measured/trtllm_bench): its sections and "key: value" lines, the percentile
// breakdowns, and whatever a pasted console log holds around them.
#include "fuzz_util.hpp"
#include "measured/trtllm_bench.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace gpuvs;
  fuzz::expect_clean([&] {
    const auto runs = measured::read_trtllm_bench(std::string(reinterpret_cast<const char*>(data), size), "fuzz.out");
    for (const auto& m : runs)  // what a reader returns is a usable figure
      if (!(m.value > 0) || m.prompt_tokens < 1 || m.gen_tokens < 1 || m.sequences < 1 || m.gpus < 1 || m.mode != "infer") std::abort();
  });
  return 0;
}
