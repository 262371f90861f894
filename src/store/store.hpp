// SPDX-License-Identifier: Apache-2.0
// The results history: a local SQLite database of gpuvs runs (evaluate, bench), each stored whole in
// one transaction (WAL journal), so a run killed mid-write leaves the database as it was before it. A
// file that is not a gpuvs database — another program's SQLite file, or not SQLite at all, or corrupt —
// is refused with a clear error and never written to.
#pragma once
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace gpuvs::store {

/// One figure of a run, kept in its own table so history and diff can line runs up by key.
struct Figure {
  std::string key, device, unit, status;
  double median = 0;
  std::optional<double> spec;
};

struct Run {
  std::int64_t id = 0;
  std::string created_utc, kind, gpuvs_version, host, gpu, summary;
  nlohmann::json payload;  // the whole record (devices, figures, predictions, advice)
  std::vector<Figure> figures;
};

/// $GPUVS_DB if set, else $XDG_DATA_HOME/gpuvs/history.db, else ~/.local/share/gpuvs/history.db.
std::filesystem::path default_path();

class Store {
 public:
  /// Opens (creating when absent and `create` is set) the database at `path`. InputError naming the
  /// path when it is not a gpuvs database, is corrupt, or is from a newer gpuvs.
  static Store open(const std::filesystem::path& path, bool create);
  ~Store();
  Store(Store&&) noexcept;
  Store& operator=(Store&&) noexcept;

  /// Stores a run and its figures in one transaction; returns its id.
  std::int64_t add(const Run& run);
  /// Runs, newest first, without payloads.
  std::vector<Run> list() const;
  /// One run with payload and figures; InputError for an unknown id.
  Run get(std::int64_t id) const;
  /// The newest run's id; InputError when there is none.
  std::int64_t latest() const;
  const std::filesystem::path& path() const;

 private:
  struct Impl;
  explicit Store(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace gpuvs::store
