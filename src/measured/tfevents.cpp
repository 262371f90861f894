// SPDX-License-Identifier: Apache-2.0
#include "measured/tfevents.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <map>
#include <optional>
#include <string_view>

#include "core/crc32c.hpp"
#include "core/error.hpp"
#include "core/strings.hpp"

namespace gpuvs::measured {

namespace {

// The scalars that are a rate already, by what they count. Hugging Face's Trainer logs its end-of-training
// metrics under "train/" (TensorBoardCallback) and without it (trainer_state); TF's examples/sec is the
// Estimator's and Model Garden's.
constexpr std::string_view kSampleRates[] = {"train/train_samples_per_second", "train_samples_per_second", "examples/sec",
                                             "examples_per_second", "samples_per_second"};
constexpr std::string_view kStepRates[] = {"global_step/sec", "train/train_steps_per_second", "train_steps_per_second",
                                           "steps_per_second"};
// A series that gives step times from its wall clock needs its second and last event at least this many steps
// apart, and at least this many events.
constexpr int kMinSeriesEvents = 3;
// Past any training loop's rate (steps or samples a second): a figure above it is a corrupt or misread scalar.
constexpr double kMaxRate = 1e9;

std::uint32_t le32(const char* p) {
  std::uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}
std::uint64_t le64(const char* p) {
  std::uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}

// Protocol-buffer wire format over [begin, end) of one record's payload; errors name the file and record.
class Wire {
 public:
  Wire(std::string_view s, const std::string& at) : s_(s), at_(at) {}
  bool more() const { return p_ < s_.size(); }
  std::uint64_t varint() {
    std::uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (p_ >= s_.size()) fail("a varint runs past its message");
      const auto b = static_cast<unsigned char>(s_[p_++]);
      v |= static_cast<std::uint64_t>(b & 0x7F) << shift;
      if (!(b & 0x80)) return v;
    }
    fail("a varint longer than 10 bytes");
  }
  // (field number, wire type)
  std::pair<std::uint64_t, int> key() {
    const std::uint64_t k = varint();
    return {k >> 3, static_cast<int>(k & 7)};
  }
  std::string_view bytes() {
    const std::uint64_t n = varint();
    if (n > s_.size() - p_) fail(fmt::format("a field of {} bytes runs past its message", n));
    const std::string_view v = s_.substr(p_, n);
    p_ += n;
    return v;
  }
  double f64() {
    if (s_.size() - p_ < 8) fail("a 64-bit field runs past its message");
    double v;
    std::memcpy(&v, s_.data() + p_, 8);
    p_ += 8;
    return v;
  }
  float f32() {
    if (s_.size() - p_ < 4) fail("a 32-bit field runs past its message");
    float v;
    std::memcpy(&v, s_.data() + p_, 4);
    p_ += 4;
    return v;
  }
  void skip(int type) {
    switch (type) {
      case 0: varint(); return;
      case 1: f64(); return;
      case 2: bytes(); return;
      case 5: f32(); return;
      default: fail(fmt::format("wire type {} (groups are not in an Event)", type));
    }
  }
  [[noreturn]] void fail(const std::string& what) const { throw InputError(fmt::format("{}: malformed Event: {}", at_, what)); }

 private:
  std::string_view s_;
  std::size_t p_ = 0;
  const std::string& at_;
};

// TensorProto's dtype values for the scalars a summary holds.
constexpr std::uint64_t kDtFloat = 1, kDtDouble = 2;

// A scalar tensor's value: float_val or double_val (packed or not), or tensor_content of one float or double.
std::optional<double> tensor_scalar(std::string_view t, const std::string& at) {
  Wire w(t, at);
  std::uint64_t dtype = 0;
  std::optional<double> value;
  std::string_view content;
  while (w.more()) {
    const auto [field, type] = w.key();
    if (field == 1 && type == 0) {
      dtype = w.varint();
    } else if (field == 4 && type == 2) {
      content = w.bytes();
    } else if (field == 5 && !value) {  // float_val
      if (type == 5) {
        value = w.f32();
      } else if (type == 2) {
        const std::string_view packed = w.bytes();
        if (packed.size() >= 4) {
          float f;
          std::memcpy(&f, packed.data(), 4);
          value = f;
        }
      } else {
        w.skip(type);
      }
    } else if (field == 6 && !value) {  // double_val
      if (type == 1) {
        value = w.f64();
      } else if (type == 2) {
        const std::string_view packed = w.bytes();
        if (packed.size() >= 8) {
          double d;
          std::memcpy(&d, packed.data(), 8);
          value = d;
        }
      } else {
        w.skip(type);
      }
    } else {
      w.skip(type);
    }
  }
  if (value) return value;
  if (dtype == kDtFloat && content.size() == 4) {
    float f;
    std::memcpy(&f, content.data(), 4);
    return f;
  }
  if (dtype == kDtDouble && content.size() == 8) {
    double d;
    std::memcpy(&d, content.data(), 8);
    return d;
  }
  return std::nullopt;
}

struct Point {
  double wall = 0;
  std::int64_t step = 0;
  double value = 0;
  int record = 0;
};

struct Event {
  double wall = 0;
  std::int64_t step = 0;
  std::string file_version;
  std::vector<std::pair<std::string, double>> scalars;
};

Event parse_event(std::string_view payload, const std::string& at) {
  Event e;
  Wire w(payload, at);
  while (w.more()) {
    const auto [field, type] = w.key();
    if (field == 1 && type == 1) {
      e.wall = w.f64();
    } else if (field == 2 && type == 0) {
      e.step = static_cast<std::int64_t>(w.varint());
    } else if (field == 3 && type == 2) {
      e.file_version = std::string(w.bytes());
    } else if (field == 5 && type == 2) {  // Summary: repeated Value value = 1
      Wire summary(w.bytes(), at);
      while (summary.more()) {
        const auto [sf, st] = summary.key();
        if (sf != 1 || st != 2) {
          summary.skip(st);
          continue;
        }
        Wire value(summary.bytes(), at);
        std::string tag;
        std::optional<double> v;
        while (value.more()) {
          const auto [vf, vt] = value.key();
          if (vf == 1 && vt == 2) tag = std::string(value.bytes());
          else if (vf == 2 && vt == 5) v = value.f32();                       // simple_value
          else if (vf == 8 && vt == 2) v = tensor_scalar(value.bytes(), at);  // a scalar tensor
          else value.skip(vt);
        }
        if (v && !tag.empty()) e.scalars.emplace_back(std::move(tag), *v);
      }
    } else {
      w.skip(type);
    }
  }
  return e;
}

bool ends_with(std::string_view s, std::string_view tail) { return s.size() >= tail.size() && s.substr(s.size() - tail.size()) == tail; }

// A series a training loop logs once per some steps: a loss, not an epoch's or an evaluation's.
bool per_step_loss(const std::string& tag) {
  const std::string t = strings::lower(tag);
  if (t.rfind("epoch", 0) == 0 || t.find("eval") != std::string::npos || t.find("val") != std::string::npos ||
      t.find("test") != std::string::npos)
    return false;
  return ends_with(t, "loss") || t == "loss/train" || ends_with(t, "/loss");
}

}  // namespace

bool looks_like_tfevents(const std::string& bytes) {
  if (bytes.size() < 16) return false;
  if (masked_crc32c(bytes.data(), 8) != le32(bytes.data() + 8)) return false;
  const std::uint64_t n = le64(bytes.data());
  if (n > bytes.size() - 16) return false;
  return std::string_view(bytes.data() + 12, n).find("brain.Event:") != std::string_view::npos;
}

std::vector<Measurement> read_tfevents(const std::string& bytes, const std::string& where) {
  std::map<std::string, std::vector<Point>> series;
  bool epochs_only = true;  // every scalar per epoch (Keras's default)
  std::string first_epoch_tag;
  std::size_t offset = 0;
  int record = 0;
  bool versioned = false;
  while (offset < bytes.size()) {
    ++record;
    const std::string at = fmt::format("{}:{}", where, record);
    if (bytes.size() - offset < 12)
      throw InputError(fmt::format("{}: a truncated record at byte {} ({} bytes left of a 12-byte header)", at, offset, bytes.size() - offset));
    const char* h = bytes.data() + offset;
    if (masked_crc32c(h, 8) != le32(h + 8))
      throw InputError(fmt::format("{}: the record's length CRC does not hold at byte {}: not a TFRecord, or damaged", at, offset));
    const std::uint64_t n = le64(h);
    if (n > bytes.size() - offset - 12 || bytes.size() - offset - 12 - n < 4)
      throw InputError(fmt::format("{}: a record of {} bytes at byte {} runs past the end of the file (truncated)", at, n, offset));
    const std::string_view payload(h + 12, n);
    if (masked_crc32c(payload.data(), payload.size()) != le32(h + 12 + n))
      throw InputError(fmt::format("{}: the record's data CRC does not hold at byte {} (damaged)", at, offset));
    offset += 16 + n;
    const Event e = parse_event(payload, at);
    if (record == 1) {
      if (e.file_version.rfind("brain.Event:", 0) != 0)
        throw InputError(fmt::format("{}: the first record is not an event file's version record (brain.Event:N)", at));
      versioned = true;
      continue;
    }
    for (const auto& [tag, v] : e.scalars) {
      // Only the series a figure can come from are kept (a log of many other scalars costs no memory here).
      if (strings::lower(tag).rfind("epoch", 0) != 0) epochs_only = false;
      else if (first_epoch_tag.empty()) first_epoch_tag = tag;
      const bool rate = std::find(std::begin(kSampleRates), std::end(kSampleRates), tag) != std::end(kSampleRates) ||
                        std::find(std::begin(kStepRates), std::end(kStepRates), tag) != std::end(kStepRates);
      if (rate || per_step_loss(tag)) series[tag].push_back({e.wall, e.step, v, record});
    }
  }
  if (!versioned) throw InputError(fmt::format("{}: an empty event file (no records)", where));

  Measurement m;
  m.tool = "tensorboard";
  m.mode = "train";
  const auto positive = [&](double v, const std::string& tag, int rec) {
    if (!std::isfinite(v) || v <= 0 || v > kMaxRate)
      throw InputError(fmt::format("{}:{}: {} is {}, not a positive rate (at most {:g})", where, rec, strings::printable(tag), v, kMaxRate));
    return v;
  };
  for (const std::string_view tag : kSampleRates)
    if (const auto it = series.find(std::string(tag)); it != series.end()) {
      const Point& last = it->second.back();
      m.value = positive(last.value, it->first, last.record);
      m.unit = "samples/s";
      m.where = fmt::format("{}:{}", where, last.record);
      m.metric = strings::printable(it->first);
      return {m};
    }
  for (const std::string_view tag : kStepRates)
    if (const auto it = series.find(std::string(tag)); it != series.end()) {
      std::vector<double> v;
      const std::vector<Point>& pts = it->second;
      for (std::size_t i = pts.size() > 1 ? 1 : 0; i < pts.size(); ++i) v.push_back(positive(pts[i].value, it->first, pts[i].record));
      std::sort(v.begin(), v.end());
      const std::size_t h = v.size() / 2;
      m.value = v.size() % 2 ? v[h] : (v[h - 1] + v[h]) / 2;
      m.unit = "steps/s";
      m.where = fmt::format("{}:{}", where, pts.back().record);
      m.metric = strings::printable(it->first);
      return {m};
    }
  // The per-step loss series with the most events, its steps increasing.
  const std::vector<Point>* best = nullptr;
  std::string best_tag;
  for (const auto& [tag, pts] : series) {
    if (!per_step_loss(tag) || pts.size() < static_cast<std::size_t>(kMinSeriesEvents)) continue;
    bool increasing = true;
    for (std::size_t i = 1; i < pts.size(); ++i) increasing = increasing && pts[i].step > pts[i - 1].step && pts[i].wall > pts[i - 1].wall;
    if (increasing && (!best || pts.size() > best->size())) best = &pts, best_tag = tag;
  }
  if (best) {
    // From the second event: the first interval holds tracing, compilation and the input pipeline's warm-up.
    const Point& a = (*best)[1];
    const Point& b = best->back();
    m.value = (static_cast<double>(b.step) - static_cast<double>(a.step)) / (b.wall - a.wall);  // steps past int64's range apart: no overflow
    if (!std::isfinite(m.value) || m.value <= 0 || m.value > kMaxRate)
      throw InputError(fmt::format("{}:{}: {} gives no step rate gpuvs can use ({:g} steps/s)", where, b.record, strings::printable(best_tag), m.value));
    m.unit = "steps/s";
    m.where = fmt::format("{}:{}", where, b.record);
    m.metric = fmt::format("{}: steps {} to {} over {:.4g} s of wall time", strings::printable(best_tag), a.step, b.step, b.wall - a.wall);
    return {m};
  }
  if (epochs_only && !first_epoch_tag.empty())
    throw InputError(fmt::format("{}: only per-epoch scalars ({}): an epoch's steps are not in the file; log per batch "
                                 "(Keras: TensorBoard(update_freq='batch')) or a samples/s or steps/s scalar",
                                 where, strings::printable(first_epoch_tag)));
  throw InputError(fmt::format("{}: no training rate: none of the samples/s scalars (train/train_samples_per_second, examples/sec), the steps/s "
                               "scalars (global_step/sec, train/train_steps_per_second), nor a per-step loss series of {} events or more",
                               where, kMinSeriesEvents));
}

}  // namespace gpuvs::measured
