// SPDX-License-Identifier: Apache-2.0
// A user's device file (`--catalog FILE`): TOML GPU entries validated against the catalog's rules.
#include "catalog/catalog.hpp"
#include "fuzz_util.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace gpuvs;
  static const catalog::Catalog builtin = catalog::Catalog::builtin();
  fuzz::expect_clean([&] {
    catalog::Catalog cat = builtin;
    cat.add_file(fuzz::write("devices.toml", data, size));
  });
  return 0;
}
