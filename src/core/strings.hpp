// SPDX-License-Identifier: Apache-2.0
// Small string helpers: edit distance for "did you mean" suggestions, trimming, joining, word wrapping.
#pragma once
#include <string>
#include <string_view>
#include <vector>

namespace gpuvs::strings {

std::size_t edit_distance(std::string_view a, std::string_view b);
/// Up to `limit` candidates closest to `word` by edit distance (ties keep candidate order).
std::vector<std::string> closest(std::string_view word, const std::vector<std::string>& candidates,
                                 std::size_t limit = 3);
std::string join(const std::vector<std::string>& parts, std::string_view sep);
std::string lower(std::string_view s);
bool ends_with(std::string_view s, std::string_view suffix);
/// User text made safe for a one-line message: control and non-ASCII bytes as \xNN, long text cut.
std::string printable(std::string_view s, std::size_t max_len = 60);
/// `s` with each control character (below 0x20, and 0x7F) written as \xNN; every other byte, UTF-8
/// included, kept; nothing cut. What keeps an error message one line whatever it quotes.
std::string escape_control(std::string_view s);
/// True when `s` holds a control character (below 0x20, or 0x7F): what no name, id or label in a data file holds,
/// and what would reach a terminal as an escape sequence or a forged line.
bool has_control(std::string_view s);
/// True when `s` is well-formed UTF-8 (no overlong form, surrogate or code point past U+10FFFF), as a JSON
/// writer requires of every string it writes.
bool is_utf8(std::string_view s);
/// `text`'s words (split at whitespace) filled greedily into lines of at most `width` characters, one space
/// between words. Nothing is cut: a word longer than `width` stays whole on a line of its own. Always at
/// least one line ("" for text with no words).
std::vector<std::string> wrap_words(std::string_view text, std::size_t width);

}  // namespace gpuvs::strings
