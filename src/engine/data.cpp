#include "engine/data.hpp"

#include <fmt/format.h>
#include <zlib.h>

#include <charconv>
#include <cmath>
#include <cstring>

#include "core/checked.hpp"
#include "core/error.hpp"
#include "core/files.hpp"
#include "core/rng.hpp"
#include "core/strings.hpp"
#include "core/sysmem.hpp"

namespace gpuvs::engine {

namespace fs = std::filesystem;

std::string read_maybe_gzip(const fs::path& path, const std::string& what, std::uint64_t cap) {
  if (!strings::ends_with(path.string(), ".gz")) return files::read_all(path, what);
  if (!fs::exists(path)) throw InputError(fmt::format("{} {}: no such file", what, path.string()));
  gzFile f = gzopen(path.c_str(), "rb");
  if (f == nullptr) throw InputError(fmt::format("{} {}: cannot open", what, path.string()));
  // A small file can inflate without bound (a gzip bomb): stop at half the memory still available.
  if (cap == 0) cap = sysmem::available_bytes().value_or(std::uint64_t{16} << 30) / 2;
  std::string out;
  char buf[1 << 16];
  int n = 0;
  while ((n = gzread(f, buf, sizeof buf)) > 0) {
    if (out.size() + static_cast<std::size_t>(n) > cap) {
      gzclose(f);
      throw InputError(fmt::format("{} {}: decompresses to more than {:.3f} GiB (the limit: half the memory available)", what,
                                   path.string(), static_cast<double>(cap) / (1u << 30)));
    }
    out.append(buf, static_cast<std::size_t>(n));
  }
  int err = 0;
  const char* msg = gzerror(f, &err);
  const std::string text = msg ? msg : "";
  gzclose(f);
  if (n < 0 || (err != Z_OK && err != Z_STREAM_END))
    throw InputError(fmt::format("{} {}: corrupt gzip data ({})", what, path.string(), text));
  return out;
}

Dataset make_synthetic(std::int64_t rows, std::int64_t features, std::int64_t classes, std::uint64_t seed) {
  Dataset d;
  d.rows = rows;
  d.features = features;
  d.source = fmt::format("synthetic(rows={}, features={}, classes={}, seed={})", rows, features, classes, seed);
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

// ---- CSV: numbers separated by commas, label last, optional header row (skipped when not numeric).
Dataset load_csv(const fs::path& path) {
  const std::string text = read_maybe_gzip(path, "data file");
  Dataset d;
  d.source = path.string();
  std::size_t pos = 0;
  int line_no = 0;
  std::vector<double> row;
  while (pos < text.size()) {
    std::size_t end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    std::string_view line(text.data() + pos, end - pos);
    pos = end + 1;
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.find_first_not_of(" \t") == std::string_view::npos) continue;
    row.clear();
    std::size_t p = 0;
    bool numeric = true;
    while (p <= line.size()) {
      std::size_t q = line.find(',', p);
      if (q == std::string_view::npos) q = line.size();
      std::string_view cell = line.substr(p, q - p);
      while (!cell.empty() && (cell.front() == ' ' || cell.front() == '\t')) cell.remove_prefix(1);
      while (!cell.empty() && (cell.back() == ' ' || cell.back() == '\t')) cell.remove_suffix(1);
      double v = 0;
      const auto res = std::from_chars(cell.data(), cell.data() + cell.size(), v);
      if (res.ec != std::errc() || res.ptr != cell.data() + cell.size() || !std::isfinite(v)) {
        if (line_no == 1 && d.rows == 0) {
          numeric = false;  // a header row
          break;
        }
        throw InputError(fmt::format("{}:{}: column {}: '{}' is not a finite number", path.string(), line_no,
                                     row.size() + 1, strings::printable(cell)));
      }
      row.push_back(v);
      p = q + 1;
    }
    if (!numeric) continue;
    if (row.size() < 2)
      throw InputError(fmt::format("{}:{}: a row needs features and a label (got {} column)", path.string(), line_no,
                                   row.size()));
    const auto features = static_cast<std::int64_t>(row.size() - 1);
    if (d.rows == 0) d.features = features;
    if (features != d.features)
      throw InputError(fmt::format("{}:{}: {} columns, but earlier rows have {}", path.string(), line_no,
                                   row.size(), d.features + 1));
    const double label = row.back();
    if (label != std::floor(label) || label < 0 || label > 2147483647.0)
      throw InputError(fmt::format("{}:{}: label {} is not a non-negative integer", path.string(), line_no, label));
    for (std::int64_t f = 0; f < features; ++f) d.x.push_back(static_cast<float>(row[static_cast<std::size_t>(f)]));
    d.y.push_back(static_cast<std::int32_t>(label));
    ++d.rows;
  }
  if (d.rows == 0) throw InputError(fmt::format("{}: no data rows", path.string()));
  return d;
}

// ---- NPY (format versions 1-3): little-endian f4/f8/u1/i1/i4/i8/u4/i2/u2, C order.
struct Array {
  std::vector<std::int64_t> shape;
  std::vector<double> values;
  bool is_uint8 = false;
  bool is_integer = false;
};

Array parse_npy(const std::string& bytes, const fs::path& path) {
  const auto bad = [&](const std::string& why) {
    return InputError(fmt::format("{}: not a valid .npy file: {}", path.string(), why));
  };
  if (bytes.size() < 10 || std::memcmp(bytes.data(), "\x93NUMPY", 6) != 0) throw bad("missing magic \\x93NUMPY");
  const auto major = static_cast<unsigned char>(bytes[6]);
  std::size_t header_len = 0, header_start = 0;
  if (major == 1) {
    header_len = static_cast<unsigned char>(bytes[8]) | static_cast<std::size_t>(static_cast<unsigned char>(bytes[9])) << 8;
    header_start = 10;
  } else if (major == 2 || major == 3) {
    if (bytes.size() < 12) throw bad("truncated header");
    for (int i = 0; i < 4; ++i) header_len |= static_cast<std::size_t>(static_cast<unsigned char>(bytes[8 + static_cast<std::size_t>(i)])) << (8 * i);
    header_start = 12;
  } else {
    throw bad(fmt::format("unsupported version {}", major));
  }
  if (header_start + header_len > bytes.size()) throw bad("truncated header");
  const std::string header = bytes.substr(header_start, header_len);
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
  Array a;
  std::int64_t count = 1;
  for (std::size_t p = 0; p < shape_text.size();) {
    const auto q = shape_text.find(',', p);
    std::string cell = shape_text.substr(p, q == std::string::npos ? std::string::npos : q - p);
    cell.erase(0, cell.find_first_not_of(' '));
    if (!cell.empty()) {
      std::int64_t dim = 0;
      const auto r = std::from_chars(cell.data(), cell.data() + cell.size(), dim);
      if (r.ec != std::errc() || dim < 0) throw bad("shape malformed");
      a.shape.push_back(dim);
      count = checked::mul(count, dim, fmt::format("{}: .npy shape", path.string()));
    }
    if (q == std::string::npos) break;
    p = q + 1;
  }
  if (descr.size() < 3 || (descr[0] != '<' && descr[0] != '|'))
    throw bad(fmt::format("dtype '{}' is not little-endian", strings::printable(descr)));
  const char kind = descr[1];
  const int width = descr[2] - '0';
  if (descr.size() != 3 || (width != 1 && width != 2 && width != 4 && width != 8)) throw bad(fmt::format("dtype '{}' is not supported", strings::printable(descr)));
  const std::size_t data_start = header_start + header_len;
  // Compared by division: the claimed count can be anything, the file's length is what it holds.
  if (static_cast<std::uint64_t>(count) > (bytes.size() - data_start) / static_cast<std::size_t>(width))
    throw bad(fmt::format("data truncated: {} elements of {} bytes expected, the file holds {} bytes", count, width, bytes.size() - data_start));
  const char* p = bytes.data() + data_start;
  a.values.resize(static_cast<std::size_t>(count));
  a.is_integer = kind == 'i' || kind == 'u';
  a.is_uint8 = kind == 'u' && width == 1;
  for (std::int64_t i = 0; i < count; ++i) {
    const char* e = p + i * width;
    double v = 0;
    if (kind == 'f' && width == 4) { float f; std::memcpy(&f, e, 4); v = f; }
    else if (kind == 'f' && width == 8) { std::memcpy(&v, e, 8); }
    else if (kind == 'u' && width == 1) { v = static_cast<unsigned char>(*e); }
    else if (kind == 'i' && width == 1) { v = static_cast<signed char>(*e); }
    else if (kind == 'i' && width == 2) { std::int16_t t; std::memcpy(&t, e, 2); v = t; }
    else if (kind == 'u' && width == 2) { std::uint16_t t; std::memcpy(&t, e, 2); v = t; }
    else if (kind == 'i' && width == 4) { std::int32_t t; std::memcpy(&t, e, 4); v = t; }
    else if (kind == 'u' && width == 4) { std::uint32_t t; std::memcpy(&t, e, 4); v = t; }
    else if (kind == 'i' && width == 8) { std::int64_t t; std::memcpy(&t, e, 8); v = static_cast<double>(t); }
    else throw bad(fmt::format("dtype '{}' is not supported", strings::printable(descr)));
    if (!std::isfinite(v)) throw bad(fmt::format("element {} is not finite", i));
    a.values[static_cast<std::size_t>(i)] = v;
  }
  return a;
}

// ---- IDX (the MNIST format): magic 0x0000TTDD, dims as big-endian u32, then data (big-endian).
Array parse_idx(const std::string& bytes, const fs::path& path) {
  const auto bad = [&](const std::string& why) {
    return InputError(fmt::format("{}: not a valid IDX file: {}", path.string(), why));
  };
  auto be32 = [&](std::size_t off) {
    if (off + 4 > bytes.size()) throw bad("truncated header");
    const auto* u = reinterpret_cast<const unsigned char*>(bytes.data() + off);
    return std::uint32_t{u[0]} << 24 | std::uint32_t{u[1]} << 16 | std::uint32_t{u[2]} << 8 | u[3];
  };
  const std::uint32_t magic = be32(0);
  if ((magic >> 16) != 0) throw bad(fmt::format("bad magic 0x{:08x}", magic));
  const unsigned type = (magic >> 8) & 0xFF, ndim = magic & 0xFF;
  if (ndim == 0 || ndim > 4) throw bad(fmt::format("{} dimensions", ndim));
  int width = 0;
  switch (type) {
    case 0x08: case 0x09: width = 1; break;
    case 0x0B: width = 2; break;
    case 0x0C: case 0x0D: width = 4; break;
    case 0x0E: width = 8; break;
    default: throw bad(fmt::format("unknown element type 0x{:02x}", type));
  }
  Array a;
  std::int64_t count = 1;
  for (unsigned i = 0; i < ndim; ++i) {
    a.shape.push_back(be32(4 + 4 * i));
    count = checked::mul(count, a.shape.back(), fmt::format("{}: IDX dimensions", path.string()));
  }
  const std::size_t start = 4 + 4 * ndim;
  // Compared by division: the claimed count can be anything, the file's length is what it holds.
  if (bytes.size() < start || static_cast<std::uint64_t>(count) > (bytes.size() - start) / static_cast<std::size_t>(width))
    throw bad(fmt::format("data truncated: {} elements of {} bytes expected, the file holds {}", count, width, bytes.size() < start ? 0 : bytes.size() - start));
  a.values.resize(static_cast<std::size_t>(count));
  a.is_uint8 = type == 0x08;
  a.is_integer = type != 0x0D && type != 0x0E;
  const auto* u = reinterpret_cast<const unsigned char*>(bytes.data() + start);
  for (std::int64_t i = 0; i < count; ++i) {
    const unsigned char* e = u + i * width;
    std::uint64_t raw = 0;
    for (int k = 0; k < width; ++k) raw = raw << 8 | e[k];
    double v = 0;
    switch (type) {
      case 0x08: v = static_cast<double>(raw); break;
      case 0x09: v = static_cast<signed char>(raw); break;
      case 0x0B: v = static_cast<std::int16_t>(raw); break;
      case 0x0C: v = static_cast<std::int32_t>(raw); break;
      case 0x0D: { float f; auto r32 = static_cast<std::uint32_t>(raw); std::memcpy(&f, &r32, 4); v = f; break; }
      case 0x0E: { std::memcpy(&v, &raw, 8); break; }
      default: break;
    }
    if (!std::isfinite(v)) throw bad(fmt::format("element {} is not finite", i));
    a.values[static_cast<std::size_t>(i)] = v;
  }
  return a;
}

Array load_array(const fs::path& path, const std::string& what) {
  const std::string bytes = read_maybe_gzip(path, what);
  std::string name = path.filename().string();
  if (strings::ends_with(name, ".gz")) name.resize(name.size() - 3);
  if (strings::ends_with(strings::lower(name), ".npy")) return parse_npy(bytes, path);
  return parse_idx(bytes, path);
}

}  // namespace

Dataset load_dataset(const DataFiles& files) {
  std::string name = files.data.filename().string();
  if (strings::ends_with(name, ".gz")) name.resize(name.size() - 3);
  Dataset d;
  bool eight_bit = false;
  if (strings::ends_with(strings::lower(name), ".csv")) {
    if (files.labels) throw InputError(fmt::format("--labels: a CSV data file carries its labels in the last column"));
    d = load_csv(files.data);
  } else {
    if (!files.labels)
      throw InputError(fmt::format("--labels is required with {} (only CSV files carry their own labels)",
                                   files.data.string()));
    const Array x = load_array(files.data, "data file");
    const Array y = load_array(*files.labels, "labels file");
    if (x.shape.empty()) throw InputError(fmt::format("{}: features need at least one dimension", files.data.string()));
    d.rows = x.shape[0];
    d.features = 1;  // checked: a file of zero rows passes the length check whatever its other dims claim
    for (std::size_t i = 1; i < x.shape.size(); ++i) d.features = checked::mul(d.features, x.shape[i], files.data.string() + ": feature dimensions");
    if (y.shape.size() != 1 || y.shape[0] != d.rows)
      throw InputError(fmt::format("{}: {} labels for {} rows in {}", files.labels->string(),
                                   y.shape.empty() ? 0 : y.shape[0], d.rows, files.data.string()));
    d.x.assign(x.values.begin(), x.values.end());
    d.y.resize(static_cast<std::size_t>(d.rows));
    for (std::int64_t i = 0; i < d.rows; ++i) {
      const double v = y.values[static_cast<std::size_t>(i)];
      if (v != std::floor(v) || v < 0 || v > 2147483647.0)
        throw InputError(fmt::format("{}: label {} at row {} is not a non-negative integer", files.labels->string(), v, i));
      d.y[static_cast<std::size_t>(i)] = static_cast<std::int32_t>(v);
    }
    d.source = files.data.string();
    eight_bit = x.is_uint8;
  }
  const double scale = files.scale.value_or(eight_bit ? 1.0 / 255.0 : 1.0);
  if (scale != 1.0)
    for (float& v : d.x) v = static_cast<float>(v * scale);
  if (d.rows == 0) throw InputError(fmt::format("{}: no rows", files.data.string()));
  return d;
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
      throw InputError(fmt::format("{}: label {} at row {} is outside the model's {} classes (0..{})", d.source,
                                   d.y[i], i, classes, classes - 1));
}

}  // namespace gpuvs::engine
