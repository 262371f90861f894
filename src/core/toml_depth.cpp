// SPDX-License-Identifier: Apache-2.0
#include "core/toml_depth.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstddef>

#include "core/error.hpp"

namespace gpuvs {

namespace {

/// A TOML scan that tracks depth. Every method returns false at the first thing it cannot place: the text is not
/// TOML there, the parser will say so, and nothing past that point can reach the parser's tables.
class Scanner {
 public:
  Scanner(std::string_view text, const std::string& where) : t_(text), where_(where) {}

  void run() {
    while (i_ < t_.size()) {
      skip_blank();
      if (i_ >= t_.size()) return;
      const char c = t_[i_];
      if (c == '#') {
        skip_comment();
      } else if (c == '\n' || c == '\r') {
        if (!newline()) return;
      } else if (c == '[') {
        if (!header()) return;
      } else {
        int parts = 0;
        if (!key(parts)) return;
        check(header_parts_ + parts);
        skip_blank();
        if (!eat('=')) return;
        if (!value(header_parts_ + parts)) return;
        if (!end_of_line()) return;
      }
    }
  }

 private:
  std::string_view t_;
  const std::string& where_;
  std::size_t i_ = 0;
  int header_parts_ = 0;

  void check(int depth) const {
    if (depth <= kMaxTomlDepth) return;
    const auto line = 1 + std::count(t_.begin(), t_.begin() + static_cast<std::ptrdiff_t>(std::min(i_, t_.size())), '\n');
    throw InputError(fmt::format("{}:{}: TOML keys and tables nested more than {} deep", where_, line, kMaxTomlDepth));
  }
  bool at(char c) const { return i_ < t_.size() && t_[i_] == c; }
  bool eat(char c) {
    if (!at(c)) return false;
    ++i_;
    return true;
  }
  bool starts(std::string_view s) const { return t_.substr(i_, s.size()) == s; }
  void skip_blank() {
    while (i_ < t_.size() && (t_[i_] == ' ' || t_[i_] == '\t')) ++i_;
  }
  void skip_comment() {
    while (i_ < t_.size() && t_[i_] != '\n') ++i_;
  }
  bool newline() {
    if (eat('\n')) return true;
    return eat('\r') && eat('\n');
  }
  /// Blanks, comments and newlines: what may sit between an array's values.
  void skip_space() {
    for (;;) {
      skip_blank();
      if (at('#')) skip_comment();
      if (at('\n')) {
        ++i_;
      } else if (at('\r') && i_ + 1 < t_.size() && t_[i_ + 1] == '\n') {
        i_ += 2;
      } else {
        return;
      }
    }
  }
  bool end_of_line() {
    skip_blank();
    if (at('#')) skip_comment();
    return i_ >= t_.size() || newline();
  }

  static bool bare(char c) {
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
  }
  /// One-line strings: "basic" with escapes, 'literal' without.
  bool line_string() {
    const char q = t_[i_++];
    while (i_ < t_.size()) {
      const char c = t_[i_++];
      if (c == q) return true;
      if (c == '\n') return false;
      if (q == '"' && c == '\\') ++i_;
    }
    return false;
  }
  /// """multi-line basic""" or '''multi-line literal''': up to two quotes may close it beside the delimiter.
  bool multi_string() {
    const char q = t_[i_];
    i_ += 3;
    while (i_ < t_.size()) {
      const char c = t_[i_];
      if (q == '"' && c == '\\') {
        i_ += 2;
        continue;
      }
      if (c == q && i_ + 2 < t_.size() && t_[i_ + 1] == q && t_[i_ + 2] == q) {
        i_ += 3;
        for (int extra = 0; extra < 2 && at(q); ++extra) ++i_;
        return true;
      }
      ++i_;
    }
    return false;
  }
  bool key(int& parts) {
    for (;;) {
      skip_blank();
      if (at('"') || at('\'')) {
        if (!line_string()) return false;
      } else {
        const std::size_t start = i_;
        while (i_ < t_.size() && bare(t_[i_])) ++i_;
        if (i_ == start) return false;
      }
      ++parts;
      check(header_parts_ + parts);  // each part as it is read: a long key is refused at its 65th part
      skip_blank();
      if (!eat('.')) return true;
    }
  }
  bool header() {
    ++i_;
    const bool array = eat('[');
    header_parts_ = 0;
    int parts = 0;
    if (!key(parts)) return false;
    header_parts_ = parts;
    skip_blank();
    if (!eat(']') || (array && !eat(']'))) return false;
    return end_of_line();
  }
  bool value(int depth) {
    skip_blank();
    if (i_ >= t_.size()) return false;
    if (starts("\"\"\"") || starts("'''")) return multi_string();
    const char c = t_[i_];
    if (c == '"' || c == '\'') return line_string();
    if (c == '[') {
      ++i_;
      check(depth + 1);
      for (;;) {
        skip_space();
        if (eat(']')) return true;
        if (!value(depth + 1)) return false;
        skip_space();
        if (eat(']')) return true;
        if (!eat(',')) return false;
      }
    }
    if (c == '{') {
      ++i_;
      check(depth + 1);
      skip_space();
      if (eat('}')) return true;
      for (;;) {
        int parts = 0;
        const int saved = header_parts_;
        header_parts_ = depth + 1;  // an inline table's keys count from where the table sits
        const bool ok = key(parts);
        header_parts_ = saved;
        if (!ok) return false;
        skip_blank();
        if (!eat('=')) return false;
        if (!value(depth + 1 + parts)) return false;
        skip_space();
        if (eat('}')) return true;
        if (!eat(',')) return false;
        skip_space();
      }
    }
    // A number, boolean or date-time: up to what ends a value (a date-time may hold one space).
    const std::size_t start = i_;
    while (i_ < t_.size() && t_[i_] != ',' && t_[i_] != ']' && t_[i_] != '}' && t_[i_] != '#' && t_[i_] != '\n' && t_[i_] != '\r') ++i_;
    return i_ > start;
  }
};

}  // namespace

void check_toml_depth(std::string_view text, const std::string& where) { Scanner(text, where).run(); }

}  // namespace gpuvs
