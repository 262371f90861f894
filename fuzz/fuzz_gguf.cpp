// SPDX-License-Identifier: Apache-2.0
// GGUF headers (src/import/gguf): the bytes read as a header from memory and, through the file reader's window,
// from a file, the two held to the same answer; the decoder built from it; its stored weights priced.
#include <cmath>
#include <string_view>

#include "fuzz_util.hpp"
#include "import/gguf/gguf_file.hpp"
#include "import/gguf/gguf_model.hpp"
#include "perf/weight_format.hpp"

namespace {

/// The header read by `read`, or the InputError it threw without its "WHERE: " prefix.
template <typename Read>
std::string outcome(Read&& read, const std::string& where, gpuvs::import::GgufHeader& out) {
  try {
    out = read();
    return "";
  } catch (const gpuvs::InputError& e) {
    const std::string what = e.what();
    if (what.rfind(where + ": ", 0) != 0 || what.find('\n') != std::string::npos) {
      std::fprintf(stderr, "InputError does not name %s on one line: [%s]\n", where.c_str(), what.c_str());
      std::abort();
    }
    return what.substr(where.size() + 2);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace gpuvs;
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  const std::string path = fuzz::write("model.gguf", data, size);
  import::GgufHeader from_memory, from_file;
  const std::string a = outcome([&] { return import::read_gguf_bytes(bytes, "fuzz.gguf"); }, "fuzz.gguf", from_memory);
  const std::string b = outcome([&] { return import::read_gguf_file(path); }, path, from_file);
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
