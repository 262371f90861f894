// SPDX-License-Identifier: Apache-2.0
// vLLM's serving benchmark and SGLang's bench_serving (src/measured/vllm_bench): the result blocks they print, with
// the rate and concurrency lines before or inside them and whatever a pasted log holds between them, vLLM's
// --save-result JSON and SGLang's JSON lines.
#include "fuzz_util.hpp"
#include "measured/vllm_bench.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace gpuvs;
  fuzz::expect_clean([&] {
    const auto runs = measured::read_vllm_bench(std::string(reinterpret_cast<const char*>(data), size), "fuzz.out");
    for (const auto& m : runs)  // what a reader returns is a usable figure
      if (!(m.value > 0) || m.prompt_tokens < 1 || m.gen_tokens < 1 || m.sequences < 1 || m.mode != "infer") std::abort();
  });
  return 0;
}
