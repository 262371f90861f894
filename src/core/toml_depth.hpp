// SPDX-License-Identifier: Apache-2.0
// A check of a TOML text's nesting before any TOML library sees it. toml++ parses dotted keys and table headers
// without recursion but frees and walks the tables it built recursively, so a key of 50,000 parts (a 100 KB file)
// overflows the stack wherever it is read. This scan follows TOML 1.0's grammar (headers, dotted keys, strings of
// all four kinds, arrays, inline tables, comments) far enough to count how deep each value sits, and refuses a file
// nested deeper than any real one before the library builds anything.
#pragma once
#include <string>
#include <string_view>

namespace gpuvs {

/// Deeper than any file gpuvs reads: tables from headers and dotted keys, inline tables and arrays, all counted.
inline constexpr int kMaxTomlDepth = 64;

/// Throws InputError "WHERE:LINE: TOML keys and tables nested more than 64 deep" at the first value deeper than
/// kMaxTomlDepth. Text that is not TOML is left to the parser to report: the scan stops at the first construct it
/// cannot place, where a parser stops too.
void check_toml_depth(std::string_view text, const std::string& where);

}  // namespace gpuvs
