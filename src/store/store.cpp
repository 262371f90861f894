// SPDX-License-Identifier: Apache-2.0
#include "store/store.hpp"

#include <fmt/format.h>
#include <sqlite3.h>

#include <cstdlib>
#include <optional>
#include <fstream>

#include "core/error.hpp"
#include "core/files.hpp"
#include "core/strings.hpp"
#include "core/json_guard.hpp"

namespace gpuvs::store {

namespace {

namespace fs = std::filesystem;

constexpr int kApplicationId = 0x67707673;  // "gpvs" in the SQLite header: marks the file as ours
constexpr int kSchemaVersion = 1;

const char* const kSchema = R"SQL(
CREATE TABLE runs (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  created_utc TEXT NOT NULL,
  kind TEXT NOT NULL,
  gpuvs_version TEXT NOT NULL,
  host TEXT NOT NULL,
  gpu TEXT NOT NULL,
  summary TEXT NOT NULL,
  payload TEXT NOT NULL
);
CREATE TABLE figures (
  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  key TEXT NOT NULL,
  device TEXT NOT NULL,
  unit TEXT NOT NULL,
  status TEXT NOT NULL,
  median REAL,
  spec REAL
);
CREATE INDEX figures_by_run ON figures(run_id);
)SQL";

[[noreturn]] void fail(sqlite3* db, const fs::path& path, const std::string& what) {
  throw RuntimeFailure(fmt::format("{}: {}: {}", path.string(), what, db ? sqlite3_errmsg(db) : "out of memory"));
}

class Statement {
 public:
  Statement(sqlite3* db, const char* sql, const fs::path& path) : db_(db), path_(path) {
    if (sqlite3_prepare_v2(db, sql, -1, &s_, nullptr) != SQLITE_OK) fail(db, path, "cannot prepare a statement");
  }
  ~Statement() { sqlite3_finalize(s_); }
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;
  void bind(int i, const std::string& v) { sqlite3_bind_text(s_, i, v.c_str(), static_cast<int>(v.size()), SQLITE_TRANSIENT); }
  void bind(int i, double v) { sqlite3_bind_double(s_, i, v); }
  void bind(int i, std::int64_t v) { sqlite3_bind_int64(s_, i, v); }
  void bind_null(int i) { sqlite3_bind_null(s_, i); }
  void reset() {
    sqlite3_reset(s_);
    sqlite3_clear_bindings(s_);
  }
  bool step() {
    const int rc = sqlite3_step(s_);
    if (rc == SQLITE_ROW) return true;
    if (rc == SQLITE_DONE) return false;
    fail(db_, path_, "query failed");
  }
  /// Column c's text; InputError naming the file and column when it is not UTF-8 (another program wrote the
  /// store: the history's JSON output would throw writing it).
  std::string text(int c) const {
    const auto* t = reinterpret_cast<const char*>(sqlite3_column_text(s_, c));
    std::string out = t ? std::string(t, static_cast<std::size_t>(sqlite3_column_bytes(s_, c))) : "";
    if (!strings::is_utf8(out)) {
      const char* name = sqlite3_column_name(s_, c);
      throw InputError(fmt::format("{}: a stored {} is not UTF-8 text (was the store written by another program?)", path_.string(),
                                   name ? strings::printable(name) : "text"));
    }
    return out;
  }
  std::int64_t integer(int c) const { return sqlite3_column_int64(s_, c); }
  double real(int c) const { return sqlite3_column_double(s_, c); }
  bool null(int c) const { return sqlite3_column_type(s_, c) == SQLITE_NULL; }

 private:
  sqlite3* db_;
  const fs::path& path_;
  sqlite3_stmt* s_ = nullptr;
};

void exec(sqlite3* db, const char* sql, const fs::path& path) {
  char* err = nullptr;
  if (sqlite3_exec(db, sql, nullptr, nullptr, &err) != SQLITE_OK) {
    const std::string msg = err ? err : "unknown error";
    sqlite3_free(err);
    throw RuntimeFailure(fmt::format("{}: {}", path.string(), msg));
  }
}

/// Switches the database to WAL. The switch upgrades a read lock to an exclusive one, and when another gpuvs
/// holds a read lock while waiting to commit (two runs creating one history at once) SQLite answers BUSY at
/// once rather than deadlock, without calling the busy handler: so retry, for as long as the busy timeout.
void use_wal(sqlite3* db, const fs::path& path) {
  for (int waited_ms = 0;; waited_ms += 20) {
    char* err = nullptr;
    const int rc = sqlite3_exec(db, "PRAGMA journal_mode=WAL", nullptr, nullptr, &err);
    const std::string msg = err ? err : "unknown error";
    sqlite3_free(err);
    if (rc == SQLITE_OK) return;
    if ((rc & 0xff) != SQLITE_BUSY && (rc & 0xff) != SQLITE_LOCKED) throw RuntimeFailure(fmt::format("{}: {}", path.string(), msg));
    if (waited_ms >= 5000) throw RuntimeFailure(fmt::format("{}: busy for 5 s: {}", path.string(), msg));
    sqlite3_sleep(20);
  }
}

int pragma_int(sqlite3* db, const char* pragma, const fs::path& path) {
  Statement s(db, pragma, path);
  return s.step() ? static_cast<int>(s.integer(0)) : 0;
}

bool looks_like_sqlite(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  char header[16] = {};
  in.read(header, 16);
  return in.gcount() == 16 && std::string(header, 16) == std::string("SQLite format 3\0", 16);
}

}  // namespace

struct Store::Impl {
  fs::path path;
  sqlite3* db = nullptr;
  ~Impl() {
    if (db) sqlite3_close(db);
  }
};

fs::path default_path() {
  if (const char* e = std::getenv("GPUVS_DB"); e && *e) return e;
  if (const char* x = std::getenv("XDG_DATA_HOME"); x && *x) return fs::path(x) / "gpuvs" / "history.db";
  const char* home = std::getenv("HOME");
  return fs::path(home && *home ? home : ".") / ".local" / "share" / "gpuvs" / "history.db";
}

Store::Store(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Store::~Store() = default;
Store::Store(Store&&) noexcept = default;
Store& Store::operator=(Store&&) noexcept = default;
const fs::path& Store::path() const { return impl_->path; }

Store Store::open(const fs::path& path, bool create) {
  auto impl = std::make_unique<Impl>();
  impl->path = path;
  std::error_code ec;
  const bool exists = fs::exists(path, ec);
  files::note_input(path);  // read and written by this run: no output of it may land on it
  if (exists) {
    if (fs::is_directory(path, ec)) throw InputError(fmt::format("--db {}: is a directory", path.string()));
    files::check_input(path, "--db");  // a FIFO or device is refused, not opened
    // Check the header before SQLite touches the file: opening a non-database read-write could make
    // SQLite create journal files beside it, and we promise never to write to a file that is not ours.
    if (fs::file_size(path, ec) > 0 && !looks_like_sqlite(path))
      throw InputError(fmt::format("--db {}: not a gpuvs database (not an SQLite file); refusing to touch it", path.string()));
  } else if (!create) {
    throw InputError(fmt::format("--db {}: no such database (run gpuvs evaluate first)", path.string()));
  } else {
    if (!path.parent_path().empty()) fs::create_directories(path.parent_path(), ec);
    if (ec) throw InputError(fmt::format("--db {}: cannot create its folder: {}", path.string(), ec.message()));
  }
  const int flags = SQLITE_OPEN_READWRITE | (exists ? 0 : SQLITE_OPEN_CREATE) | SQLITE_OPEN_NOMUTEX;
  if (sqlite3_open_v2(path.c_str(), &impl->db, flags, nullptr) != SQLITE_OK)
    throw InputError(fmt::format("--db {}: cannot open: {}", path.string(), impl->db ? sqlite3_errmsg(impl->db) : "out of memory"));
  sqlite3_busy_timeout(impl->db, 5000);
  sqlite3* db = impl->db;
  int app = 0, version = 0, tables = 0;
  try {
    // One read transaction, so the three answers come from one snapshot: read one by one, another gpuvs
    // creating the file could commit between them (no mark yet, then its tables), which looked foreign.
    exec(db, "BEGIN", path);
    app = pragma_int(db, "PRAGMA application_id", path);
    version = pragma_int(db, "PRAGMA user_version", path);
    tables = pragma_int(db, "SELECT count(*) FROM sqlite_master", path);
    exec(db, "COMMIT", path);
  } catch (const RuntimeFailure&) {
    const std::string why = sqlite3_errmsg(db);
    sqlite3_exec(db, "ROLLBACK", nullptr, nullptr, nullptr);
    throw InputError(fmt::format("--db {}: not a readable SQLite database: {}", path.string(), why));
  }
  if (app != kApplicationId && (tables > 0 || app != 0))
    throw InputError(fmt::format("--db {}: an SQLite database of another application (application_id {:#x}); refusing to use it",
                                 path.string(), static_cast<unsigned>(app)));
  if (app == kApplicationId) {
    if (version > kSchemaVersion)
      throw InputError(fmt::format("--db {}: written by a newer gpuvs (schema {}, this one knows {})", path.string(), version, kSchemaVersion));
    Statement check(db, "PRAGMA quick_check", path);
    const std::string verdict = check.step() ? check.text(0) : "no answer";
    if (verdict != "ok") throw InputError(fmt::format("--db {}: the database is corrupt ({}); it was left as it is", path.string(), verdict));
  }
  use_wal(db, path);
  exec(db, "PRAGMA synchronous=NORMAL; PRAGMA foreign_keys=ON;", path);
  if (app == 0) {
    // A new file: schema, version and our mark in one transaction, so a kill leaves either nothing or
    // a complete, marked database.
    exec(db, "BEGIN IMMEDIATE", path);
    try {
      // Another gpuvs may have created it while this one waited for the write lock: look again inside it.
      if (pragma_int(db, "PRAGMA application_id", path) == 0) {
        exec(db, kSchema, path);
        exec(db, fmt::format("PRAGMA application_id={}; PRAGMA user_version={};", kApplicationId, kSchemaVersion).c_str(), path);
      }
      exec(db, "COMMIT", path);
    } catch (...) {
      sqlite3_exec(db, "ROLLBACK", nullptr, nullptr, nullptr);
      throw;
    }
  }
  return Store(std::move(impl));
}

std::int64_t Store::add(const Run& run) {
  sqlite3* db = impl_->db;
  const auto& path = impl_->path;
  exec(db, "BEGIN IMMEDIATE", path);
  try {
    Statement ins(db,
                  "INSERT INTO runs(created_utc, kind, gpuvs_version, host, gpu, summary, payload) VALUES(?,?,?,?,?,?,?)",
                  path);
    ins.bind(1, run.created_utc);
    ins.bind(2, run.kind);
    ins.bind(3, run.gpuvs_version);
    ins.bind(4, run.host);
    ins.bind(5, run.gpu);
    ins.bind(6, run.summary);
    ins.bind(7, run.payload.dump());
    ins.step();
    const std::int64_t id = sqlite3_last_insert_rowid(db);
    Statement fig(db, "INSERT INTO figures(run_id, key, device, unit, status, median, spec) VALUES(?,?,?,?,?,?,?)", path);
    for (const auto& f : run.figures) {
      fig.reset();
      fig.bind(1, id);
      fig.bind(2, f.key);
      fig.bind(3, f.device);
      fig.bind(4, f.unit);
      fig.bind(5, f.status);
      if (f.status == "ok") fig.bind(6, f.median); else fig.bind_null(6);
      if (f.spec) fig.bind(7, *f.spec); else fig.bind_null(7);
      fig.step();
    }
    exec(db, "COMMIT", path);
    return id;
  } catch (...) {
    sqlite3_exec(db, "ROLLBACK", nullptr, nullptr, nullptr);
    throw;
  }
}

namespace {

constexpr const char* kRunColumns = "id, created_utc, kind, gpuvs_version, host, gpu, summary";

/// A run's header from a row that starts with kRunColumns.
Run run_header(const Statement& s) {
  Run r;
  r.id = s.integer(0);
  r.created_utc = s.text(1);
  r.kind = s.text(2);
  r.gpuvs_version = s.text(3);
  r.host = s.text(4);
  r.gpu = s.text(5);
  r.summary = s.text(6);
  return r;
}

}  // namespace

std::vector<Run> Store::list() const {
  const std::string sql = fmt::format("SELECT {} FROM runs ORDER BY id DESC", kRunColumns);
  Statement s(impl_->db, sql.c_str(), impl_->path);
  std::vector<Run> out;
  while (s.step()) out.push_back(run_header(s));
  return out;
}

Run Store::get(std::int64_t id) const {
  const std::string sql = fmt::format("SELECT {}, payload FROM runs WHERE id=?", kRunColumns);
  Statement s(impl_->db, sql.c_str(), impl_->path);
  s.bind(1, id);
  if (!s.step()) throw InputError(fmt::format("run {} is not in {} (gpuvs history lists the runs)", id, impl_->path.string()));
  Run r = run_header(s);
  // Another program may have written it: nested past 256 deep, the report's copies of it would overflow the stack.
  r.payload = nlohmann::json::parse(s.text(7), json_input_guard(fmt::format("run {} in {}: its stored record", id, impl_->path.string())), false);
  if (r.payload.is_discarded()) throw InputError(fmt::format("run {} in {}: its stored record is not JSON", id, impl_->path.string()));
  Statement f(impl_->db, "SELECT key, device, unit, status, median, spec FROM figures WHERE run_id=? ORDER BY rowid", impl_->path);
  f.bind(1, id);
  while (f.step()) {
    Figure g{f.text(0), f.text(1), f.text(2), f.text(3), f.null(4) ? 0.0 : f.real(4), std::nullopt};
    if (!f.null(5)) g.spec = f.real(5);
    r.figures.push_back(std::move(g));
  }
  return r;
}

std::int64_t Store::latest() const {
  Statement s(impl_->db, "SELECT max(id) FROM runs", impl_->path);
  if (!s.step() || s.null(0)) throw InputError(fmt::format("{} holds no runs yet (run gpuvs evaluate)", impl_->path.string()));
  return s.integer(0);
}

}  // namespace gpuvs::store
