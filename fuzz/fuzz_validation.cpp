// SPDX-License-Identifier: Apache-2.0
// Published-measurement files (`gpuvs validate --data FILE`). fuzz_validation reads the CSV schema alone
// (the parser, at parser speed); fuzz_validation_priced (GPUVS_FUZZ_PRICE) also prices a file of a row or
// two, the model's arithmetic over whatever values the reader let through — a hundred times slower, as
// every row is built and priced whole.
#include "catalog/catalog.hpp"
#include "fuzz_util.hpp"
#include "perf/validation.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace gpuvs;
  fuzz::expect_clean([&] {
    const auto rows = perf::read_published(std::string(reinterpret_cast<const char*>(data), size), "fuzz.csv");
#ifdef GPUVS_FUZZ_PRICE
    static const catalog::Catalog cat = catalog::Catalog::builtin();
    if (rows.size() <= 2) (void)perf::validate(cat, rows);
#else
    (void)rows;
#endif
  });
  return 0;
}
