// SPDX-License-Identifier: Apache-2.0
// CSV records as RFC 4180 writes them (quoted fields may hold commas, doubled quotes and newlines), read
// one at a time with the line each starts on, so a reader can name the line of a bad field.
#pragma once
#include <cstddef>
#include <string>
#include <vector>

namespace gpuvs::csv {

/// The next record of `text` from `pos` into `cells`; false at the end of the text. `line` counts the text's
/// lines (advanced past the record) and `start_line` is the line the record starts on. An unterminated quoted
/// field is an InputError "WHERE:LINE: unterminated quoted field".
bool next_record(const std::string& text, std::size_t& pos, int& line, std::vector<std::string>& cells, int& start_line,
                 const std::string& where);

/// `s` as a finite number, or InputError "WHERE:LINE: WHAT 'S' is not a number".
double to_number(const std::string& s, const std::string& what, const std::string& where, int line);

}  // namespace gpuvs::csv
