// SPDX-License-Identifier: Apache-2.0
// What gpuvs writes, against the real binary killed at random points (SIGKILL: no handler runs) and against
// concurrent writers: every checkpoint, report and saved bench record is the old file or the new one, never a
// broken one; TensorBoard event files decode up to their last whole record; two evaluate runs writing one
// history at once are both stored. And against what is already at the output path (issue 31): no writer replaces
// a FIFO, a device, its own input, a file it did not write or what a link points to unless it is its own.
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <chrono>
#include <random>
#include <thread>

#include "engine/checkpoint.hpp"
#include "store/store.hpp"
#include "test_util.hpp"
#include "tfevent_reader.hpp"

extern char** environ;

using namespace gpuvs;

namespace {

constexpr int kKills = 100;

/// Starts `gpuvs ARGS...` (stdin, stdout and stderr on /dev/null); returns its pid.
pid_t spawn(const std::vector<std::string>& args, const std::string& err = "/dev/null") {
  std::vector<std::string> all{GPUVS_BINARY};
  all.insert(all.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : all) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  for (int fd : {0, 1}) posix_spawn_file_actions_addopen(&fa, fd, "/dev/null", fd == 0 ? O_RDONLY : O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 2, err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  pid_t pid = -1;
  const int rc = posix_spawn(&pid, all[0].c_str(), &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  EXPECT_EQ(rc, 0);
  return pid;
}

int wait_exit(pid_t pid) {
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/// Runs the command to its end; returns its wall time in seconds.
double time_run(const std::vector<std::string>& args) {
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(wait_exit(spawn(args)), 0);
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

/// Starts the command and returns the seconds until `path` exists (then kills it); fails the test past 120 s.
double seconds_until_written(const std::vector<std::string>& args, const std::filesystem::path& path) {
  const auto t0 = std::chrono::steady_clock::now();
  const pid_t pid = spawn(args);
  double s = 0;
  while (!std::filesystem::exists(path) && (s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count()) < 120)
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  ::kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
  EXPECT_LT(s, 120) << path << " was not written within 120 s";
  return s;
}

/// Starts the command `kKills` times, killing it after a uniform random delay in [0, window) s; `check` runs
/// after each kill. Returns how many kills landed before the command finished on its own.
template <typename Check>
int kill_repeatedly(const std::vector<std::string>& args, double window, std::uint64_t seed, Check check) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> delay(0.0, window);
  int killed = 0;
  for (int k = 0; k < kKills; ++k) {
    const pid_t pid = spawn(args);
    std::this_thread::sleep_for(std::chrono::duration<double>(delay(rng)));
    killed += ::kill(pid, SIGKILL) == 0;
    int status = 0;
    waitpid(pid, &status, 0);
    check(k);
  }
  return killed;
}

const char* kSmallModel = "name = \"small\"\ninput_shape = [16]\n[[layers]]\ntype = \"dense\"\nunits = 32\nactivation = \"relu\"\n"
                          "[[layers]]\ntype = \"dense\"\nunits = 4\nactivation = \"softmax\"\n";

}  // namespace

TEST(Writers, KilledTrainingLeavesACheckpointThatLoadsAndEventFilesThatDecode) {
  test::TempDir dir;
  test::write_text(dir / "small.toml", kSmallModel);
  const std::string ck = (dir / "ck").string(), logs = (dir / "logs").string();
  // Many short epochs (each ends with a checkpoint and an event-file flush), more than the kill window covers.
  const std::vector<std::string> args = {"train", (dir / "small.toml").string(), "--rows", "600", "--epochs", "100000", "--threads", "1",
                                         "--checkpoint", ck, "--logdir", logs, "--force"};  // each run afresh over the last
  int loaded = 0, events = 0, partial_tails = 0;
  // The window follows this machine's pace (a loaded CI machine takes several times as long to start):
  // two thirds of the kills or more, in expectation, land after the first checkpoint.
  const double first_s = seconds_until_written(args, engine::checkpoint_file(ck));
  std::filesystem::remove_all(ck);
  std::filesystem::remove_all(logs);
  const int killed = kill_repeatedly(args, 0.3 + 3 * first_s, 1201, [&](int) {
    const auto file = engine::checkpoint_file(ck);
    if (std::filesystem::exists(file)) {
      engine::ParamStore into;
      EXPECT_NO_THROW(engine::load_checkpoint(file, into)) << "a killed run left a checkpoint that does not load";
      ++loaded;
    }
    for (const char* sub : {"train", "validation"}) {
      if (!std::filesystem::exists(std::filesystem::path(logs) / sub)) continue;
      for (const auto& f : std::filesystem::directory_iterator(std::filesystem::path(logs) / sub)) {
        // Whole records must decode (length and data CRCs); only the last may be cut short by the kill.
        std::string s = test::slurp(f.path());
        std::size_t p = 0, whole = 0;
        while (p + 12 <= s.size()) {
          std::uint64_t len = 0;
          std::memcpy(&len, s.data() + p, 8);
          if (p + 12 + len + 4 > s.size()) break;
          p += 12 + len + 4;
          ++whole;
        }
        if (p < s.size()) ++partial_tails;
        s.resize(p);
        test::write_text(dir / "prefix.tfevents", s);
        EXPECT_NO_THROW(EXPECT_EQ(test::read_event_file(dir / "prefix.tfevents").size(), whole)) << f.path();
        events += static_cast<int>(whole);
      }
    }
  });
  EXPECT_EQ(killed, kKills);
  EXPECT_GT(loaded, kKills / 2) << "most kills should land after the first checkpoint";
  EXPECT_GT(events, 0);
  RecordProperty("partial_event_tails", partial_tails);
}

TEST(Writers, AKilledReportLeavesTheOldFileOrTheNew) {
  test::TempDir dir;
  const std::string db = (dir / "h.db").string();
  for (int run = 0; run < 2; ++run)
    ASSERT_EQ(wait_exit(spawn({"evaluate", "--rows", "600", "--epochs", "1", "--threads", "1", "--no-report", "--db", db})), 0);
  // The two renders the report can hold.
  const std::string r1 = (dir / "r1.html").string(), r2 = (dir / "r2.html").string();
  ASSERT_EQ(wait_exit(spawn({"report", "--run", "1", "--html", r1, "--db", db})), 0);
  ASSERT_EQ(wait_exit(spawn({"report", "--run", "2", "--html", r2, "--db", db})), 0);
  const std::string html1 = test::slurp(r1), html2 = test::slurp(r2);
  ASSERT_NE(html1, html2);
  const std::string out = (dir / "report.html").string();
  const double report_s = time_run({"report", "--run", "1", "--html", out, "--db", db});
  int whole = 0;
  kill_repeatedly({"report", "--run", "2", "--html", out, "--db", db}, 1.5 * report_s, 7, [&](int) {
    const std::string now = test::slurp(out);
    EXPECT_TRUE(now == html1 || now == html2) << "a killed report left " << now.size() << " bytes that are neither render";
    whole += now == html2;
  });
  EXPECT_GT(whole, 0);
}

TEST(Writers, AKilledBenchSaveLeavesNoRecordOrAWholeOne) {
  test::TempDir dir;
  const std::string rec = (dir / "bench.json").string();
  // A compute-bound benchmark on one thread: 4x quicker than a memory one on a loaded machine, so 100 kills fit.
  const std::vector<std::string> bench = {"bench", "--quick", "--only", "cpu.fma.peak.1t", "--save", rec};
  const double bench_s = time_run(bench);
  std::filesystem::remove(rec);
  int saved = 0;
  kill_repeatedly(bench, 1.2 * bench_s, 11, [&](int) {
    if (!std::filesystem::exists(rec)) return;
    const auto j = nlohmann::json::parse(test::slurp(rec), nullptr, false);
    EXPECT_FALSE(j.is_discarded()) << "a killed bench --save left a record that is not JSON";
    EXPECT_TRUE(j.contains("results") && !j["results"].empty());
    ++saved;
  });
  EXPECT_GT(saved, 0);
}

TEST(Writers, TwoEvaluateRunsWritingOneHistoryAtOnceAreBothStored) {
  test::TempDir dir;
  const std::string db = (dir / "fresh" / "h.db").string();  // a database neither has created yet
  const std::vector<std::string> args = {"evaluate", "--rows", "600", "--epochs", "1", "--threads", "1", "--no-report", "--db", db};
  const std::string err_a = (dir / "a.err").string(), err_b = (dir / "b.err").string();
  const pid_t a = spawn(args, err_a), b = spawn(args, err_b);
  EXPECT_EQ(wait_exit(a), 0) << test::slurp(err_a);
  EXPECT_EQ(wait_exit(b), 0) << test::slurp(err_b);
  const store::Store s = store::Store::open(db, false);
  EXPECT_EQ(s.list().size(), 2u);
}

// ---- Issue 31: what is at the output path before a writer runs.

namespace {

/// What a path is, to compare before and after: its type, inode, mode, link target and contents.
struct Snapshot {
  bool exists = false;
  mode_t mode = 0;
  ino_t inode = 0;
  dev_t rdev = 0;
  std::string link, bytes;
  bool operator==(const Snapshot& o) const {
    return exists == o.exists && mode == o.mode && inode == o.inode && rdev == o.rdev && link == o.link && bytes == o.bytes;
  }
};
Snapshot snapshot(const std::filesystem::path& p) {
  Snapshot s;
  struct stat st {};
  if (::lstat(p.c_str(), &st) != 0) return s;
  s.exists = true;
  s.mode = st.st_mode;
  s.inode = st.st_ino;
  s.rdev = st.st_rdev;
  if (S_ISLNK(st.st_mode)) s.link = std::filesystem::read_symlink(p).string();
  if (S_ISREG(st.st_mode)) s.bytes = test::slurp(p);
  return s;
}

/// One writer: its command with OUT where the output path goes; the inputs it reads (OWN marks the one the
/// "its own input" case points the output at).
struct Writer {
  std::string name;
  std::vector<std::string> args;  // "OUT" is replaced by the target
  std::string own_input;          // a path the command reads, to name as its output too
};

std::vector<std::string> with_target(const std::vector<std::string>& args, const std::string& target) {
  std::vector<std::string> out;
  for (const auto& a : args) out.push_back(a == "OUT" ? target : a);
  return out;
}

/// The writers and what they read, set up in `dir` (a history with one run, validation data, a model file).
std::vector<Writer> writers(const std::filesystem::path& dir) {
  const std::string db = (dir / "h.db").string(), data = (dir / "v.csv").string(), model = (dir / "small.toml").string();
  test::write_text(dir / "small.toml", kSmallModel);
  std::filesystem::copy_file(std::filesystem::path(GPUVS_SOURCE_DIR) / "data" / "validation" / "lambda-pytorch-2023.csv", data);
  EXPECT_EQ(wait_exit(spawn({"bench", "--quick", "--only", "cpu.fma.peak.1t", "--store", "--db", db})), 0);
  return {
      {"report --html", {"report", "--run", "1", "--db", db, "--html", "OUT"}, db},
      {"evaluate --report", {"evaluate", "--workload", model, "--rows", "600", "--epochs", "1", "--threads", "1", "--db", db, "--report", "OUT"}, model},
      {"bench --save", {"bench", "--quick", "--only", "cpu.fma.peak.1t", "--store", "--db", db, "--save", "OUT"}, db},
      {"validate --fit", {"validate", "--data", data, "--fit", "OUT"}, data},
      {"validate --write-band", {"validate", "--data", data, "--write-band", "OUT"}, data},
  };
}

}  // namespace

// Every writer against a FIFO, a symbolic link to a file it did not write, one of its own inputs and a foreign
// file: exit 2, one line naming the flag, and the thing at the path exactly as it was (type, inode, mode, bytes).
TEST(Writers, NoWriterReplacesWhatIsNotItsOwn) {
  test::TempDir dir;
  for (const auto& w : writers(dir.path())) {
    SCOPED_TRACE(w.name);
    test::TempDir t;
    ASSERT_EQ(::mkfifo((t / "fifo").c_str(), 0600), 0);
    test::write_text(t / "notes.txt", "a user's notes, not gpuvs's");
    ::chmod((t / "notes.txt").c_str(), 0600);
    std::filesystem::create_symlink(t / "notes.txt", t / "link");
    const std::string err = (t / "err").string();
    for (const std::filesystem::path& target : {t / "fifo", t / "notes.txt", t / "link", std::filesystem::path(w.own_input)}) {
      SCOPED_TRACE(target.string());
      const Snapshot before = snapshot(target), pointed = snapshot(std::filesystem::weakly_canonical(target));
      EXPECT_EQ(wait_exit(spawn(with_target(w.args, target.string()), err)), 2) << test::slurp(err);
      EXPECT_EQ(test::count_lines(test::slurp(err)), 1) << test::slurp(err);
      EXPECT_TRUE(snapshot(target) == before) << "the writer changed " << target;
      EXPECT_TRUE(snapshot(std::filesystem::weakly_canonical(target)) == pointed) << "the writer changed what " << target << " points to";
    }
  }
}

// Where its output is its own (a file it wrote before, through a link too), a writer replaces it: the link stays a
// link, the file keeps its mode, and --force replaces a foreign file.
TEST(Writers, AWriterReplacesItsOwnFileThroughALinkAndKeepsItsMode) {
  test::TempDir dir;
  const std::string data = (dir / "v.csv").string();
  std::filesystem::copy_file(std::filesystem::path(GPUVS_SOURCE_DIR) / "data" / "validation" / "lambda-pytorch-2023.csv", data);
  const std::string band = (dir / "band.toml").string(), link = (dir / "band-link.toml").string();
  ASSERT_EQ(wait_exit(spawn({"validate", "--data", data, "--write-band", band})), 0);
  ::chmod(band.c_str(), 0640);
  std::filesystem::create_symlink("band.toml", link);
  const std::string err = (dir / "err").string();
  EXPECT_EQ(wait_exit(spawn({"validate", "--data", data, "--write-band", link}, err)), 0) << test::slurp(err);
  EXPECT_TRUE(std::filesystem::is_symlink(link));
  EXPECT_EQ(snapshot(band).mode & 0777, 0640u);
  EXPECT_NE(test::slurp(band).find("# The spread of the performance model's own errors"), std::string::npos);
  test::write_text(dir / "notes.txt", "notes");
  EXPECT_EQ(wait_exit(spawn({"validate", "--data", data, "--write-band", (dir / "notes.txt").string(), "--force"}, err)), 0) << test::slurp(err);
  EXPECT_NE(test::slurp(dir / "notes.txt").find("# The spread"), std::string::npos);
}

// A character device at the output path (made here with mknod, as /dev/null is: run as root, `report --html
// /dev/null` replaced the machine's /dev/null with a regular file).
TEST(Writers, NoWriterReplacesACharacterDevice) {
  test::TempDir dir;
  const auto dev = dir / "null";
  if (::mknod(dev.c_str(), S_IFCHR | 0666, makedev(1, 3)) != 0)
    GTEST_SKIP() << "mknod of a character device is not permitted here (" << std::strerror(errno) << "): run the suite as root to test it";
  for (const auto& w : writers(dir.path())) {
    SCOPED_TRACE(w.name);
    const Snapshot before = snapshot(dev);
    const std::string err = (dir / "err").string();
    EXPECT_EQ(wait_exit(spawn(with_target(w.args, dev.string()), err)), 2) << test::slurp(err);
    EXPECT_NE(test::slurp(err).find("is a character device"), std::string::npos) << test::slurp(err);
    EXPECT_TRUE(snapshot(dev) == before);
  }
}

// train --checkpoint DIR without --resume over another run's checkpoint replaced it (a 43-epoch checkpoint was
// lost so); a special file at the checkpoint's path is never replaced; a killed run's temporary file is removed by
// the next run that writes there.
TEST(Writers, TrainKeepsAnotherRunsCheckpointAndCleansUpAfterKilledRuns) {
  test::TempDir dir;
  test::write_text(dir / "small.toml", kSmallModel);
  const std::string ck = (dir / "ck").string(), model = (dir / "small.toml").string(), err = (dir / "err").string();
  const std::vector<std::string> base = {"train", model, "--rows", "600", "--epochs", "1", "--threads", "1", "--checkpoint", ck};
  ASSERT_EQ(wait_exit(spawn(base, err)), 0) << test::slurp(err);
  const auto file = engine::checkpoint_file(ck);
  const Snapshot first = snapshot(file);
  EXPECT_EQ(wait_exit(spawn({"train", "seed-mlp", "--rows", "600", "--epochs", "1", "--threads", "1", "--checkpoint", ck}, err)), 2);
  EXPECT_NE(test::slurp(err).find("holds a checkpoint already"), std::string::npos) << test::slurp(err);
  EXPECT_TRUE(snapshot(file) == first);
  // What a killed run leaves: a temporary file of a process that no longer runs. The next run removes it.
  char host[256] = "localhost";
  ::gethostname(host, sizeof host - 1);
  const auto stale = std::filesystem::path(ck) / (std::string(".checkpoint.gpuvs.gpuvs-tmp.") + host + ".999999999.Kil1ed");
  test::write_text(stale, std::string(1 << 20, 'x'));
  auto again = base;
  again.push_back("--force");
  ASSERT_EQ(wait_exit(spawn(again, err)), 0) << test::slurp(err);
  EXPECT_FALSE(std::filesystem::exists(stale));
  int entries = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(ck)) ++entries;
  EXPECT_EQ(entries, 1);
  // A FIFO where the checkpoint goes is refused, --force or not.
  std::filesystem::remove(file);
  ASSERT_EQ(::mkfifo(file.c_str(), 0600), 0);
  EXPECT_EQ(wait_exit(spawn(again, err)), 2);
  EXPECT_NE(test::slurp(err).find("is not a regular file"), std::string::npos) << test::slurp(err);
  EXPECT_TRUE(S_ISFIFO(snapshot(file).mode));
}
