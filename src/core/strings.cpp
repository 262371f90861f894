// SPDX-License-Identifier: Apache-2.0
#include "core/strings.hpp"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <numeric>

namespace gpuvs::strings {

std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> prev(b.size() + 1), cur(b.size() + 1);
  std::iota(prev.begin(), prev.end(), std::size_t{0});
  for (std::size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t sub = prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1);
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, sub});
    }
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

std::vector<std::string> closest(std::string_view word, const std::vector<std::string>& candidates,
                                 std::size_t limit) {
  std::vector<std::pair<std::size_t, std::size_t>> scored;  // (distance, index)
  const std::string w = lower(word);
  for (std::size_t i = 0; i < candidates.size(); ++i) {
    const std::string c = lower(candidates[i]);
    std::size_t d = edit_distance(w, c);
    // A candidate that contains the word (or the reverse) is a strong hint even when lengths differ.
    if (!w.empty() && (c.find(w) != std::string::npos || w.find(c) != std::string::npos)) d = d / 2;
    scored.emplace_back(d, i);
  }
  std::stable_sort(scored.begin(), scored.end());
  std::vector<std::string> out;
  for (std::size_t i = 0; i < scored.size() && out.size() < limit; ++i) out.push_back(candidates[scored[i].second]);
  return out;
}

std::string join(const std::vector<std::string>& parts, std::string_view sep) {
  std::string out;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    if (i) out += sep;
    out += parts[i];
  }
  return out;
}

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

namespace {

void append_hex_escape(std::string& out, unsigned char c) {
  static constexpr char kHex[] = "0123456789abcdef";
  out += "\\x";
  out += kHex[c >> 4];
  out += kHex[c & 15];
}

}  // namespace

std::string printable(std::string_view s, std::size_t max_len) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (out.size() >= max_len) {
      out += "...";
      break;
    }
    const auto c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c < 0x7F)
      out += static_cast<char>(c);
    else
      append_hex_escape(out, c);
  }
  return out;
}

bool has_control(std::string_view s) {
  for (const char c : s)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7F) return true;
  return false;
}

std::string escape_control(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (const char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if (c >= 0x20 && c != 0x7F)
      out += ch;
    else
      append_hex_escape(out, c);
  }
  return out;
}

bool is_utf8(std::string_view s) {
  std::size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      ++i;
      continue;
    }
    std::size_t more = 0;
    std::uint32_t cp = 0, least = 0;
    if ((c & 0xE0) == 0xC0) more = 1, cp = c & 0x1Fu, least = 0x80;
    else if ((c & 0xF0) == 0xE0) more = 2, cp = c & 0x0Fu, least = 0x800;
    else if ((c & 0xF8) == 0xF0) more = 3, cp = c & 0x07u, least = 0x10000;
    else return false;  // a continuation byte first, or 0xF8 and up
    if (s.size() - i <= more) return false;
    for (std::size_t k = 1; k <= more; ++k) {
      const auto d = static_cast<unsigned char>(s[i + k]);
      if ((d & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (d & 0x3Fu);
    }
    if (cp < least || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
    i += more + 1;
  }
  return true;
}

std::vector<std::string> wrap_words(std::string_view text, std::size_t width) {
  std::vector<std::string> lines(1);
  auto is_space = [](char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; };
  std::size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && is_space(text[i])) ++i;
    std::size_t j = i;
    while (j < text.size() && !is_space(text[j])) ++j;
    if (j == i) break;
    const std::string_view word = text.substr(i, j - i);
    std::string& line = lines.back();
    if (line.empty()) line = word;
    else if (line.size() + 1 + word.size() <= width) (line += ' ') += word;
    else lines.emplace_back(word);
    i = j;
  }
  return lines;
}

}  // namespace gpuvs::strings
