// SPDX-License-Identifier: Apache-2.0
// GGUF headers (src/import/gguf): the bytes read as a header from memory and, through the file reader's window,
// from a file, the two held to the same answer; the decoder built from it; its stored weights priced.
#include <cmath>
#include <string_view>

#include "fuzz_util.hpp"
#include "import/gguf/gguf_file.hpp"
#include "import/gguf/gguf_model.hpp"
#include "perf/weight_format.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace gpuvs;
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  const std::string path = fuzz::write("model.gguf", data, size);
  import::GgufHeader from_memory, from_file;
  const std::string a = fuzz::outcome([&] { return import::read_gguf_bytes(bytes, "fuzz.gguf"); }, "fuzz.gguf", from_memory);
  const std::string b = fuzz::outcome([&] { return import::read_gguf_file(path); }, path, from_file);
  if (a != b || from_memory.data_start != from_file.data_start || from_memory.tensors.size() != from_file.tensors.size() ||
      from_memory.metadata.size() != from_file.metadata.size()) {
    std::fprintf(stderr, "memory and file readers differ: [%s] vs [%s]\n", a.c_str(), b.c_str());
    std::abort();
  }
  if (!a.empty()) return 0;
  for (const auto& t : from_memory.tensors)  // every tensor the reader returns lies inside the input
    if (from_memory.data_start + t.offset + t.bytes > size) std::abort();
  fuzz::expect_clean([&] {
    const models::NetworkInfo n = import::gguf_network(from_memory, "fuzz.gguf");
    const perf::WeightFormat f = perf::stored_weight_format(*n.stored_weights);
    const double total = perf::weight_bytes(n.decoder, f).total();
    if (!(total > 0) || !std::isfinite(total)) std::abort();
  });
  return 0;
}
