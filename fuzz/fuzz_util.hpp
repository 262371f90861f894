// SPDX-License-Identifier: Apache-2.0
// What every harness shares: a private scratch folder on tmpfs (the readers take paths, as users give them),
// and the contract each parser is held to — it reads the input, or throws one InputError of one line. Any
// other exception escapes to libFuzzer, which reports it as a crash, as it does every sanitizer finding.
#pragma once
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "core/error.hpp"

namespace gpuvs::fuzz {

inline const std::filesystem::path& scratch() {
  static const std::filesystem::path dir = [] {
    const std::filesystem::path base = std::filesystem::exists("/dev/shm") ? "/dev/shm" : std::filesystem::temp_directory_path();
    auto d = base / ("gpuvs-fuzz-" + std::to_string(::getpid()));
    std::filesystem::create_directories(d);
    return d;
  }();
  return dir;
}

/// Writes the input to `name` in the scratch folder; returns its path.
inline std::string write(const std::string& name, const std::uint8_t* data, std::size_t size) {
  const auto p = scratch() / name;
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  return p.string();
}

/// Runs `f`; an InputError must be one non-empty line, else the harness aborts (a finding).
template <typename F>
void expect_clean(F&& f) {
  try {
    f();
  } catch (const InputError& e) {
    const std::string what = e.what();
    if (what.empty() || what.find('\n') != std::string::npos) {
      std::fprintf(stderr, "InputError is not one line: [%s]\n", what.c_str());
      std::abort();
    }
  }
}

/// Runs `read` (a reader of the input, from memory or from a file); returns "" when it read, with the result in
/// `out`, or the InputError it threw without its "WHERE: " prefix, so two readers of the same bytes compare. An
/// error that does not name `where` on one line aborts (a finding).
template <typename Read, typename Result>
std::string outcome(Read&& read, const std::string& where, Result& out) {
  try {
    out = read();
    return "";
  } catch (const InputError& e) {
    const std::string what = e.what();
    if (what.rfind(where + ": ", 0) != 0 || what.find('\n') != std::string::npos) {
      std::fprintf(stderr, "InputError does not name %s on one line: [%s]\n", where.c_str(), what.c_str());
      std::abort();
    }
    return what.substr(where.size() + 2);
  }
}

}  // namespace gpuvs::fuzz
