// Published-measurement files (`gpuvs validate --data FILE`): the CSV schema, then every row priced.
#include "catalog/catalog.hpp"
#include "fuzz_util.hpp"
#include "perf/validation.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace gpuvs;
  static const catalog::Catalog cat = catalog::Catalog::builtin();
  fuzz::expect_clean([&] {
    const auto rows = perf::read_published(std::string(reinterpret_cast<const char*>(data), size), "fuzz.csv");
    if (rows.size() <= 2) (void)perf::validate(cat, rows);  // pricing is slow: a row or two reach it
  });
  return 0;
}
