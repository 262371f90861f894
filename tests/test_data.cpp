// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>
#include <zlib.h>

#include <cstring>

#include "core/error.hpp"
#include "core/rng.hpp"
#include "engine/data.hpp"
#include "test_util.hpp"

using namespace gpuvs;
using namespace gpuvs::engine;

namespace {
std::string npy(const std::string& descr, const std::string& shape, const std::string& payload) {
  std::string header = "{'descr': '" + descr + "', 'fortran_order': False, 'shape': " + shape + ", }";
  while ((10 + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  std::string out = "\x93NUMPY";
  out += '\x01';
  out += '\x00';
  out += static_cast<char>(header.size() & 0xFF);
  out += static_cast<char>(header.size() >> 8);
  return out + header + payload;
}

std::string be32(std::uint32_t v) {
  std::string s(4, '\0');
  for (int i = 0; i < 4; ++i) s[static_cast<std::size_t>(i)] = static_cast<char>((v >> (24 - 8 * i)) & 0xFF);
  return s;
}

void write_gzip(const std::filesystem::path& p, const std::string& data) {
  gzFile f = gzopen(p.c_str(), "wb");
  gzwrite(f, data.data(), static_cast<unsigned>(data.size()));
  gzclose(f);
}

std::string error_of(const DataFiles& f) {
  return test::input_error_of([&] { load_dataset(f); });
}
}  // namespace

TEST(Synthetic, DeterministicBalancedAndSized) {
  const Dataset a = make_synthetic(5000, 20, 10, 4), b = make_synthetic(5000, 20, 10, 4);
  EXPECT_EQ(a.x, b.x);
  EXPECT_EQ(a.y, b.y);
  EXPECT_NE(a.x, make_synthetic(5000, 20, 10, 5).x);
  std::vector<int> counts(10, 0);
  for (auto y : a.y) counts[static_cast<std::size_t>(y)]++;
  for (int c : counts) EXPECT_NEAR(c, 500, 100);
}

TEST(Csv, DigitsFileLoadsWithHeaderlessRowsAndGzip) {
  DataFiles f;
  f.data = std::string(GPUVS_TEST_DATA) + "/digits.csv.gz";
  const Dataset d = load_dataset(f);
  EXPECT_EQ(d.rows, 1797);
  EXPECT_EQ(d.features, 64);
  EXPECT_EQ(d.y[0], 0);
  EXPECT_FLOAT_EQ(d.x[2], 5.0f);
  check_dataset(d, 64, 10, "digits-mlp");
  EXPECT_THROW(check_dataset(d, 780, 10, "seed-mlp"), InputError);
  EXPECT_THROW(check_dataset(d, 64, 5, "five-class"), InputError);
}

TEST(Csv, HeaderScaleAndErrorsWithLines) {
  test::TempDir dir;
  test::write_text(dir / "ok.csv", "a,b,label\n1,2,0\n3,4,1\n");
  DataFiles f;
  f.data = dir / "ok.csv";
  f.scale = 0.5;
  const Dataset d = load_dataset(f);
  EXPECT_EQ(d.rows, 2);
  EXPECT_FLOAT_EQ(d.x[3], 2.0f);
  test::write_text(dir / "bad.csv", "1,2,0\n3,x,1\n");
  f.data = dir / "bad.csv";
  EXPECT_NE(error_of(f).find("bad.csv:2: column 2: 'x' is not a finite number"), std::string::npos);
  test::write_text(dir / "ragged.csv", "1,2,0\n3,1\n");
  f.data = dir / "ragged.csv";
  EXPECT_NE(error_of(f).find("ragged.csv:2: 2 columns, but earlier rows have 3"), std::string::npos);
  test::write_text(dir / "frac.csv", "1,2,0.5\n");
  f.data = dir / "frac.csv";
  EXPECT_NE(error_of(f).find("label 0.5 is not a non-negative integer"), std::string::npos);
  test::write_text(dir / "empty.csv", "");
  f.data = dir / "empty.csv";
  EXPECT_NE(error_of(f).find("no data rows"), std::string::npos);
}

TEST(Npy, FloatFeaturesAndIntLabels) {
  test::TempDir dir;
  float xs[6] = {1, 2, 3, 4, 5, 6};
  std::int64_t ys[2] = {1, 0};
  test::write_text(dir / "x.npy", npy("<f4", "(2, 3)", std::string(reinterpret_cast<char*>(xs), sizeof xs)));
  test::write_text(dir / "y.npy", npy("<i8", "(2,)", std::string(reinterpret_cast<char*>(ys), sizeof ys)));
  DataFiles f;
  f.data = dir / "x.npy";
  f.labels = dir / "y.npy";
  const Dataset d = load_dataset(f);
  EXPECT_EQ(d.rows, 2);
  EXPECT_EQ(d.features, 3);
  EXPECT_FLOAT_EQ(d.x[5], 6.0f);
  EXPECT_EQ(d.y[0], 1);
  f.labels.reset();
  EXPECT_NE(error_of(f).find("--labels is required"), std::string::npos);
  test::write_text(dir / "y3.npy", npy("<i8", "(3,)", std::string(24, '\0')));
  f.labels = dir / "y3.npy";
  EXPECT_NE(error_of(f).find("3 labels for 2 rows"), std::string::npos);
  test::write_text(dir / "big.npy", npy(">f4", "(2, 3)", std::string(24, '\0')));
  f.data = dir / "big.npy";
  EXPECT_NE(error_of(f).find("not little-endian"), std::string::npos);
}

TEST(Idx, MnistStyleImagesScaledBy255) {
  test::TempDir dir;
  std::string images = be32(0x00000803) + be32(2) + be32(2) + be32(2);
  images += std::string("\x00\xff\x80\x01\x02\x03\x04\x05", 8);
  const std::string labels = be32(0x00000801) + be32(2) + std::string("\x07\x02", 2);
  write_gzip(dir / "img-idx3-ubyte.gz", images);
  test::write_text(dir / "lbl-idx1-ubyte", labels);
  DataFiles f;
  f.data = dir / "img-idx3-ubyte.gz";
  f.labels = dir / "lbl-idx1-ubyte";
  const Dataset d = load_dataset(f);
  EXPECT_EQ(d.rows, 2);
  EXPECT_EQ(d.features, 4);
  EXPECT_FLOAT_EQ(d.x[1], 1.0f);  // 255 / 255
  EXPECT_EQ(d.y[0], 7);
  test::write_text(dir / "trunc", images.substr(0, images.size() - 3));
  f.data = dir / "trunc";
  EXPECT_NE(error_of(f).find("data truncated"), std::string::npos);
  test::write_text(dir / "corrupt.gz", "not gzip at all");
  f.data = dir / "corrupt.gz";
  EXPECT_FALSE(error_of(f).empty());
}

// Headers whose sizes multiply past 64 bits, or claim more than the file holds, or inflate without bound:
// InputErrors before anything is allocated (found by the sanitizer build: an IDX product that wrapped to a
// small count passed the "data truncated" check while the shape claimed billions).
TEST(Loaders, SizesReadFromHeadersAreCheckedBeforeAllocating) {
  test::TempDir dir;
  const std::string labels = be32(0x00000801) + be32(1) + std::string("\x00", 1);
  test::write_text(dir / "labels-idx1", labels);
  DataFiles f;
  f.labels = dir / "labels-idx1";
  // 2^16 x 2^16 x 2^16 x 2^16 = 2^64: wraps to 0 in unchecked arithmetic.
  test::write_text(dir / "wrap-idx4", be32(0x00000804) + be32(1u << 16) + be32(1u << 16) + be32(1u << 16) + be32(1u << 16));
  f.data = dir / "wrap-idx4";
  EXPECT_NE(error_of(f).find("IDX dimensions: 281474976710656 x 65536 overflows 64-bit sizes"), std::string::npos) << error_of(f);
  test::write_text(dir / "big-idx3", be32(0x00000803) + be32(1u << 20) + be32(1u << 20) + be32(16) + std::string(64, '\x01'));
  f.data = dir / "big-idx3";
  EXPECT_NE(error_of(f).find("data truncated: 17592186044416 elements of 1 bytes expected, the file holds 64"), std::string::npos) << error_of(f);
  test::write_text(dir / "wrap.npy", npy("<f4", "(4294967296, 4294967296)", std::string(16, '\0')));
  f.data = dir / "wrap.npy";
  EXPECT_NE(error_of(f).find("overflows 64-bit sizes"), std::string::npos) << error_of(f);
  test::write_text(dir / "odd.npy", npy("<f3", "(2,)", std::string(6, '\0')));
  f.data = dir / "odd.npy";
  EXPECT_NE(error_of(f).find("dtype '<f3' is not supported"), std::string::npos) << error_of(f);
  test::write_text(dir / "short.npy", npy("<f8", "(1000000000, 1000)", std::string(64, '\0')));
  f.data = dir / "short.npy";
  EXPECT_NE(error_of(f).find("data truncated: 1000000000000 elements of 8 bytes expected"), std::string::npos) << error_of(f);
  // Found by fuzzing (fuzz_idx, fuzz_npy): zero rows pass the length check whatever the other dims claim, so
  // the features' product must be checked too; a dtype holding a newline must not break the error's line.
  test::write_text(dir / "empty-idx3", be32(0x00000803) + be32(0) + be32(0x7fffffff) + be32(0x7fffffff) + be32(0x7fffffff));
  f.data = dir / "empty-idx3";
  const std::string zero_rows = error_of(f);
  EXPECT_FALSE(zero_rows.empty());
  EXPECT_EQ(zero_rows.find('\n'), std::string::npos) << zero_rows;
  test::write_text(dir / "wide-idx4", be32(0x00000804) + be32(0) + be32(0x7fffffff) + be32(0x7fffffff) + be32(0x7fffffff));
  f.data = dir / "wide-idx4";
  EXPECT_NE(error_of(f).find("feature dimensions"), std::string::npos) << error_of(f);
  test::write_text(dir / "newline.npy", npy("\nf4", "(2,)", std::string(8, '\0')));
  f.data = dir / "newline.npy";
  EXPECT_NE(error_of(f).find("is not little-endian"), std::string::npos) << error_of(f);
  EXPECT_EQ(error_of(f).find('\n'), std::string::npos) << error_of(f);
  // 8 MiB of zeros inflating past a 1 MiB budget: one endless line, then endless rows.
  f.labels.reset();
  f.memory_budget = 1u << 20;
  write_gzip(dir / "bomb.csv.gz", std::string(8u << 20, '0'));
  f.data = dir / "bomb.csv.gz";
  EXPECT_NE(error_of(f).find("a line of more than"), std::string::npos) << error_of(f);
  std::string rows;
  while (rows.size() < (8u << 20)) rows += "0,0,0,0,0,0,0,1\n";
  write_gzip(dir / "rows.csv.gz", rows);
  f.data = dir / "rows.csv.gz";
  EXPECT_NE(error_of(f).find("rows of 8 values read so far, and growing, need"), std::string::npos) << error_of(f);
}

// Fuzz-style: mutated NPY, IDX and CSV inputs either load or raise InputError, never crash.
TEST(Loaders, FuzzedFilesFailCleanly) {
  test::TempDir dir;
  float xs[12];
  for (int i = 0; i < 12; ++i) xs[i] = static_cast<float>(i);
  const std::string good_npy = npy("<f4", "(4, 3)", std::string(reinterpret_cast<char*>(xs), sizeof xs));
  const std::string good_idx = be32(0x00000803) + be32(4) + be32(1) + be32(3) + std::string(12, '\x05');
  const std::string good_csv = "1,2,3,0\n4,5,6,1\n7,8,9,2\n";
  const std::string labels = be32(0x00000801) + be32(4) + std::string("\x00\x01\x02\x03", 4);
  test::write_text(dir / "labels-idx1", labels);
  const CounterRng rng(3, 3);
  std::uint64_t k = 0;
  int loaded = 0, rejected = 0;
  for (int round = 0; round < 600; ++round) {
    const int which = round % 3;
    std::string t = which == 0 ? good_npy : which == 1 ? good_idx : good_csv;
    const int edits = 1 + static_cast<int>(rng.uniform(k++) * 3);
    for (int e = 0; e < edits; ++e) {
      const auto pos = static_cast<std::size_t>(rng.uniform(k++) * static_cast<double>(t.size()));
      const double r = rng.uniform(k++);
      if (r < 0.5) t[pos] = static_cast<char>(rng.block(k++)[0] & 0xFF);
      else if (r < 0.8) t.resize(pos);
      else t.insert(pos, 1, static_cast<char>(rng.block(k++)[0] & 0xFF));
    }
    const auto path = dir / (which == 0 ? "f.npy" : which == 1 ? "f-idx3" : "f.csv");
    test::write_text(path, t);
    DataFiles f;
    f.data = path;
    if (which != 2) f.labels = dir / "labels-idx1";
    try {
      const Dataset d = load_dataset(f);
      EXPECT_EQ(static_cast<std::int64_t>(d.x.size()), d.rows * d.features);
      ++loaded;
    } catch (const InputError& e) {
      EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos);
      ++rejected;
    }
  }
  EXPECT_GT(rejected, 0);
  EXPECT_GT(loaded, 0);
}

// ---- Issue 31

// A UTF-8 byte-order mark is not part of the first cell: a header after it is still a header, and data after it is
// still data (the first row used to be dropped as a "header"). A first row mixing names and numbers is an error
// naming the cell, not a row dropped without a word.
TEST(Csv, ByteOrderMarksAreStrippedAndNoRowIsDroppedUnsaid) {
  test::TempDir dir;
  DataFiles f;
  f.data = dir / "bom-header.csv";
  test::write_text(f.data, "\xEF\xBB\xBF" "a,b,label\n1,2,0\n3,4,1\n");
  EXPECT_EQ(load_dataset(f).rows, 2);
  f.data = dir / "bom-data.csv";
  test::write_text(f.data, "\xEF\xBB\xBF" "1,2,0\n3,4,1\n");
  const Dataset d = load_dataset(f);
  ASSERT_EQ(d.rows, 2);
  EXPECT_FLOAT_EQ(d.x[0], 1.0f);
  f.data = dir / "typo.csv";
  test::write_text(f.data, "1,2x,0\n3,4,1\n");
  EXPECT_NE(error_of(f).find("typo.csv:1: column 2: '2x' is not a finite number (the first row mixes names and numbers"), std::string::npos)
      << error_of(f);
}

// A label the model cannot take is reported against the labels file it came from, not the data file.
TEST(Loaders, LabelErrorsNameTheLabelsFile) {
  test::TempDir dir;
  float xs[4] = {1, 2, 3, 4};
  std::int64_t ys[2] = {1, 7};
  test::write_text(dir / "x.npy", npy("<f4", "(2, 2)", std::string(reinterpret_cast<char*>(xs), sizeof xs)));
  test::write_text(dir / "y.npy", npy("<i8", "(2,)", std::string(reinterpret_cast<char*>(ys), sizeof ys)));
  DataFiles f;
  f.data = dir / "x.npy";
  f.labels = dir / "y.npy";
  const Dataset d = load_dataset(f);
  try {
    check_dataset(d, 2, 5, "five-class");
    ADD_FAILURE();
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()).rfind((dir / "y.npy").string() + ": label 7 at row 1", 0), 0u) << e.what();
  }
  std::int64_t bad[2] = {1, -3};
  test::write_text(dir / "neg.npy", npy("<i8", "(2,)", std::string(reinterpret_cast<char*>(bad), sizeof bad)));
  f.labels = dir / "neg.npy";
  EXPECT_EQ(error_of(f).rfind((dir / "neg.npy").string() + ": label -3 at row 1", 0), 0u) << error_of(f);
}

// One-byte values are held as 4-byte floats and nothing more (a 389 KB .npy.gz of u1 took 5.3 GB as doubles and
// floats); what would not fit is refused with the figures before the array is allocated, for gzip too.
TEST(Loaders, ArraysPastTheMemoryBudgetAreRefusedBeforeAllocating) {
  test::TempDir dir;
  const std::string labels = be32(0x00000801) + be32(300000) + std::string(300000, '\x01');
  test::write_text(dir / "labels-idx1", labels);
  DataFiles f;
  f.labels = dir / "labels-idx1";
  f.data = dir / "x.npy.gz";
  write_gzip(f.data, npy("|u1", "(300000, 1)", std::string(300000, '\x07')));
  f.memory_budget = 1u << 20;
  EXPECT_NE(error_of(f).find("300000 feature values (--data) need 0.001 GiB, more than the 0.001 GiB of memory available"), std::string::npos)
      << error_of(f);
  f.memory_budget = 3u << 20;  // 1.2 MB of floats and 1.2 MB of labels: fits
  const Dataset d = load_dataset(f);
  EXPECT_EQ(d.rows, 300000);
  EXPECT_EQ(d.x.capacity(), 300000u);
  EXPECT_FLOAT_EQ(d.x[0], 7.0f / 255.0f);
}

// The digest MPI ranks compare: the same data gives the same digest, a changed value another.
TEST(Loaders, DataDigestFollowsTheContents) {
  Dataset a = make_synthetic(100, 8, 3, 1);
  const Dataset b = make_synthetic(100, 8, 3, 1);
  EXPECT_EQ(data_digest(a), data_digest(b));
  a.x[17] += 1.0f;
  EXPECT_NE(data_digest(a), data_digest(b));
}
