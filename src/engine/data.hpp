// Training data: a seeded synthetic classification task, and loaders for IDX (MNIST), CSV and NPY files
// (each optionally gzip-compressed). Every loader reports bad content as InputError "FILE: what, where".
#pragma once
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace gpuvs::engine {

struct Dataset {
  std::int64_t rows = 0;
  std::int64_t features = 0;
  std::vector<float> x;            // rows x features, row-major
  std::vector<std::int32_t> y;     // rows labels
  std::string source;              // for messages and the run record
};

/// A learnable task: `classes` classes, each the union of two Gaussian clusters (so it is not linearly
/// separable and the hidden layer matters), unit noise, deterministic in `seed`.
Dataset make_synthetic(std::int64_t rows, std::int64_t features, std::int64_t classes, std::uint64_t seed);

struct DataFiles {
  std::filesystem::path data;                   // .csv (label in the last column), .npy, or IDX images
  std::optional<std::filesystem::path> labels;  // .npy or IDX labels; required unless the data is CSV
  /// Multiplier applied to features; unset = 1/255 for 8-bit data (IDX, uint8 NPY), 1 otherwise.
  std::optional<double> scale;
};
Dataset load_dataset(const DataFiles& files);

/// Throws InputError when the data does not fit the model: feature count, or a label outside [0, classes).
void check_dataset(const Dataset& d, std::int64_t features, std::int64_t classes, const std::string& model_name);

/// Reorders rows by a seeded permutation (for files sorted by class or writer, before Keras-style
/// validation splitting takes the last rows). Marks the source so checkpoints notice.
void shuffle_rows(Dataset& d, std::uint64_t seed);

/// Reads a file, decompressing it when its name ends in .gz; InputError when it inflates past `cap` bytes
/// (0: half the memory available now).
std::string read_maybe_gzip(const std::filesystem::path& path, const std::string& what, std::uint64_t cap = 0);

}  // namespace gpuvs::engine
