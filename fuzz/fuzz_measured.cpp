// SPDX-License-Identifier: Apache-2.0
// Measurement files people already have (src/measured): the output of a tool, read as the tool writes it.
// fuzz_llama_bench reads llama-bench's md, csv, json, jsonl and sql outputs, told apart by their first bytes.
#include "fuzz_util.hpp"
#include "measured/llama_bench.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace gpuvs;
  fuzz::expect_clean([&] {
    const auto rows = measured::read_llama_bench(std::string(reinterpret_cast<const char*>(data), size), "fuzz.out");
    for (const auto& m : rows)
      if (!(m.value > 0) || m.unit.empty() || m.mode.empty()) std::abort();  // what a reader returns is a usable figure
  });
  return 0;
}
