// SPDX-License-Identifier: Apache-2.0
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
  std::string labels_source;       // the file the labels came from (the data file for CSV), for messages
};

/// CRC-32C of the features and labels: what MPI ranks compare to know they train on the same data.
std::uint32_t data_digest(const Dataset& d);

/// A learnable task: `classes` classes, each the union of two Gaussian clusters (so it is not linearly
/// separable and the hidden layer matters), unit noise, deterministic in `seed`.
/// InputError, with the figures, when the rows would not fit in the memory available.
Dataset make_synthetic(std::int64_t rows, std::int64_t features, std::int64_t classes, std::uint64_t seed);
/// The check make_synthetic makes before it allocates, for a command to refuse early.
void check_synthetic_fits(std::int64_t rows, std::int64_t features, std::int64_t classes);

struct DataFiles {
  std::filesystem::path data;                   // .csv (label in the last column), .npy, or IDX images
  std::optional<std::filesystem::path> labels;  // .npy or IDX labels; required unless the data is CSV
  /// Multiplier applied to features; unset = 1/255 for 8-bit data (IDX, uint8 NPY), 1 otherwise.
  std::optional<double> scale;
  /// Bytes the loaded arrays may take; 0: the memory available now. Data that would not fit is refused with the
  /// figures before its arrays are allocated (NPY, IDX) or as soon as it outgrows the budget (CSV, streamed).
  std::uint64_t memory_budget = 0;
};
Dataset load_dataset(const DataFiles& files);

/// Throws InputError when the data does not fit the model: feature count, or a label outside [0, classes).
void check_dataset(const Dataset& d, std::int64_t features, std::int64_t classes, const std::string& model_name);

/// Reorders rows by a seeded permutation (for files sorted by class or writer, before Keras-style
/// validation splitting takes the last rows). Marks the source so checkpoints notice.
void shuffle_rows(Dataset& d, std::uint64_t seed);

}  // namespace gpuvs::engine
