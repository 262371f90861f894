// SPDX-License-Identifier: Apache-2.0
// The results history: round trips, refusal of foreign, non-SQLite and corrupt files (left untouched),
// and a writer killed with SIGKILL mid-write leaving only whole runs behind.
#include <gtest/gtest.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>

#include <chrono>
#include <thread>

#include "core/error.hpp"
#include "store/store.hpp"
#include "test_util.hpp"

using namespace gpuvs;
using gpuvs::test::slurp;
using gpuvs::test::TempDir;

namespace {

store::Run make_run(int n, std::size_t payload_kib = 1) {
  store::Run r;
  r.created_utc = "2026-11-29T12:00:00Z";
  r.kind = "evaluate";
  r.gpuvs_version = "test";
  r.host = "AMD EPYC";
  r.gpu = n % 2 ? "none" : "NVIDIA H200 (h200-sxm)";
  r.summary = "run " + std::to_string(n);
  r.payload = {{"n", n}, {"filler", std::string(payload_kib * 1024, static_cast<char>('a' + n % 26))}};
  for (int i = 0; i < n % 5 + 1; ++i)
    r.figures.push_back({"cpu.stream.triad", "cpu", "GB/s", "ok", 60.0 + i, std::nullopt});
  r.figures.push_back({"cuda.gemm.bf16", "cuda:0", "TFLOP/s", "waived", 0, 989.4});
  return r;
}

void expect_input_error(const std::function<void()>& f, const std::string& needle) {
  try {
    f();
    ADD_FAILURE() << "no error; expected one naming " << needle;
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

}  // namespace

TEST(Store, RunsRoundTrip) {
  TempDir dir;
  const auto path = dir / "sub" / "history.db";
  {
    auto s = store::Store::open(path, true);
    EXPECT_EQ(s.add(make_run(1)), 1);
    EXPECT_EQ(s.add(make_run(2)), 2);
  }
  auto s = store::Store::open(path, false);
  const auto runs = s.list();
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_EQ(runs[0].id, 2);  // newest first
  EXPECT_EQ(runs[0].summary, "run 2");
  EXPECT_EQ(s.latest(), 2);
  const auto r = s.get(1);
  EXPECT_EQ(r.payload["n"], 1);
  ASSERT_EQ(r.figures.size(), 3u);
  EXPECT_DOUBLE_EQ(r.figures[0].median, 60.0);
  EXPECT_EQ(r.figures[2].status, "waived");
  EXPECT_DOUBLE_EQ(*r.figures[2].spec, 989.4);
  expect_input_error([&] { s.get(99); }, "run 99");
}

TEST(Store, RecordsNestedTooDeepAreRefusedWhenRead) {
  // Another program may write the payload: nested a million deep, the report's copies of it overflowed the
  // stack (found in review). The store reads it as an error naming the run.
  TempDir dir;
  const auto path = dir / "history.db";
  auto s = store::Store::open(path, true);
  store::Run r = make_run(1);
  r.payload = nlohmann::json::array();
  nlohmann::json* inner = &r.payload;
  for (int d = 0; d < 300; ++d) {
    inner->push_back(nlohmann::json::array());
    inner = &(*inner)[0];
  }
  const std::int64_t id = s.add(r);
  expect_input_error([&] { s.get(id); }, fmt::format("run {} in {}: its stored record: JSON nested more than 256 deep", id, path.string()));
  store::Run shallow = make_run(2);
  EXPECT_EQ(s.get(s.add(shallow)).payload, shallow.payload);
}

TEST(Store, TextThatIsNotUtf8IsRefusedByColumn) {
  // Another program may write the store, and SQLite keeps whatever bytes it is given: a host of 0xFF made the
  // history's JSON output throw (nlohmann's type_error 316, exit 1; found in review).
  TempDir dir;
  const auto path = dir / "history.db";
  {
    auto s = store::Store::open(path, true);
    s.add(make_run(1));
  }
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, "UPDATE runs SET host = CAST(X'41FF42' AS TEXT); UPDATE figures SET unit = CAST(X'C0AF' AS TEXT);", nullptr, nullptr, nullptr),
            SQLITE_OK);
  sqlite3_close(db);
  auto s = store::Store::open(path, false);
  expect_input_error([&] { s.list(); }, path.string() + ": a stored host is not UTF-8 text");
  expect_input_error([&] { s.get(1); }, "a stored host is not UTF-8 text");
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, "UPDATE runs SET host = 'h\xc3\xa9';", nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(db);
  EXPECT_EQ(s.list().at(0).host, "h\xc3\xa9");
  expect_input_error([&] { s.get(1); }, "a stored unit is not UTF-8 text");
}

TEST(Store, MissingDatabaseIsNotCreatedForReading) {
  TempDir dir;
  expect_input_error([&] { store::Store::open(dir / "none.db", false); }, "no such database");
  EXPECT_FALSE(std::filesystem::exists(dir / "none.db"));
  auto empty = store::Store::open(dir / "new.db", true);
  expect_input_error([&] { empty.latest(); }, "no runs");
}

TEST(Store, ForeignFilesAreRefusedAndLeftUntouched) {
  TempDir dir;
  // Another application's SQLite database.
  const auto foreign = dir / "other.db";
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(foreign.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, "CREATE TABLE t(x); INSERT INTO t VALUES(42);", nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(db);
  const std::string before = slurp(foreign);
  expect_input_error([&] { store::Store::open(foreign, true); }, "another application");
  EXPECT_EQ(slurp(foreign), before);
  EXPECT_FALSE(std::filesystem::exists(dir / "other.db-wal"));
  // Not SQLite at all.
  const auto text = dir / "notes.txt";
  gpuvs::test::write_text(text, "results: 42\n");
  expect_input_error([&] { store::Store::open(text, true); }, "not an SQLite file");
  EXPECT_EQ(slurp(text), "results: 42\n");
  // A folder.
  expect_input_error([&] { store::Store::open(dir.path(), true); }, "is a directory");
}

TEST(Store, CorruptDatabaseIsReportedNotRepaired) {
  TempDir dir;
  const auto path = dir / "h.db";
  {
    auto s = store::Store::open(path, true);
    for (int i = 0; i < 40; ++i) s.add(make_run(i, 8));
  }
  // Fold the WAL back so the damage hits the main file, then scribble over pages past the header.
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  sqlite3_exec(db, "PRAGMA wal_checkpoint(TRUNCATE); PRAGMA journal_mode=DELETE;", nullptr, nullptr, nullptr);
  sqlite3_close(db);
  std::string bytes = slurp(path);
  ASSERT_GT(bytes.size(), 64u * 1024);
  for (std::size_t i = 4096 * 3; i < 4096 * 12; ++i) bytes[i] = static_cast<char>(i * 7 + 13);
  gpuvs::test::write_text(path, bytes);
  try {
    store::Store::open(path, true);
    ADD_FAILURE() << "a corrupt database was opened";
  } catch (const InputError& e) {
    const std::string what = e.what();
    EXPECT_TRUE(what.find("corrupt") != std::string::npos || what.find("not a readable") != std::string::npos) << what;
  }
  EXPECT_EQ(slurp(path), bytes);  // never overwritten
}

TEST(Store, SurvivesAWriterKilledMidWrite) {
  TempDir dir;
  const auto path = dir / "h.db";
  { store::Store::open(path, true); }
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    try {
      auto s = store::Store::open(path, false);
      for (int i = 0;; ++i) s.add(make_run(i, 256));  // 256 KiB per run: a kill lands mid-transaction
    } catch (...) {
    }
    _exit(3);
  }
  // Let it commit a few runs, then kill it without warning.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  std::size_t seen = 0;
  while (std::chrono::steady_clock::now() < deadline && seen < 5) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    try {
      seen = store::Store::open(path, false).list().size();
    } catch (const std::exception&) {
    }
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(37));
  ASSERT_EQ(kill(child, SIGKILL), 0);
  int status = 0;
  waitpid(child, &status, 0);
  ASSERT_TRUE(WIFSIGNALED(status)) << "the writer stopped by itself";
  auto s = store::Store::open(path, false);  // runs quick_check: a torn file would be refused
  const auto runs = s.list();
  ASSERT_GE(runs.size(), 5u);
  for (const auto& r : runs) {
    const auto full = s.get(r.id);
    const int n = full.payload["n"].get<int>();
    EXPECT_EQ(full.summary, "run " + std::to_string(n));
    EXPECT_EQ(full.payload["filler"].get<std::string>().size(), 256u * 1024);
    EXPECT_EQ(full.figures.size(), static_cast<std::size_t>(n % 5 + 2)) << "run " << r.id << " lost figures";
  }
  // And it takes new runs.
  EXPECT_GT(s.add(make_run(1000)), runs.front().id);
}

// Several processes creating one database at once: each must find it fresh, or ours, never "another
// application's" (the file exists, unmarked, while its creator commits; fresh-clone CI saw that with two
// evaluates). Many rounds of four, because the window is microseconds wide.
TEST(Store, ProcessesCreatingOneDatabaseAtOnceAllStore) {
  TempDir dir;
  constexpr int kRounds = 40, kWriters = 4;
  for (int round = 0; round < kRounds; ++round) {
    const auto path = dir / ("r" + std::to_string(round)) / "h.db";
    std::vector<pid_t> children;
    for (int w = 0; w < kWriters; ++w) {
      const pid_t child = fork();
      ASSERT_GE(child, 0);
      if (child == 0) {
        int code = 0;
        try {
          store::Store::open(path, true).add(make_run(w));
        } catch (const std::exception& e) {
          std::fprintf(stderr, "round %d writer %d: %s\n", round, w, e.what());
          code = 4;
        }
        _exit(code);
      }
      children.push_back(child);
    }
    for (const pid_t c : children) {
      int status = 0;
      waitpid(c, &status, 0);
      EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "round " << round;
    }
    EXPECT_EQ(store::Store::open(path, false).list().size(), static_cast<std::size_t>(kWriters)) << "round " << round;
  }
}
