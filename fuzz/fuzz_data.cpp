// SPDX-License-Identifier: Apache-2.0
// The data loaders: CSV (label last), NPY and IDX (MNIST) features, as `gpuvs train --data` reads them. Which
// one this binary fuzzes is FORMAT (csv, npy, idx), set at build time.
#include "engine/data.hpp"
#include "fuzz_util.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace gpuvs;
  static const std::string labels = [] {
    const std::uint8_t idx1[] = {0, 0, 8, 1, 0, 0, 0, 4, 0, 1, 2, 3};  // four labels
    return fuzz::write("labels-idx1-ubyte", idx1, sizeof idx1);
  }();
  fuzz::expect_clean([&] {
    engine::DataFiles f;
    const std::string format = GPUVS_FUZZ_FORMAT;
    f.data = fuzz::write(format == "csv" ? "data.csv" : format == "npy" ? "data.npy" : "data-idx3-ubyte", data, size);
    if (format != "csv") f.labels = labels;
    const engine::Dataset d = engine::load_dataset(f);
    if (static_cast<std::int64_t>(d.x.size()) != d.rows * d.features) std::abort();
  });
  return 0;
}
