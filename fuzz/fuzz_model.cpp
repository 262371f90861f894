// SPDX-License-Identifier: Apache-2.0
// Model files as workloads, by extension (EXT: .toml gpuvs model files; .json gpuvs, Keras and Hugging Face
// JSON; .keras archives; .onnx graphs): read by the importers' front door as `--workload FILE` is, then built, forward and training step.
#include "fuzz_util.hpp"
#include "import/model_files.hpp"
#include "models/networks.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace gpuvs;
  fuzz::expect_clean([&] {
    const std::string path = fuzz::write(std::string("model") + GPUVS_FUZZ_EXT, data, size);
    const models::NetworkInfo net = import::network_from_file(path, {{"sequence", "8"}});
    if (net.family == models::Family::onnx) return;  // resolving an ONNX file builds it, forward and training step, already
    models::NetworkOptions o;
    o.batch = net.fixed_batch > 0 ? net.fixed_batch : 2;
    o.seq_len = 16;
    o.training = false;
    (void)models::build_network(net, o);
    o.training = true;
    (void)models::build_network(net, o);
  });
  return 0;
}
