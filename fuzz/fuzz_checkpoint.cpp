// SPDX-License-Identifier: Apache-2.0
// Checkpoints (`gpuvs train --resume`): magic, version, JSON header, tensors, CRC-32C.
#include "engine/checkpoint.hpp"
#include "fuzz_util.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace gpuvs;
  fuzz::expect_clean([&] {
    engine::ParamStore into;
    (void)engine::load_checkpoint(fuzz::write("model.gpuvsckpt", data, size), into);
  });
  return 0;
}
