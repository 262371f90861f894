// SPDX-License-Identifier: Apache-2.0
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <functional>

#include <cstring>
#include <cmath>
#include <random>
#include <regex>
#include <sstream>

#include "core/crc32c.hpp"
#include "core/error.hpp"
#include "core/files.hpp"
#include "core/rng.hpp"
#include "core/stats.hpp"
#include "core/strings.hpp"
#include "core/json_guard.hpp"
#include "core/toml_depth.hpp"
#include "core/units.hpp"
#include "test_util.hpp"

using namespace gpuvs;

namespace {
// Bit-at-a-time CRC-32C: an independent definition to check the sliced table version against.
std::uint32_t crc32c_bitwise(const void* data, std::size_t n) {
  const auto* p = static_cast<const unsigned char*>(data);
  std::uint32_t c = 0xFFFFFFFFu;
  for (std::size_t i = 0; i < n; ++i) {
    c ^= p[i];
    for (int k = 0; k < 8; ++k) c = (c & 1u) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
  }
  return ~c;
}
}  // namespace

TEST(Crc32c, KnownVectors) {
  // RFC 3720 (iSCSI) B.4 test vectors and the classic check value.
  EXPECT_EQ(crc32c("123456789", 9), 0xE3069283u);
  unsigned char zeros[32] = {0};
  EXPECT_EQ(crc32c(zeros, 32), 0x8A9136AAu);
  unsigned char ones[32];
  std::memset(ones, 0xFF, 32);
  EXPECT_EQ(crc32c(ones, 32), 0x62A8AB43u);
  unsigned char inc[32];
  for (int i = 0; i < 32; ++i) inc[i] = static_cast<unsigned char>(i);
  EXPECT_EQ(crc32c(inc, 32), 0x46DD794Eu);
}

TEST(Crc32c, MatchesBitwiseOnRandomLengthsAndContinuation) {
  const CounterRng rng(7, 1);
  std::string buf(1000, '\0');
  for (std::size_t i = 0; i < buf.size(); ++i) buf[i] = static_cast<char>(rng.block(i)[0] & 0xFF);
  for (std::size_t len : {0u, 1u, 7u, 8u, 9u, 63u, 64u, 999u, 1000u}) {
    EXPECT_EQ(crc32c(buf.data(), len), crc32c_bitwise(buf.data(), len)) << len;
    const std::uint32_t first = crc32c(buf.data(), len / 2);
    EXPECT_EQ(crc32c(buf.data() + len / 2, len - len / 2, first), crc32c_bitwise(buf.data(), len)) << len;
  }
}

TEST(Crc32c, MaskedFormMatchesTfRecordDefinition) {
  const std::uint32_t c = crc32c("abc", 3);
  EXPECT_EQ(masked_crc32c("abc", 3), ((c >> 15) | (c << 17)) + 0xa282ead8u);
}

TEST(Stats, MedianQuantilesAndSpread) {
  const std::vector<double> v{5, 1, 3, 2, 4};
  EXPECT_DOUBLE_EQ(stats::median(v), 3.0);
  EXPECT_DOUBLE_EQ(stats::quantile(v, 0.0), 1.0);
  EXPECT_DOUBLE_EQ(stats::quantile(v, 1.0), 5.0);
  EXPECT_DOUBLE_EQ(stats::quantile(v, 0.25), 2.0);
  const auto s = stats::summarize(v);
  EXPECT_EQ(s.count, 5u);
  EXPECT_DOUBLE_EQ(s.mean, 3.0);
  EXPECT_DOUBLE_EQ(s.rel_mad, 1.0 / 3.0);  // |deviations| = 2,1,0,1,2 -> median 1
  EXPECT_DOUBLE_EQ(stats::median(std::vector<double>{}), 0.0);
}

TEST(Stats, AConformalIntervalHoldsWhatItPromisesOnValuesItNeverSaw) {
  // k = floor(0.1 x 105) = 10: the 10th smallest and 10th largest of 104 values.
  std::vector<double> v(104);
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<double>((i * 37) % 104);  // 0..103, shuffled
  const stats::Interval b = stats::conformal_interval(v, 0.2);
  EXPECT_DOUBLE_EQ(b.low, 9.0);
  EXPECT_DOUBLE_EQ(b.high, 94.0);
  EXPECT_LT(stats::quantile(v, 0.1), 10.4);  // the interpolated 10th percentile, 10.3, holds fewer of these
  // Drawn again and again from one distribution: on fresh draws the interval holds at least 80% on average, where the
  // interpolated percentiles of the same calibration values hold less.
  std::mt19937_64 rng(12345);
  std::lognormal_distribution<double> dist(0.0, 0.15);
  double held = 0, held_interpolated = 0;
  const int trials = 4000;
  for (int t = 0; t < trials; ++t) {
    std::vector<double> calib(40);
    for (auto& x : calib) x = dist(rng);
    const stats::Interval c = stats::conformal_interval(calib, 0.2);
    const double lo = stats::quantile(calib, 0.1), hi = stats::quantile(calib, 0.9);
    const double fresh = dist(rng);
    held += fresh >= c.low && fresh <= c.high;
    held_interpolated += fresh >= lo && fresh <= hi;
  }
  EXPECT_GE(held / trials, 0.79);  // >= 0.8 in expectation (k / (n + 1) = 4 / 41 per tail: 0.805); 4,000 draws: sd 0.006
  EXPECT_LT(held_interpolated / trials, held / trials);
  // Too few values for the promise: the extremes. None: nothing.
  EXPECT_DOUBLE_EQ(stats::conformal_interval(std::vector<double>{3, 1, 2}, 0.2).low, 1.0);
  EXPECT_DOUBLE_EQ(stats::conformal_interval(std::vector<double>{3, 1, 2}, 0.2).high, 3.0);
  EXPECT_DOUBLE_EQ(stats::conformal_interval(std::vector<double>{}, 0.2).high, 0.0);
}

TEST(Strings, EditDistanceAndClosest) {
  EXPECT_EQ(strings::edit_distance("kitten", "sitting"), 3u);
  EXPECT_EQ(strings::edit_distance("", "abc"), 3u);
  const std::vector<std::string> ids{"seed-mlp", "resnet50", "bert-base", "bert-large"};
  EXPECT_EQ(strings::closest("seed-mpl", ids, 1).at(0), "seed-mlp");
  EXPECT_EQ(strings::closest("bert", ids, 2).at(0), "bert-base");
  EXPECT_EQ(strings::closest("RESNET50", ids, 1).at(0), "resnet50");
}

TEST(Strings, EscapeControlWritesControlBytesAsHexAndKeepsTheRest) {
  using gpuvs::strings::escape_control;
  EXPECT_EQ(escape_control("a\nb\tc\x7f"), "a\\x0ab\\x09c\\x7f");
  EXPECT_EQ(escape_control(std::string("nul\0end", 7)), "nul\\x00end");
  EXPECT_EQ(escape_control("caf\xc3\xa9 ok"), "caf\xc3\xa9 ok");  // UTF-8 kept, unlike printable
  EXPECT_EQ(gpuvs::strings::printable("caf\xc3\xa9"), "caf\\xc3\\xa9");
  const std::string long_text(500, 'x');
  EXPECT_EQ(escape_control(long_text), long_text);  // nothing cut
}

TEST(Strings, Utf8IsCheckedAsAJsonWriterChecksIt) {
  using gpuvs::strings::is_utf8;
  for (const char* good : {"", "ascii", "caf\xc3\xa9", "\xe2\x82\xac", "\xf0\x9f\x98\x80", "\xf4\x8f\xbf\xbf", "\xed\x9f\xbf"})
    EXPECT_TRUE(is_utf8(good)) << strings::printable(good);
  // A lone continuation, a truncated sequence, overlong forms of '/' and U+0800, a surrogate, past U+10FFFF, 0xFF.
  for (const char* bad : {"\x80", "caf\xc3", "\xe2\x82", "\xc0\xaf", "\xe0\x9f\xbf", "\xed\xa0\x80", "\xf4\x90\x80\x80", "\xff", "a\xc3(b"})
    EXPECT_FALSE(is_utf8(bad)) << strings::printable(bad);
}

TEST(Strings, WrapWordsBreaksAtSpacesAndNeverCuts) {
  using V = std::vector<std::string>;
  EXPECT_EQ(strings::wrap_words("PCIe gen 4 x16 staged through host memory", 24),
            (V{"PCIe gen 4 x16 staged", "through host memory"}));
  EXPECT_EQ(strings::wrap_words("fp32, tf32, amp-fp16, amp-bf16, amp-fp8", 24),
            (V{"fp32, tf32, amp-fp16,", "amp-bf16, amp-fp8"}));
  EXPECT_EQ(strings::wrap_words("exactly ten", 11), (V{"exactly ten"}));  // a line may fill the width
  EXPECT_EQ(strings::wrap_words("exactly ten", 10), (V{"exactly", "ten"}));
  // A word longer than the width stays whole, on a line of its own.
  EXPECT_EQ(strings::wrap_words("a supercalifragilistic b", 5), (V{"a", "supercalifragilistic", "b"}));
  EXPECT_EQ(strings::wrap_words("  spaced \t out\n ", 40), (V{"spaced out"}));
  EXPECT_EQ(strings::wrap_words("", 10), (V{""}));
  EXPECT_EQ(strings::wrap_words("   ", 10), (V{""}));
  EXPECT_EQ(strings::wrap_words("one two", 0), (V{"one", "two"}));
}

TEST(Strings, WrapWordsFuzzKeepsEveryWordWithinTheWidth) {
  std::mt19937 gen(20240611);
  auto words_of = [](const std::string& s) {
    std::vector<std::string> w;
    std::istringstream in(s);
    for (std::string x; in >> x;) w.push_back(x);
    return w;
  };
  for (int trial = 0; trial < 2000; ++trial) {
    const std::size_t width = std::uniform_int_distribution<std::size_t>(0, 30)(gen);
    const int n = std::uniform_int_distribution<int>(0, 12)(gen);
    std::vector<std::string> words;
    std::string text;
    for (int k = 0; k < n; ++k) {
      std::string w(std::uniform_int_distribution<std::size_t>(1, 40)(gen), 'x');
      for (auto& c : w) c = static_cast<char>(std::uniform_int_distribution<int>('!', '~')(gen));
      words.push_back(w);
      text += std::string(std::uniform_int_distribution<std::size_t>(k == 0 ? std::size_t{0} : std::size_t{1}, 3)(gen), k % 2 ? ' ' : '\t') + w;
    }
    const auto lines = strings::wrap_words(text, width);
    ASSERT_FALSE(lines.empty());
    std::vector<std::string> rejoined;
    for (std::size_t i = 0; i < lines.size(); ++i) {
      const auto lw = words_of(lines[i]);
      EXPECT_TRUE(!lw.empty() || lines.size() == 1) << "empty line " << i << " in " << text;
      EXPECT_EQ(strings::join(lw, " "), lines[i]) << "one space between words, none at the ends";
      if (lines[i].size() > width) {
        EXPECT_EQ(lw.size(), 1u) << "over-wide line that is not one long word: " << lines[i];
      }
      if (i + 1 < lines.size()) {  // greedy: the next line's first word would not have fitted on this one
        EXPECT_GT(lines[i].size() + 1 + words_of(lines[i + 1]).front().size(), width) << text;
      }
      rejoined.insert(rejoined.end(), lw.begin(), lw.end());
    }
    EXPECT_EQ(rejoined, words) << "width " << width << ": " << text;
  }
}

TEST(Units, GbAndGibAreDifferent) {
  EXPECT_DOUBLE_EQ(units::to_gb(1e9), 1.0);
  EXPECT_DOUBLE_EQ(units::to_gib(1073741824.0), 1.0);
  EXPECT_NE(units::to_gb(1073741824.0), units::to_gib(1073741824.0));
  EXPECT_EQ(units::format_bytes_binary(1536), "1.50 KiB");
  EXPECT_EQ(units::format_seconds(0.0025), "2.50 ms");
}

TEST(Rng, CounterBasedIsPureAndUniform) {
  const CounterRng a(42, 3), b(42, 3), c(43, 3), d(42, 4);
  EXPECT_EQ(a.block(10), b.block(10));
  EXPECT_NE(a.block(10), c.block(10));
  EXPECT_NE(a.block(10), d.block(10));
  double sum = 0, sq = 0;
  const int n = 100000;
  for (int i = 0; i < n; ++i) {
    const double u = a.uniform(static_cast<std::uint64_t>(i));
    ASSERT_GE(u, 0.0);
    ASSERT_LT(u, 1.0);
    sum += u;
    sq += u * u;
  }
  EXPECT_NEAR(sum / n, 0.5, 0.005);
  EXPECT_NEAR(sq / n - (sum / n) * (sum / n), 1.0 / 12.0, 0.002);
  double ns = 0, nsq = 0;
  for (int i = 0; i < n; ++i) {
    const double z = a.normal(static_cast<std::uint64_t>(i));
    ns += z;
    nsq += z * z;
  }
  EXPECT_NEAR(ns / n, 0.0, 0.02);
  EXPECT_NEAR(nsq / n, 1.0, 0.02);
}

TEST(Rng, SixteenBlocksAtOnceEqualSingleBlocks) {
  const CounterRng rng(0x123456789abcdefULL, 0xfedcba9876543210ULL);
  for (std::uint64_t first : {std::uint64_t{0}, std::uint64_t{16}, (std::uint64_t{1} << 32) - 8}) {
    std::uint32_t out[4][16];
    rng.blocks16(first, out);
    for (int l = 0; l < 16; ++l) {
      const auto b = rng.block(first + static_cast<std::uint64_t>(l));
      for (int w = 0; w < 4; ++w) EXPECT_EQ(out[w][l], b[static_cast<std::size_t>(w)]) << first << " " << l;
    }
  }
}

TEST(Rng, PhiloxKnownAnswer) {
  // Random123's published known-answer test for philox4x32-10: counter and key all zeros.
  const auto z = Philox4x32::block({0, 0, 0, 0}, {0, 0});
  EXPECT_EQ(z[0], 0x6627e8d5u);
  EXPECT_EQ(z[1], 0xe169c58du);
  EXPECT_EQ(z[2], 0xbc57ac4cu);
  EXPECT_EQ(z[3], 0x9b00dbd8u);
}

TEST(Files, WriteAtomicReplacesWholeFileAndLeavesNoTemp) {
  test::TempDir dir;
  const auto f = dir / "out.bin";
  files::write_atomic(f, "first version");
  files::write_atomic(f, "second");
  EXPECT_EQ(test::slurp(f), "second");
  int entries = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(dir.path())) ++entries;
  EXPECT_EQ(entries, 1);
}

TEST(Files, EnsureWritableDirRejectsFileAncestorAndCreatesNothing) {
  test::TempDir dir;
  test::write_text(dir / "plain", "x");
  try {
    files::ensure_writable_dir(dir / "plain" / "sub" / "deeper", "--logdir");
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("--logdir"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("not a directory"), std::string::npos);
  }
  EXPECT_FALSE(std::filesystem::exists(dir / "plain" / "sub"));
  files::ensure_writable_dir(dir / "a" / "b", "--logdir");
  EXPECT_TRUE(std::filesystem::is_directory(dir / "a" / "b"));
}

namespace {
std::string error_of(const std::function<void()>& f) { return test::input_error_of(f); }
struct stat stat_of(const std::filesystem::path& p) {
  struct stat st {};
  ::lstat(p.c_str(), &st);
  return st;
}
}  // namespace

// Issue 31: a FIFO, a device, a directory or a link to /dev/zero as an input is refused at once, naming it, and a
// file past the cap is refused before it is read.
TEST(Files, InputsAreRegularFilesReadWithACapAndNeverWaitedOn) {
  test::TempDir dir;
  ASSERT_EQ(::mkfifo((dir / "fifo").c_str(), 0600), 0);  // no writer: an ordinary open would block for ever
  std::filesystem::create_symlink("/dev/zero", dir / "zero.toml");
  std::filesystem::create_directory(dir / "folder.toml");
  EXPECT_NE(error_of([&] { files::read_all(dir / "fifo", "--scenario"); }).find("--scenario " + (dir / "fifo").string() + ": is a FIFO, not a regular file"),
            std::string::npos);
  EXPECT_NE(error_of([&] { files::read_all(dir / "zero.toml", "model file"); }).find("is a character device, not a regular file"), std::string::npos);
  EXPECT_NE(error_of([&] { files::read_all(dir / "folder.toml", "model file"); }).find("is a directory, not a regular file"), std::string::npos);
  EXPECT_NE(error_of([&] { files::read_all(dir / "absent", "--data"); }).find("absent: no such file"), std::string::npos);
  test::write_text(dir / "big", std::string(5000, 'x'));
  EXPECT_NE(error_of([&] { files::read_all(dir / "big", "--catalog", 4096); }).find("5000 bytes (4.88 KiB), more than the 4096 bytes"), std::string::npos);
  EXPECT_EQ(files::read_all(dir / "big", "--catalog", 5000).size(), 5000u);
}

// Issue 31: what the output policy refuses, and what it keeps of the file it replaces.
TEST(Files, OutputsReplaceOnlyTheirOwnRegularFilesAndKeepTheirMode) {
  test::TempDir dir;
  files::forget_run_files();
  const files::OutputSpec spec{"--out", "test record", "# made by the test writer", false};
  const std::string mine = "# made by the test writer\nv = 1\n";
  // A new file, then a file of this writer's own: replaced.
  files::write_output(dir / "a.txt", spec, mine);
  files::write_output(dir / "a.txt", spec, mine + "v = 2\n");
  EXPECT_EQ(test::slurp(dir / "a.txt"), mine + "v = 2\n");
  // Its mode is kept (a private file stays private), and so is its inode's name: a link is followed, not replaced.
  ::chmod((dir / "a.txt").c_str(), 0600);
  files::write_output(dir / "a.txt", spec, mine);
  EXPECT_EQ(stat_of(dir / "a.txt").st_mode & 0777, 0600u);
  std::filesystem::create_symlink("a.txt", dir / "link.txt");
  files::write_output(dir / "link.txt", spec, mine + "via the link\n");
  EXPECT_TRUE(std::filesystem::is_symlink(dir / "link.txt"));
  EXPECT_EQ(test::slurp(dir / "a.txt"), mine + "via the link\n");
  // Refused, and left as they were: a foreign file, a FIFO, a directory, a dangling link, a second hard link.
  test::write_text(dir / "notes.txt", "someone's notes");
  EXPECT_NE(error_of([&] { files::write_output(dir / "notes.txt", spec, mine); }).find("exists and is not a gpuvs test record"), std::string::npos);
  EXPECT_EQ(test::slurp(dir / "notes.txt"), "someone's notes");
  ASSERT_EQ(::mkfifo((dir / "fifo").c_str(), 0600), 0);
  EXPECT_NE(error_of([&] { files::write_output(dir / "fifo", spec, mine); }).find("is a FIFO; gpuvs writes only regular files"), std::string::npos);
  EXPECT_TRUE(S_ISFIFO(stat_of(dir / "fifo").st_mode));
  std::filesystem::create_directory(dir / "folder");
  EXPECT_NE(error_of([&] { files::write_output(dir / "folder", spec, mine); }).find("is a directory"), std::string::npos);
  std::filesystem::create_symlink("nowhere", dir / "dangling");
  EXPECT_NE(error_of([&] { files::write_output(dir / "dangling", spec, mine); }).find("a symbolic link to nothing"), std::string::npos);
  EXPECT_TRUE(std::filesystem::is_symlink(dir / "dangling"));
  files::write_output(dir / "b.txt", spec, mine);
  std::filesystem::create_hard_link(dir / "b.txt", dir / "b2.txt");
  EXPECT_NE(error_of([&] { files::write_output(dir / "b.txt", spec, mine + "x"); }).find("has 2 hard links"), std::string::npos);
  EXPECT_EQ(test::slurp(dir / "b2.txt"), mine);
  // One of this run's inputs, even before it exists, and another output of this run: refused.
  files::note_input(dir / "history.db");
  EXPECT_NE(error_of([&] { files::write_output(dir / "history.db", spec, mine); }).find("is one of this run's inputs"), std::string::npos);
  EXPECT_FALSE(std::filesystem::exists(dir / "history.db"));
  test::write_text(dir / "in.csv", "1,2\n");
  (void)files::read_all(dir / "in.csv", "--data");
  std::filesystem::create_symlink("in.csv", dir / "in-link.csv");
  EXPECT_NE(error_of([&] { files::write_output(dir / "in-link.csv", spec, mine); }).find("is one of this run's inputs"), std::string::npos);
  EXPECT_EQ(test::slurp(dir / "in.csv"), "1,2\n");
  const files::OutputSpec other{"--other", "test record", "# made by the test writer", false};
  EXPECT_NE(error_of([&] { files::write_output(dir / "a.txt", other, mine); }).find("is also this run's --out output"), std::string::npos);
  // --force replaces a foreign file, but never a special one.
  const files::OutputSpec forced{"--forced", "test record", "# made by the test writer", true};
  files::write_output(dir / "notes.txt", forced, mine);
  EXPECT_EQ(test::slurp(dir / "notes.txt"), mine);
  EXPECT_NE(error_of([&] { files::write_output(dir / "fifo", forced, mine); }).find("is a FIFO"), std::string::npos);
  files::forget_run_files();
}

// Issue 31: a run killed between writing its temporary file and the rename leaves the file; the next write for the
// same path removes it (a live process's is left alone).
TEST(Files, StaleTemporaryFilesOfDeadRunsAreRemovedByTheNextWrite) {
  test::TempDir dir;
  char host[256] = "localhost";
  ::gethostname(host, sizeof host - 1);
  std::string h;
  for (const char* c = host; *c; ++c) h.push_back(std::isalnum(static_cast<unsigned char>(*c)) || *c == '-' ? *c : '_');
  // A PID that is surely no process: past the kernel's pid_max.
  const auto dead = dir / fmt::format(".ck.gpuvs.gpuvs-tmp.{}.{}.AbC123", h, 999999999);
  const auto alive = dir / fmt::format(".ck.gpuvs.gpuvs-tmp.{}.{}.XyZ789", h, ::getppid());
  const auto other = dir / ".ck.gpuvs.gpuvs-tmp.another-host.1.QwE456";
  for (const auto& p : {dead, alive, other}) test::write_text(p, std::string(1000, 'x'));
  files::write_atomic(dir / "ck.gpuvs", "new");
  EXPECT_FALSE(std::filesystem::exists(dead));
  EXPECT_TRUE(std::filesystem::exists(alive));
  EXPECT_TRUE(std::filesystem::exists(other));
  EXPECT_EQ(test::slurp(dir / "ck.gpuvs"), "new");
}

// Issue 31: deep dotted keys and table headers stop before toml++ builds tables it frees recursively (50,000 parts
// overflowed the stack in every TOML reader); what real files hold passes.
TEST(TomlDepth, DeepKeysAndTablesAreRefusedBeforeTheParserAndRealFilesPass) {
  const auto deep = [](const std::string& text) { return error_of([&] { check_toml_depth(text, "f.toml"); }); };
  std::string key = "a";
  for (int i = 0; i < 50000; ++i) key += ".a";
  EXPECT_NE(deep(key + " = 1\n").find("f.toml:1: TOML keys and tables nested more than 64 deep"), std::string::npos);
  EXPECT_NE(deep("x = 1\n[" + key + "]\n").find("f.toml:2: TOML keys"), std::string::npos);
  EXPECT_NE(deep("[[" + key + "]]\n").find("nested more than 64"), std::string::npos);
  EXPECT_NE(deep("x = {" + key + " = 1}\n").find("nested more than 64"), std::string::npos);
  EXPECT_NE(deep("[a.b.c]\nx = " + std::string(70, '[') + std::string(70, ']') + "\n").find("f.toml:2: TOML keys"), std::string::npos);
  // Header parts and key parts add up.
  std::string half = "a";
  for (int i = 0; i < 39; ++i) half += ".a";
  EXPECT_NE(deep("[" + half + "]\n" + half + " = 1\n").find("f.toml:2:"), std::string::npos);
  EXPECT_EQ(deep("[" + half + "]\n" + "b.c = 1\n"), "");
  // Dots inside strings, numbers, dates and comments are not keys.
  EXPECT_EQ(deep("v = \"" + key + "\"\nw = '" + key + "'\nx = 1.5\nd = 1979-05-27 07:32:00.999\n# " + key + "\n"
                 "m = \"\"\"\n" + key + "\n\"\"\"\nl =  + key + \narr = [1.5, 2.5, \n 3.5, # c\n]\n"
                 "\"quoted.key\" = 1\nt = {a.b = 1, c = [1, {d = 2}]}\n"),
            "");
  // Every TOML file the project ships passes (the fuzz corpus's seeds, but the regression seeds made to fail here).
  for (const auto& dir : {std::filesystem::path(GPUVS_SOURCE_DIR) / "data", std::filesystem::path(GPUVS_SOURCE_DIR) / "fuzz" / "corpus"})
    for (const auto& e : std::filesystem::recursive_directory_iterator(dir))
      if (e.path().extension() == ".toml" && e.path().filename().string().rfind("regression-", 0) != 0) {
        EXPECT_EQ(deep(test::slurp(e.path())), "") << e.path();
      }
}

// Issue 31: a key given twice in one JSON object is refused (nlohmann kept the first, Python's json the last).
TEST(JsonGuard, RepeatedKeysAndDeepNestingAreRefusedAsTheTextIsParsed) {
  const auto parse = [](const std::string& text) {
    return error_of([&] {
      const nlohmann::json j = nlohmann::json::parse(text, json_input_guard("m.json"));
      (void)j;
    });
  };
  EXPECT_NE(parse(R"({"units": 128, "units": 8})").find("m.json: key 'units' appears twice in one object"), std::string::npos);
  EXPECT_NE(parse(R"({"a": [{"b": 1, "c": {"d": 1, "d": 2}}]})").find("key 'd' appears twice"), std::string::npos);
  EXPECT_EQ(parse(R"({"a": {"k": 1}, "b": {"k": 2}, "c": [{"k": 1}, {"k": 2}], "k": 3})"), "");
  EXPECT_NE(parse(std::string(300, '[') + std::string(300, ']')).find("nested more than 256 deep"), std::string::npos);
}

TEST(Errors, ExitCodes) {
  EXPECT_EQ(exit_code_for(InputError("x")), ExitCode::bad_input);
  EXPECT_EQ(exit_code_for(RuntimeFailure("x")), ExitCode::runtime_failure);
  EXPECT_EQ(exit_code_for(std::runtime_error("x")), ExitCode::runtime_failure);
}

// One line by construction: whatever a call site quotes from a file, the message has no line break in it.
TEST(Errors, InputErrorsAreOneLineWhateverTheyQuote) {
  EXPECT_STREQ(InputError(std::string("task '\nfer\r' \x7f\t")).what(), "task '\\x0afer\\x0d' \\x7f\\x09");
  EXPECT_STREQ(InputError("plain text, 90 \xc2\xb5s").what(), "plain text, 90 \xc2\xb5s");  // UTF-8 stays as it is
  EXPECT_STREQ(JobError("a\nb").what(), "a\\x0ab");
}

TEST(Units, MoneyAndPlainNumbersNeverUseExponents) {
  EXPECT_EQ(units::format_usd(1234.4), "$1234");
  EXPECT_EQ(units::format_usd(3380761.2), "$3,380,761");  // issue 33: grouped from ten thousand
  EXPECT_EQ(units::format_usd(-12345), "-$12,345");
  EXPECT_EQ(units::format_usd(100000), "$100,000");
  EXPECT_EQ(units::format_usd(12.345), "$12.35");  // two decimals from $1
  EXPECT_EQ(units::format_usd(0.0683), "$0.0683");
  EXPECT_EQ(units::format_usd(6.83e-05), "$0.0000683");
  EXPECT_EQ(units::format_usd(0), "$0");
  EXPECT_EQ(units::format_plain(507559.8), "508 k");
  EXPECT_EQ(units::format_plain(1.972386587771203e-05, 4), "0.00001972");
  EXPECT_EQ(units::format_plain(730, 4), "730");
  EXPECT_EQ(units::format_plain(2.5e18), "2.5 E");
  EXPECT_EQ(units::format_si(1.226e15), "1.23 P");  // a 70 B model's forward FLOPs, not "1226000.00 G"
  EXPECT_EQ(units::format_si(3.5e12), "3.50 T");
  EXPECT_EQ(units::format_si(507559.8), "507.6 k");
  // Any magnitude a report or advice can show: never "e+" or "e-".
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> exponent(-15, 20), mantissa(1, 10);
  for (int i = 0; i < 5000; ++i) {
    const double v = mantissa(rng) * std::pow(10.0, std::floor(exponent(rng))) * (i % 2 ? 1 : -1);
    for (const std::string& s : {units::format_usd(v), units::format_plain(v), units::format_plain(v, 4)})
      EXPECT_FALSE(std::regex_search(s, std::regex("[0-9][eE][-+]?[0-9]"))) << v << " -> " << s;
  }
  // Issue 31: an absurd figure is short, not a 300-digit decimal.
  for (const std::string& s : {units::format_usd(1e300), units::format_plain(1e300), units::format_si(-1e300), units::format_bytes_binary(1e300)})
    EXPECT_LT(s.size(), 12u) << s;
}
