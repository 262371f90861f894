// SPDX-License-Identifier: Apache-2.0
// Advisor scenario files (`gpuvs advise --scenario FILE`), read and validated as the advisor does.
#include "advise/advisor.hpp"
#include "catalog/catalog.hpp"
#include "fuzz_util.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace gpuvs;
  static const catalog::Catalog cat = catalog::Catalog::builtin();
  fuzz::expect_clean([&] {
    advise::Assumptions a = advise::Assumptions::defaults();
    const advise::Scenario s = advise::read_scenario(fuzz::write("scenario.toml", data, size), a, cat);
    advise::validate(s, cat);
  });
  return 0;
}
