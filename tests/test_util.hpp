// SPDX-License-Identifier: Apache-2.0
// Helpers shared by the tests: temporary folders and running the gpuvs binary.
#pragma once
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <fstream>
#include <random>
#include <utility>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/error.hpp"

namespace gpuvs::test {

/// Random edits of `text` (replace, erase, insert from `alphabet`) over `rounds`: each parses, or fails with
/// one clean line that starts with the name it was given ("fuzz.toml"). Returns how many parsed.
template <typename Parse>
int fuzz_parser(const std::string& text, const std::string& alphabet, int rounds, std::uint64_t seed, Parse parse) {
  std::mt19937_64 rng(seed);
  int ok = 0;
  for (int round = 0; round < rounds; ++round) {
    std::string t = text;
    for (int e = 0, edits = 1 + static_cast<int>(rng() % 3); e < edits; ++e) {
      const std::size_t pos = rng() % t.size();
      const auto k = rng() % 10;
      if (k < 5) t[pos] = alphabet[rng() % alphabet.size()];
      else if (k < 8) t.erase(pos, 1 + rng() % 6);
      else t.insert(pos, 1, alphabet[rng() % alphabet.size()]);
    }
    try {
      parse(t, "fuzz.toml");
      ++ok;
    } catch (const InputError& e) {
      EXPECT_EQ(std::string(e.what()).rfind("fuzz.toml", 0), 0u) << e.what();
      EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << e.what();
    }
  }
  return ok;
}

/// A fresh folder removed when the object dies.
class TempDir {
 public:
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "gpuvs-test-XXXXXX").string();
    path_ = ::mkdtemp(tmpl.data());
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path operator/(const std::string& s) const { return path_ / s; }

 private:
  std::filesystem::path path_;
};

inline std::string slurp(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline void write_text(const std::filesystem::path& p, const std::string& text) {
  std::ofstream out(p, std::ios::binary);
  out << text;
}

struct CommandResult {
  int exit_code = -1;
  std::string out, err;
};

/// Runs `PREFIX gpuvs ARGS` through the shell (args are passed as written) with stdin closed.
inline CommandResult run_gpuvs_with(const std::string& prefix, const std::string& args) {
  TempDir tmp;
  const std::string cmd = prefix + std::string(GPUVS_BINARY) + " " + args + " </dev/null >" + (tmp / "out").string() + " 2>" +
                          (tmp / "err").string();
  const int status = std::system(cmd.c_str());
  CommandResult r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out = slurp(tmp / "out");
  r.err = slurp(tmp / "err");
  return r;
}

/// Runs `gpuvs ARGS` through the shell (args are passed as written) with stdin closed.
inline CommandResult run_gpuvs(const std::string& args) { return run_gpuvs_with("", args); }

/// run_gpuvs under `timeout`: a command that waits for ever (on a FIFO, say) is killed after `seconds` and reads
/// as exit code 124, so a test of "refused at once" fails rather than hangs.
inline CommandResult run_gpuvs_within(int seconds, const std::string& args) {
  return run_gpuvs_with("timeout -k 5 " + std::to_string(seconds) + " ", args);
}

/// Runs `gpuvs ARGS` and parses what it printed as one JSON document. A non-zero exit is a test failure naming
/// the command and its stderr (std::runtime_error, which gtest reports with the test's name); so is output that
/// is not JSON.
inline nlohmann::json run_gpuvs_json(const std::string& args) {
  const CommandResult r = run_gpuvs(args);
  if (r.exit_code != 0)
    throw std::runtime_error("gpuvs " + args + " exited " + std::to_string(r.exit_code) + ": " + r.err);
  return nlohmann::json::parse(r.out);
}

/// `text` with the first `from` replaced by `to`; std::logic_error naming `from` when the text lacks it (an edit
/// that misses would test the unedited file).
inline std::string replaced(std::string text, const std::string& from, const std::string& to) {
  const auto at = text.find(from);
  if (at == std::string::npos) throw std::logic_error("test::replaced: '" + from + "' is not in the text");
  return text.replace(at, from.size(), to);
}

/// The InputError line `f` throws, or "" when it throws none (any other exception passes through: a crash of the
/// reader is no refusal).
inline std::string input_error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

/// Each text of `cases` refused by `parse` with one InputError line that contains its expected words; a text
/// parsed without error, or a message without the words, is a failure naming it.
inline void expect_refused(const std::vector<std::pair<std::string, std::string>>& cases,
                           const std::function<void(const std::string&)>& parse) {
  for (const auto& c : cases) {
    const std::string& text = c.first;  // not a structured binding: clang 14 cannot capture one in a lambda
    const std::string& expect = c.second;
    const std::string e = input_error_of([&] { parse(text); });
    if (e.empty()) {
      ADD_FAILURE() << "accepted: " << text;
      continue;
    }
    EXPECT_NE(e.find(expect), std::string::npos) << e << "\n(expected: " << expect << ")";
    EXPECT_EQ(e.find('\n'), std::string::npos) << e;
  }
}

inline int count_lines(const std::string& s) {
  int n = 0;
  for (char c : s) n += c == '\n';
  return n;
}

}  // namespace gpuvs::test
