// SPDX-License-Identifier: Apache-2.0
// safetensors headers (src/import/safetensors): the bytes read as a file's header from memory and from a file
// (the 8-byte length, then only the header read), the two held to the same answer; what is read indexes the
// input whole.
#include <string_view>

#include "fuzz_util.hpp"
#include "import/safetensors/safetensors_file.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace gpuvs;
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  const std::string path = fuzz::write("model.safetensors", data, size);
  import::SafetensorsHeader from_memory, from_file;
  const std::string a = fuzz::outcome([&] { return import::read_safetensors_bytes(bytes, size, "fuzz.safetensors"); }, "fuzz.safetensors", from_memory);
  const std::string b = fuzz::outcome([&] { return import::read_safetensors_file(path); }, path, from_file);
  if (a != b || from_memory.tensors.size() != from_file.tensors.size() || from_memory.tensor_bytes != from_file.tensor_bytes) {
    std::fprintf(stderr, "memory and file readers differ: [%s] vs [%s]\n", a.c_str(), b.c_str());
    std::abort();
  }
  if (!a.empty()) return 0;
  std::uint64_t next = 0;
  for (const auto& t : from_memory.tensors) {  // the buffer indexed whole, in order, inside the input
    if (t.begin != next || t.end < t.begin || import::safetensors_dtype_bits(t.dtype) == 0) std::abort();
    next = t.end;
  }
  if (next > size) std::abort();
  return 0;
}
