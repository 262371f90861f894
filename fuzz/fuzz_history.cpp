// SPDX-License-Identifier: Apache-2.0
// A stored run's record (the history's payload column, which another program could have written): any JSON,
// rendered as `gpuvs report` renders it, HTML and Markdown.
#include <nlohmann/json.hpp>

#include "core/json_guard.hpp"
#include "fuzz_util.hpp"
#include "report/report.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace gpuvs;
  fuzz::expect_clean([&] {
    // Read as the store reads it: nested past 256 deep is an error; what is not JSON never reaches a report.
    const auto payload = nlohmann::json::parse(data, data + size, json_input_guard("run 1: its stored record"), false);
    if (payload.is_discarded()) return;
    const nlohmann::json run = {{"id", 1}, {"created_utc", "2026-12-01T00:00:00Z"}, {"payload", payload}};
    (void)report::render_html(run);
    (void)report::render_markdown(run);
  });
  return 0;
}
