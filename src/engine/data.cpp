// SPDX-License-Identifier: Apache-2.0
#include "engine/data.hpp"

#include <fmt/format.h>
#include <zlib.h>

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <functional>

#include "core/checked.hpp"
#include "core/crc32c.hpp"
#include "core/error.hpp"
#include "core/files.hpp"
#include "core/rng.hpp"
#include "core/strings.hpp"
#include "core/sysmem.hpp"

namespace gpuvs::engine {

namespace fs = std::filesystem;

namespace {

std::uint64_t budget_of(std::uint64_t budget) {
  return budget != 0 ? budget : sysmem::available_bytes().value_or(std::uint64_t{16} << 30);
}

std::string gib(double bytes) { return fmt::format("{:.3f} GiB", bytes / 1073741824.0); }

/// A data file's bytes in order, inflated as they are read when its name ends in .gz: nothing is held but what the
/// loader keeps, so a small file that inflates without bound costs only the time to reach the first check.
class ByteStream {
 public:
  ByteStream(const fs::path& path, const std::string& what) : file_(path, what), path_(path) {
    if (!strings::ends_with(path.string(), ".gz")) return;
    gz_ = gzdopen(file_.fd(), "rb");
    if (gz_ == nullptr) throw InputError(fmt::format("{} {}: cannot open", what, path.string()));
    file_.release();  // zlib owns the descriptor now
    gzbuffer(gz_, 1u << 17);
  }
  ~ByteStream() {
    if (gz_ != nullptr) gzclose(gz_);
  }
  ByteStream(const ByteStream&) = delete;
  ByteStream& operator=(const ByteStream&) = delete;

  bool compressed() const { return gz_ != nullptr; }
  /// The file's size on disk (compressed, for a .gz).
  std::uint64_t file_size() const { return file_.size(); }
  /// Bytes handed out so far.
  std::uint64_t consumed() const { return consumed_; }
  /// A good read size: 1 MiB, or the whole of a smaller uncompressed file.
  std::size_t chunk_size() const {
    const std::uint64_t whole = compressed() ? std::uint64_t{1} << 20 : std::max<std::uint64_t>(file_size() + 1, 4096);
    return static_cast<std::size_t>(std::min<std::uint64_t>(whole, std::uint64_t{1} << 20));
  }

  /// Up to `n` bytes; fewer only at the end of the data.
  std::size_t read(char* out, std::size_t n) {
    std::size_t got = 0;
    while (got < n) {
      const auto chunk = static_cast<unsigned>(std::min<std::size_t>(n - got, std::size_t{1} << 30));
      std::int64_t r = 0;
      if (gz_ != nullptr) {
        r = gzread(gz_, out + got, chunk);
        if (r <= 0) {
          int err = Z_OK;
          const char* msg = gzerror(gz_, &err);
          if (r < 0 || (err != Z_OK && err != Z_STREAM_END))
            throw InputError(fmt::format("{}: corrupt gzip data ({})", path_.string(), msg ? msg : "unknown error"));
        }
      } else {
        r = ::read(file_.fd(), out + got, chunk);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) throw InputError(fmt::format("{}: cannot read: {}", path_.string(), std::strerror(errno)));
      }
      if (r == 0) break;
      got += static_cast<std::size_t>(r);
    }
    consumed_ += got;
    return got;
  }

 private:
  files::InputFile file_;
  fs::path path_;
  gzFile gz_ = nullptr;
  std::uint64_t consumed_ = 0;
};

}  // namespace

void check_synthetic_fits(std::int64_t rows, std::int64_t features, std::int64_t classes) {
  if (rows < 1 || features < 1 || classes < 1)
    throw InputError(fmt::format("synthetic data of {} rows, {} features, {} classes: each must be at least 1", rows, features, classes));
  // Refused with the figures before anything is allocated, not a bad_alloc deep inside.
  const double need = (static_cast<double>(rows) * static_cast<double>(features) + static_cast<double>(rows)) * 4.0;
  if (const auto have = sysmem::available_bytes(); have && need > static_cast<double>(*have))
    throw InputError(fmt::format("--rows {}: the synthetic data ({} rows x {} features) needs {}, more than the {} of memory available",
                                 rows, rows, features, gib(need), gib(static_cast<double>(*have))));
}

Dataset make_synthetic(std::int64_t rows, std::int64_t features, std::int64_t classes, std::uint64_t seed) {
  Dataset d;
  d.rows = rows;
  d.features = features;
  d.source = fmt::format("synthetic(rows={}, features={}, classes={}, seed={})", rows, features, classes, seed);
  check_synthetic_fits(rows, features, classes);
  const std::int64_t clusters = 2 * classes;
  // Cluster centres: spread 0.22 per feature (centres ~0.31*sqrt(features) apart against unit noise): the
  // seed MLP reaches ~97% validation accuracy in its first epoch and keeps improving, a linear model less.
  // Centres are drawn from a counter-based stream where they are used (no table: a model with billions of
  // classes must not allocate one before the trainer can refuse it).
  const double spread = 0.22;
  const CounterRng c_rng(seed, 0x63656e747265ULL);
  const CounterRng pick(seed, 0x7069636bULL), noise(seed, 0x6e6f697365ULL);
  d.x.resize(static_cast<std::size_t>(rows * features));
  d.y.resize(static_cast<std::size_t>(rows));
  for (std::int64_t r = 0; r < rows; ++r) {
    const auto c = static_cast<std::int64_t>(pick.uniform(static_cast<std::uint64_t>(r)) * static_cast<double>(clusters));
    d.y[static_cast<std::size_t>(r)] = static_cast<std::int32_t>(c % classes);
    float* x = d.x.data() + r * features;
    for (std::int64_t f = 0; f < features; ++f)
      x[f] = static_cast<float>(spread * c_rng.normal(static_cast<std::uint64_t>(c * features + f)) +
                                noise.normal(static_cast<std::uint64_t>(r * features + f)));
  }
  return d;
}

namespace {

/// Refuses, with the figures, data that would not fit in `budget` bytes: before the arrays are allocated.
void require_fits(double need, std::uint64_t budget, const fs::path& path, const std::string& what_needs) {
  if (need <= static_cast<double>(budget)) return;
  throw InputError(fmt::format("{}: {} need {}, more than the {} of memory available", path.string(), what_needs, gib(need),
                               gib(static_cast<double>(budget))));
}

// ---- CSV: numbers separated by commas, label last, an optional header row of names. Parsed as it streams in, so
// the text is never held whole: memory is the rows kept (4 bytes a value) and one line.
class CsvParser {
 public:
  CsvParser(const fs::path& path, std::uint64_t budget) : path_(path), budget_(budget) { d_.source = path.string(); }

  void line(std::string_view line) {
    ++line_no_;
    if (line_no_ == 1 && line.substr(0, 3) == "\xEF\xBB\xBF") line.remove_prefix(3);  // a UTF-8 byte-order mark
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.find_first_not_of(" \t") == std::string_view::npos) return;
    row_.clear();
    const bool first = d_.rows == 0 && !header_seen_;
    std::size_t names = 0, first_name_column = 0, p = 0;
    std::string_view first_name;
    while (p <= line.size()) {
      std::size_t q = line.find(',', p);
      if (q == std::string_view::npos) q = line.size();
      std::string_view cell = line.substr(p, q - p);
      while (!cell.empty() && (cell.front() == ' ' || cell.front() == '\t')) cell.remove_prefix(1);
      while (!cell.empty() && (cell.back() == ' ' || cell.back() == '\t')) cell.remove_suffix(1);
      double v = 0;
      const auto res = std::from_chars(cell.data(), cell.data() + cell.size(), v);
      if (res.ec != std::errc() || res.ptr != cell.data() + cell.size() || !std::isfinite(v)) {
        if (!first) bad_cell(row_.size() + 1, cell, "");
        if (names++ == 0) {
          first_name = cell;
          first_name_column = row_.size() + 1;
        }
      }
      row_.push_back(v);
      p = q + 1;
    }
    if (names > 0) {
      // The first row is a header only when every cell is a name: a row of numbers with a typo is data, and said so.
      if (names < row_.size())
        bad_cell(first_name_column, first_name, " (the first row mixes names and numbers: neither a header nor data)");
      header_seen_ = true;
      return;
    }
    if (row_.size() < 2)
      throw InputError(fmt::format("{}:{}: a row needs features and a label (got {} column)", path_.string(), line_no_, row_.size()));
    const auto features = static_cast<std::int64_t>(row_.size() - 1);
    if (d_.rows == 0) d_.features = features;
    if (features != d_.features)
      throw InputError(fmt::format("{}:{}: {} columns, but earlier rows have {}", path_.string(), line_no_, row_.size(), d_.features + 1));
    const double label = row_.back();
    if (label != std::floor(label) || label < 0 || label > 2147483647.0)
      throw InputError(fmt::format("{}:{}: label {} is not a non-negative integer", path_.string(), line_no_, label));
    if (d_.x.size() + static_cast<std::size_t>(features) > d_.x.capacity()) grow(static_cast<std::size_t>(features));
    for (std::int64_t f = 0; f < features; ++f) d_.x.push_back(static_cast<float>(row_[static_cast<std::size_t>(f)]));
    d_.y.push_back(static_cast<std::int32_t>(label));
    ++d_.rows;
  }

  /// Bytes the parse holds besides one line.
  std::uint64_t held() const { return d_.x.capacity() * sizeof(float) + d_.y.capacity() * sizeof(std::int32_t); }
  std::uint64_t budget() const { return budget_; }

  Dataset finish() {
    if (d_.rows == 0) throw InputError(fmt::format("{}: no data rows", path_.string()));
    d_.x.shrink_to_fit();
    d_.y.shrink_to_fit();
    d_.labels_source = d_.source;
    return std::move(d_);
  }

 private:
  fs::path path_;
  std::uint64_t budget_;
  Dataset d_;
  int line_no_ = 0;
  bool header_seen_ = false;
  std::vector<double> row_;

  [[noreturn]] void bad_cell(std::size_t col, std::string_view cell, std::string_view why) const {
    throw InputError(fmt::format("{}:{}: column {}: '{}' is not a finite number{}", path_.string(), line_no_, col, strings::printable(cell), why));
  }
  /// Grows the arrays by half again, refusing first when that would pass the budget.
  void grow(std::size_t row_values) {
    const std::size_t x_cap = std::max(d_.x.capacity() + d_.x.capacity() / 2, d_.x.size() + row_values * 64);
    const std::size_t y_cap = std::max(d_.y.capacity() + d_.y.capacity() / 2, d_.y.size() + 64);
    const double need = static_cast<double>(x_cap) * sizeof(float) + static_cast<double>(y_cap) * sizeof(std::int32_t) +
                        static_cast<double>(d_.x.size()) * sizeof(float);  // the old array while the new one fills
    require_fits(need, budget_, path_, fmt::format("{} rows of {} values read so far, and growing,", d_.rows, d_.features + 1));
    d_.x.reserve(x_cap);
    d_.y.reserve(y_cap);
  }
};

Dataset load_csv(const fs::path& path, std::uint64_t budget) {
  ByteStream in(path, "--data");
  CsvParser parser(path, budget);
  std::string carry;  // the line being read, when it spans chunks
  std::vector<char> buf(in.chunk_size());
  for (;;) {
    const std::size_t n = in.read(buf.data(), buf.size());
    if (n == 0) break;
    std::string_view chunk(buf.data(), n);
    for (;;) {
      const auto nl = chunk.find('\n');
      if (nl == std::string_view::npos) {
        carry.append(chunk);
        if (parser.held() + carry.size() > parser.budget())
          throw InputError(fmt::format("{}: a line of more than {} with the rows before it needs more than the {} of memory available",
                                       path.string(), gib(static_cast<double>(carry.size())), gib(static_cast<double>(parser.budget()))));
        break;
      }
      if (carry.empty()) {
        parser.line(chunk.substr(0, nl));
      } else {
        carry.append(chunk.substr(0, nl));
        parser.line(carry);
        carry.clear();
      }
      chunk.remove_prefix(nl + 1);
    }
  }
  if (!carry.empty()) parser.line(carry);
  return parser.finish();
}

// ---- NPY (format versions 1-3; little-endian f4/f8/u1/i1/i2/u2/i4/u4/i8, C order) and IDX (MNIST: magic 0x0000TTDD,
// dims as big-endian u32, big-endian data). Each is read as a header, then its elements streamed straight into the
// features (floats) or the labels (checked whole numbers): no copy of the file, no array of doubles.
struct ArrayHeader {
  std::vector<std::int64_t> shape;
  std::int64_t count = 1;
  char kind = 'f';         // f, i, u
  int width = 4;           // bytes per element
  bool big_endian = false;
  bool is_uint8 = false;
};

/// Where an array's elements go: `floats` (features) or `labels` (each a whole number in [0, 2^31)).
struct ArraySink {
  std::vector<float>* floats = nullptr;
  std::vector<std::int32_t>* labels = nullptr;
};

std::string read_exact(ByteStream& in, std::size_t n, const std::function<InputError(const std::string&)>& bad) {
  std::string s(n, '\0');
  if (in.read(s.data(), n) != n) throw bad("truncated header");
  return s;
}

ArrayHeader read_npy_header(ByteStream& in, const fs::path& path) {
  const auto bad = [&](const std::string& why) { return InputError(fmt::format("{}: not a valid .npy file: {}", path.string(), why)); };
  std::string pre(10, '\0');
  const std::size_t got = in.read(pre.data(), 10);
  if (got < 10 || std::memcmp(pre.data(), "\x93NUMPY", 6) != 0) throw bad("missing magic \\x93NUMPY");
  const auto major = static_cast<unsigned char>(pre[6]);
  std::size_t header_len = 0;
  if (major == 1) {
    header_len = static_cast<unsigned char>(pre[8]) | static_cast<std::size_t>(static_cast<unsigned char>(pre[9])) << 8;
  } else if (major == 2 || major == 3) {
    const std::string more = read_exact(in, 2, bad);
    const std::string len = pre.substr(8, 2) + more;
    for (int i = 0; i < 4; ++i) header_len |= static_cast<std::size_t>(static_cast<unsigned char>(len[static_cast<std::size_t>(i)])) << (8 * i);
  } else {
    throw bad(fmt::format("unsupported version {}", major));
  }
  // NumPy writes a few hundred bytes; a header that claims more is not one to allocate for.
  if (header_len > (std::size_t{1} << 20)) throw bad(fmt::format("a header of {} bytes (more than 1 MiB)", header_len));
  const std::string header = read_exact(in, header_len, bad);
  auto field = [&](const std::string& key) -> std::string {
    const auto k = header.find("'" + key + "'");
    if (k == std::string::npos) throw bad(fmt::format("header lacks '{}'", key));
    const auto colon = header.find(':', k);
    if (colon == std::string::npos) throw bad(fmt::format("header field '{}' malformed", key));
    return header.substr(colon + 1);
  };
  std::string descr = field("descr");
  const auto q1 = descr.find('\'');
  const auto q2 = descr.find('\'', q1 + 1);
  if (q1 == std::string::npos || q2 == std::string::npos) throw bad("descr malformed");
  descr = descr.substr(q1 + 1, q2 - q1 - 1);
  const std::string fortran = field("fortran_order");
  if (fortran.find("True") < fortran.find_first_of(",}")) throw bad("Fortran order is not supported");
  std::string shape_text = field("shape");
  const auto p1 = shape_text.find('('), p2 = shape_text.find(')');
  if (p1 == std::string::npos || p2 == std::string::npos) throw bad("shape malformed");
  shape_text = shape_text.substr(p1 + 1, p2 - p1 - 1);
  ArrayHeader a;
  for (std::size_t p = 0; p < shape_text.size();) {
    const auto q = shape_text.find(',', p);
    std::string cell = shape_text.substr(p, q == std::string::npos ? std::string::npos : q - p);
    cell.erase(0, cell.find_first_not_of(' '));
    if (!cell.empty()) {
      std::int64_t dim = 0;
      const auto r = std::from_chars(cell.data(), cell.data() + cell.size(), dim);
      if (r.ec != std::errc() || dim < 0) throw bad("shape malformed");
      a.shape.push_back(dim);
      a.count = checked::mul(a.count, dim, fmt::format("{}: .npy shape", path.string()));
    }
    if (q == std::string::npos) break;
    p = q + 1;
  }
  if (descr.size() < 3 || (descr[0] != '<' && descr[0] != '|'))
    throw bad(fmt::format("dtype '{}' is not little-endian", strings::printable(descr)));
  a.kind = descr[1];
  a.width = descr[2] - '0';
  const bool known = descr.size() == 3 && ((a.kind == 'f' && (a.width == 4 || a.width == 8)) ||
                                           ((a.kind == 'i' || a.kind == 'u') && (a.width == 1 || a.width == 2 || a.width == 4)) ||
                                           (a.kind == 'i' && a.width == 8));
  if (!known) throw bad(fmt::format("dtype '{}' is not supported", strings::printable(descr)));
  a.is_uint8 = a.kind == 'u' && a.width == 1;
  return a;
}

ArrayHeader read_idx_header(ByteStream& in, const fs::path& path) {
  const auto bad = [&](const std::string& why) { return InputError(fmt::format("{}: not a valid IDX file: {}", path.string(), why)); };
  auto be32 = [&]() {
    const std::string b = read_exact(in, 4, bad);
    const auto* u = reinterpret_cast<const unsigned char*>(b.data());
    return std::uint32_t{u[0]} << 24 | std::uint32_t{u[1]} << 16 | std::uint32_t{u[2]} << 8 | u[3];
  };
  const std::uint32_t magic = be32();
  if ((magic >> 16) != 0) throw bad(fmt::format("bad magic 0x{:08x}", magic));
  const unsigned type = (magic >> 8) & 0xFF, ndim = magic & 0xFF;
  if (ndim == 0 || ndim > 4) throw bad(fmt::format("{} dimensions", ndim));
  ArrayHeader a;
  a.big_endian = true;
  switch (type) {
    case 0x08: a.kind = 'u'; a.width = 1; break;
    case 0x09: a.kind = 'i'; a.width = 1; break;
    case 0x0B: a.kind = 'i'; a.width = 2; break;
    case 0x0C: a.kind = 'i'; a.width = 4; break;
    case 0x0D: a.kind = 'f'; a.width = 4; break;
    case 0x0E: a.kind = 'f'; a.width = 8; break;
    default: throw bad(fmt::format("unknown element type 0x{:02x}", type));
  }
  for (unsigned i = 0; i < ndim; ++i) {
    a.shape.push_back(be32());
    a.count = checked::mul(a.count, a.shape.back(), fmt::format("{}: IDX dimensions", path.string()));
  }
  a.is_uint8 = type == 0x08;
  return a;
}

/// Element `e` (width bytes, in the file's byte order) as a double.
double element(const ArrayHeader& a, const unsigned char* e) {
  std::uint64_t raw = 0;
  if (a.big_endian) {
    for (int k = 0; k < a.width; ++k) raw = raw << 8 | e[k];
  } else {
    for (int k = a.width - 1; k >= 0; --k) raw = raw << 8 | e[k];
  }
  switch (a.kind) {
    case 'u': return static_cast<double>(raw);
    case 'i': {
      const int shift = 64 - 8 * a.width;  // sign-extend from the element's width
      return static_cast<double>(static_cast<std::int64_t>(raw << shift) >> shift);
    }
    default: break;
  }
  if (a.width == 4) {
    float f;
    const auto r32 = static_cast<std::uint32_t>(raw);
    std::memcpy(&f, &r32, 4);
    return f;
  }
  double v;
  std::memcpy(&v, &raw, 8);
  return v;
}

/// Reads `path` (NPY or IDX by its name) into `sink`, refusing before allocating what does not fit `budget`.
ArrayHeader load_array(const fs::path& path, const std::string& what, ArraySink sink, std::uint64_t budget, const std::string& format_name) {
  ByteStream in(path, what);
  std::string name = path.filename().string();
  if (strings::ends_with(name, ".gz")) name.resize(name.size() - 3);
  const bool npy = strings::ends_with(strings::lower(name), ".npy");
  const ArrayHeader a = npy ? read_npy_header(in, path) : read_idx_header(in, path);
  const auto bad = [&](const std::string& why) {
    return InputError(fmt::format("{}: not a valid {} file: {}", path.string(), npy ? ".npy" : "IDX", why));
  };
  const auto width = static_cast<std::uint64_t>(a.width);
  const auto count = static_cast<std::uint64_t>(a.count);
  // Compared by division: the claimed count can be anything, the file's length is what it holds.
  if (!in.compressed()) {
    const std::uint64_t left = in.file_size() > in.consumed() ? in.file_size() - in.consumed() : 0;
    if (count > left / width)
      throw bad(fmt::format("data truncated: {} elements of {} bytes expected, the file holds {}{}", count, width, left, npy ? " bytes" : ""));
  }
  require_fits(static_cast<double>(count) * 4.0, budget, path, fmt::format("{} {} values ({})", count, format_name, what));
  if (sink.floats) sink.floats->resize(static_cast<std::size_t>(count));
  if (sink.labels) sink.labels->resize(static_cast<std::size_t>(count));
  std::vector<unsigned char> buf(std::max<std::size_t>(in.chunk_size(), 8));
  const std::uint64_t per_chunk = buf.size() / width;
  for (std::uint64_t i = 0; i < count;) {
    const std::uint64_t n = std::min(per_chunk, count - i);
    const std::size_t got = in.read(reinterpret_cast<char*>(buf.data()), static_cast<std::size_t>(n * width));
    if (got != n * width)
      throw bad(fmt::format("data truncated: {} elements of {} bytes expected, the file holds {}{}", count, width,
                            i * width + got, npy ? " bytes" : ""));
    for (std::uint64_t k = 0; k < n; ++k, ++i) {
      const double v = element(a, buf.data() + k * width);
      if (!std::isfinite(v)) throw bad(fmt::format("element {} is not finite", i));
      if (sink.floats) {
        (*sink.floats)[static_cast<std::size_t>(i)] = static_cast<float>(v);
      } else if (sink.labels) {
        if (v != std::floor(v) || v < 0 || v > 2147483647.0)
          throw InputError(fmt::format("{}: label {} at row {} is not a non-negative integer", path.string(), v, i));
        (*sink.labels)[static_cast<std::size_t>(i)] = static_cast<std::int32_t>(v);
      }
    }
  }
  return a;
}

}  // namespace

Dataset load_dataset(const DataFiles& files) {
  std::string name = files.data.filename().string();
  if (strings::ends_with(name, ".gz")) name.resize(name.size() - 3);
  const std::uint64_t budget = budget_of(files.memory_budget);
  Dataset d;
  bool eight_bit = false;
  if (strings::ends_with(strings::lower(name), ".csv")) {
    if (files.labels) throw InputError(fmt::format("--labels: a CSV data file carries its labels in the last column"));
    d = load_csv(files.data, budget);
  } else {
    if (!files.labels)
      throw InputError(fmt::format("--labels is required with {} (only CSV files carry their own labels)",
                                   files.data.string()));
    const ArrayHeader x = load_array(files.data, "--data", {&d.x, nullptr}, budget, "feature");
    if (x.shape.empty()) throw InputError(fmt::format("{}: features need at least one dimension", files.data.string()));
    d.rows = x.shape[0];
    d.features = 1;  // checked: a file of zero rows passes the length check whatever its other dims claim
    for (std::size_t i = 1; i < x.shape.size(); ++i) d.features = checked::mul(d.features, x.shape[i], files.data.string() + ": feature dimensions");
    const std::uint64_t used = d.x.size() * sizeof(float);
    const ArrayHeader y = load_array(*files.labels, "--labels", {nullptr, &d.y}, budget > used ? budget - used : 0, "label");
    if (y.shape.size() != 1 || y.shape[0] != d.rows)
      throw InputError(fmt::format("{}: {} labels for {} rows in {}", files.labels->string(),
                                   y.shape.empty() ? 0 : y.shape[0], d.rows, files.data.string()));
    d.source = files.data.string();
    d.labels_source = files.labels->string();
    eight_bit = x.is_uint8;
  }
  const double scale = files.scale.value_or(eight_bit ? 1.0 / 255.0 : 1.0);
  if (scale != 1.0)
    for (float& v : d.x) v = static_cast<float>(v * scale);
  if (d.rows == 0) throw InputError(fmt::format("{}: no rows", files.data.string()));
  return d;
}

std::uint32_t data_digest(const Dataset& d) {
  const std::uint32_t crc = crc32c(d.x.data(), d.x.size() * sizeof(float));
  return crc32c(d.y.data(), d.y.size() * sizeof(std::int32_t), crc);
}

void shuffle_rows(Dataset& d, std::uint64_t seed) {
  const CounterRng rng(seed, 0x726f7773ULL);
  const auto f = static_cast<std::size_t>(d.features);
  std::vector<float> row(f);
  for (std::int64_t i = d.rows - 1; i > 0; --i) {
    const auto j = static_cast<std::int64_t>(rng.uniform(static_cast<std::uint64_t>(i)) * static_cast<double>(i + 1));
    if (i == j) continue;
    float* a = d.x.data() + static_cast<std::size_t>(i) * f;
    float* b = d.x.data() + static_cast<std::size_t>(j) * f;
    std::copy(a, a + f, row.data());
    std::copy(b, b + f, a);
    std::copy(row.data(), row.data() + f, b);
    std::swap(d.y[static_cast<std::size_t>(i)], d.y[static_cast<std::size_t>(j)]);
  }
  d.source += fmt::format(" (rows shuffled, seed {})", seed);
}

void check_dataset(const Dataset& d, std::int64_t features, std::int64_t classes, const std::string& model_name) {
  if (d.features != features)
    throw InputError(fmt::format("{}: {} features per row, but model '{}' expects {} (its input_shape)", d.source,
                                 d.features, model_name, features));
  for (std::size_t i = 0; i < d.y.size(); ++i)
    if (d.y[i] < 0 || d.y[i] >= classes)
      throw InputError(fmt::format("{}: label {} at row {} is outside the model's {} classes (0..{})",
                                   d.labels_source.empty() ? d.source : d.labels_source,
                                   d.y[i], i, classes, classes - 1));
}

}  // namespace gpuvs::engine
