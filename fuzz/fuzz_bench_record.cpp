// SPDX-License-Identifier: Apache-2.0
// Saved bench records (`gpuvs predict --calibration FILE`): the JSON record, read into a calibration.
#include "catalog/catalog.hpp"
#include "cli/calibration_file.hpp"
#include "fuzz_util.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace gpuvs;
  static const catalog::Catalog cat = catalog::Catalog::builtin();
  fuzz::expect_clean([&] { (void)cli::load_calibration(fuzz::write("bench.json", data, size), cat); });
  return 0;
}
