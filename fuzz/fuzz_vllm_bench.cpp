// vLLM's serving benchmark (src/measured/vllm_bench): the result blocks it prints, with the rate and concurrency
// lines before them and whatever a pasted log holds between them, and the JSON --save-result writes.
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
