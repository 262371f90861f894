// SPDX-License-Identifier: Apache-2.0
#include "core/files.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstring>
#include <map>
#include <mutex>
#include <set>
#include <utility>

#include "core/error.hpp"
#include "core/units.hpp"

namespace gpuvs::files {

namespace fs = std::filesystem;

namespace {

// ---- this run's files: inputs by (device, inode) and by resolved path; outputs by resolved path ----
struct RunFiles {
  std::mutex mu;
  std::set<std::pair<dev_t, ino_t>> input_ids;
  std::set<std::string> input_paths;
  std::map<std::string, std::string> outputs;  // resolved path -> the flag that writes it
};
RunFiles& run_files() {
  static RunFiles r;
  return r;
}

std::string resolved(const fs::path& p) {
  std::error_code ec;
  const fs::path r = fs::weakly_canonical(fs::absolute(p, ec), ec);
  return ec ? fs::absolute(p).lexically_normal().string() : r.string();
}

void note_input_id(const fs::path& path, const struct stat& st) {
  RunFiles& r = run_files();
  const std::lock_guard<std::mutex> lock(r.mu);
  r.input_ids.emplace(st.st_dev, st.st_ino);
  r.input_paths.insert(resolved(path));
}

std::string bytes_text(std::uint64_t n) {
  return fmt::format("{} bytes ({})", n, units::format_bytes_binary(static_cast<double>(n)));
}

void fsync_dir(const fs::path& dir) {
  const int fd = ::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd >= 0) {
    ::fsync(fd);
    ::close(fd);
  }
}

std::string host_name() {
  char host[256] = "localhost";
  ::gethostname(host, sizeof host - 1);
  host[sizeof host - 1] = '\0';
  // The name goes into a file name and is parsed back: keep it to what cannot be mistaken for a separator.
  std::string h;
  for (const char* c = host; *c; ++c) h.push_back((std::isalnum(static_cast<unsigned char>(*c)) || *c == '-') ? *c : '_');
  return h.empty() ? "localhost" : h;
}

std::string temp_prefix(const fs::path& path) { return fmt::format(".{}.gpuvs-tmp.", path.filename().string()); }

/// Removes the temporary files that runs on this host, no longer alive, left for `path` (killed between the
/// temp file's creation and the rename). Another live run's file, another host's, and anything not a regular file
/// are left alone.
void remove_stale_temps(const fs::path& path) {
  const fs::path dir = path.parent_path().empty() ? fs::path(".") : path.parent_path();
  const std::string prefix = temp_prefix(path) + host_name() + ".";
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return;
  while (const dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    if (name.rfind(prefix, 0) != 0) continue;
    const std::string rest = name.substr(prefix.size());  // PID.XXXXXX
    const auto dot = rest.find('.');
    if (dot == std::string::npos || dot == 0 || rest.size() != dot + 7) continue;
    long pid = 0;
    bool digits = true;
    for (std::size_t i = 0; i < dot; ++i) {
      if (!std::isdigit(static_cast<unsigned char>(rest[i])) || pid > 1'000'000'000) {
        digits = false;
        break;
      }
      pid = pid * 10 + (rest[i] - '0');
    }
    if (!digits || pid <= 0) continue;
    if (pid == ::getpid()) continue;  // this process's own, perhaps being written by another thread
    if (::kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH) continue;  // alive, or not ours to tell
    struct stat st {};
    const fs::path stale = dir / name;
    if (::lstat(stale.c_str(), &st) == 0 && S_ISREG(st.st_mode)) ::unlink(stale.c_str());
  }
  ::closedir(d);
}

std::string head_of(const fs::path& path, std::size_t n) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return {};
  std::string out(n, '\0');
  std::size_t got = 0;
  while (got < n) {
    const ssize_t r = ::read(fd, out.data() + got, n - got);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    got += static_cast<std::size_t>(r);
  }
  ::close(fd);
  out.resize(got);
  return out;
}

}  // namespace

std::string describe_file_type(mode_t mode) {
  if (S_ISREG(mode)) return "a regular file";
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISLNK(mode)) return "a symbolic link";
  return "a special file";
}

// ---- inputs ----

InputFile::InputFile(const fs::path& path, std::string_view what) : path_(path), what_(what) {
  struct stat st {};
  // stat (following links) before open: opening a FIFO with no writer blocks, and opening some devices acts.
  if (::stat(path.c_str(), &st) != 0) {
    const int err = errno;
    if (err == ENOENT) throw InputError(fmt::format("{} {}: no such file", what, path.string()));
    throw InputError(fmt::format("{} {}: cannot open: {}", what, path.string(), std::strerror(err)));
  }
  if (!S_ISREG(st.st_mode))
    throw InputError(fmt::format("{} {}: is {}, not a regular file", what, path.string(), describe_file_type(st.st_mode)));
  fd_ = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd_ < 0) throw InputError(fmt::format("{} {}: cannot open: {}", what, path.string(), std::strerror(errno)));
  // The name may have been swapped for something else between the stat and the open: judge what was opened.
  if (::fstat(fd_, &st) != 0 || !S_ISREG(st.st_mode)) {
    const mode_t mode = st.st_mode;
    ::close(fd_);
    fd_ = -1;
    throw InputError(fmt::format("{} {}: is {}, not a regular file", what, path.string(), describe_file_type(mode)));
  }
  ::fcntl(fd_, F_SETFL, ::fcntl(fd_, F_GETFL) & ~O_NONBLOCK);
  size_ = static_cast<std::uint64_t>(st.st_size);
  note_input_id(path, st);
}

InputFile::~InputFile() {
  if (fd_ >= 0) ::close(fd_);
}

int InputFile::release() {
  const int fd = fd_;
  fd_ = -1;
  return fd;
}

std::string InputFile::read_at(std::uint64_t offset, std::uint64_t n) {
  if (offset > size_ || n > size_ - offset)
    throw InputError(fmt::format("{} {}: ends at byte {}, before the {} bytes at byte {}", what_, path_.string(), size_, n, offset));
  std::string out(static_cast<std::size_t>(n), '\0');
  std::uint64_t got = 0;
  while (got < n) {
    const ssize_t r = ::pread(fd_, out.data() + got, n - got, static_cast<off_t>(offset + got));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0)
      throw InputError(fmt::format("{} {}: cannot read at byte {}: {}", what_, path_.string(), offset + got, r < 0 ? std::strerror(errno) : "the file shrank"));
    got += static_cast<std::uint64_t>(r);
  }
  return out;
}

std::string InputFile::read_rest(std::uint64_t max_bytes) {
  const auto too_big = [&](std::uint64_t n, bool at_least) {
    return InputError(fmt::format("{} {}: {}{}, more than the {} it may hold", what_, path_.string(), at_least ? "at least " : "",
                                  bytes_text(n), bytes_text(max_bytes)));
  };
  if (size_ > max_bytes) throw too_big(size_, false);
  std::string out;
  out.resize(static_cast<std::size_t>(size_));
  std::size_t got = 0;
  for (;;) {
    if (got == out.size()) {
      if (got >= max_bytes) {
        // Full to the cap: one more byte says whether the file grew past it.
        char probe = 0;
        ssize_t r = 0;
        do r = ::read(fd_, &probe, 1);
        while (r < 0 && errno == EINTR);
        if (r > 0) throw too_big(got + 1, true);
        break;
      }
      out.resize(static_cast<std::size_t>(std::min<std::uint64_t>(max_bytes, std::max<std::uint64_t>(got * 2, got + 65536))));
    }
    const ssize_t r = ::read(fd_, out.data() + got, out.size() - got);
    if (r < 0) {
      if (errno == EINTR) continue;
      throw InputError(fmt::format("{} {}: cannot read: {}", what_, path_.string(), std::strerror(errno)));
    }
    if (r == 0) break;
    got += static_cast<std::size_t>(r);
  }
  out.resize(got);
  return out;
}

std::string read_all(const fs::path& path, std::string_view what, std::uint64_t max_bytes) {
  InputFile f(path, what);
  return f.read_rest(max_bytes);
}

void check_input(const fs::path& path, std::string_view what) { InputFile f(path, what); }

void note_input(const fs::path& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0) {
    note_input_id(path, st);
    return;
  }
  RunFiles& r = run_files();
  const std::lock_guard<std::mutex> lock(r.mu);
  r.input_paths.insert(resolved(path));
}

void forget_run_files() {
  RunFiles& r = run_files();
  const std::lock_guard<std::mutex> lock(r.mu);
  r.input_ids.clear();
  r.input_paths.clear();
  r.outputs.clear();
}

// ---- outputs ----

fs::path check_output(const fs::path& path, const OutputSpec& spec) {
  const std::string named = path.string();
  const auto refuse = [&](const std::string& why) { return InputError(fmt::format("{} {}: {}", spec.flag, named, why)); };
  if (path.empty()) throw InputError(fmt::format("{}: an empty path", spec.flag));
  struct stat lst {};
  fs::path target = path;
  if (::lstat(path.c_str(), &lst) == 0 && S_ISLNK(lst.st_mode)) {
    // Follow the link: the link stays, and what it points to is the file replaced (or refused).
    std::error_code ec;
    const fs::path real = fs::canonical(path, ec);
    if (ec) throw refuse("a symbolic link to nothing (a file that does not exist or cannot be reached); refusing to replace the link");
    target = real;
  }
  struct stat st {};
  const bool exists = ::stat(target.c_str(), &st) == 0;
  const std::string key = resolved(target);
  {
    RunFiles& r = run_files();
    const std::lock_guard<std::mutex> lock(r.mu);
    if ((exists && r.input_ids.count({st.st_dev, st.st_ino})) || r.input_paths.count(key))
      throw refuse("is one of this run's inputs; refusing to write over it (name another output)");
    const auto other = r.outputs.find(key);
    if (other != r.outputs.end() && other->second != spec.flag)
      throw refuse(fmt::format("is also this run's {} output; name two different files", other->second));
  }
  if (exists) {
    if (!S_ISREG(st.st_mode))
      throw refuse(fmt::format("is {}; gpuvs writes only regular files (name a file)", describe_file_type(st.st_mode)));
    if (!spec.force) {
      if (st.st_nlink > 1)
        throw refuse(fmt::format("has {} hard links; replacing it would split them (--force replaces this name only)",
                                 static_cast<unsigned long long>(st.st_nlink)));
      if (::access(target.c_str(), W_OK) != 0) throw refuse("is read-only for this user (--force replaces it)");
      if (st.st_size > 0 && head_of(target, 4096).find(spec.signature) == std::string::npos)
        throw refuse(fmt::format("exists and is not a gpuvs {}; refusing to replace it (--force does)", spec.kind));
    }
  }
  const fs::path dir = target.parent_path().empty() ? fs::path(".") : target.parent_path();
  struct stat dst {};
  if (::stat(dir.c_str(), &dst) != 0) throw refuse(fmt::format("its folder {} does not exist", dir.string()));
  if (!S_ISDIR(dst.st_mode)) throw refuse(fmt::format("{} is {}, not a folder", dir.string(), describe_file_type(dst.st_mode)));
  if (::access(dir.c_str(), W_OK | X_OK) != 0) throw refuse(fmt::format("its folder {} is not writable", dir.string()));
  RunFiles& r = run_files();
  const std::lock_guard<std::mutex> lock(r.mu);
  r.outputs[key] = spec.flag;
  return target;
}

void write_output(const fs::path& path, const OutputSpec& spec, std::string_view bytes) {
  const fs::path target = check_output(path, spec);
  struct stat st {};
  std::optional<mode_t> mode;
  if (::stat(target.c_str(), &st) == 0) mode = st.st_mode & 07777;
  write_atomic(target, bytes, mode);
  // As root, the replaced file keeps its owner too (a file in a user's folder stays the user's).
  if (mode && ::geteuid() == 0 && (st.st_uid != 0 || st.st_gid != 0)) {
    if (::chown(target.c_str(), st.st_uid, st.st_gid) != 0) {
      // Not fatal: the contents are written; the owner is root's, which root can fix.
    }
  }
}

void write_atomic(const fs::path& path, std::string_view bytes, std::optional<mode_t> mode) {
  const fs::path dir = path.parent_path();
  remove_stale_temps(path);
  std::string tmpl = (dir.empty() ? fs::path(".") : dir) / fmt::format("{}{}.{}.XXXXXX", temp_prefix(path), host_name(), ::getpid());
  const int fd = ::mkstemp(tmpl.data());
  if (fd < 0) throw InputError(fmt::format("cannot write {}: {}", path.string(), std::strerror(errno)));
  if (!mode) {
    // mkstemp makes the file private (0600); give it the permissions an ordinary new file gets (umask).
    const mode_t mask = ::umask(0);
    ::umask(mask);
    mode = static_cast<mode_t>(0666 & ~mask);
  }
  ::fchmod(fd, *mode);
  std::size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      const int err = errno;
      ::close(fd);
      ::unlink(tmpl.c_str());
      throw RuntimeFailure(fmt::format("writing {} failed: {}", path.string(), std::strerror(err)));
    }
    done += static_cast<std::size_t>(n);
  }
  if (::fsync(fd) != 0 || ::close(fd) != 0) {
    const int err = errno;
    ::unlink(tmpl.c_str());
    throw RuntimeFailure(fmt::format("flushing {} failed: {}", path.string(), std::strerror(err)));
  }
  if (::rename(tmpl.c_str(), path.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmpl.c_str());
    throw RuntimeFailure(fmt::format("renaming into {} failed: {}", path.string(), std::strerror(err)));
  }
  fsync_dir(dir);
}

void ensure_writable_dir(const fs::path& dir, std::string_view what) {
  std::error_code ec;
  // Find the deepest existing ancestor first so a failure creates nothing.
  fs::path existing = dir;
  while (!existing.empty() && !fs::exists(existing, ec)) existing = existing.parent_path();
  if (existing.empty()) existing = ".";
  if (!fs::is_directory(existing, ec))
    throw InputError(fmt::format("{} {}: {} is not a directory", what, dir.string(), existing.string()));
  if (::access(existing.c_str(), W_OK | X_OK) != 0)
    throw InputError(fmt::format("{} {}: directory {} is not writable", what, dir.string(), existing.string()));
  fs::create_directories(dir, ec);
  if (ec) throw InputError(fmt::format("{} {}: cannot create directory: {}", what, dir.string(), ec.message()));
  if (::access(dir.c_str(), W_OK | X_OK) != 0)
    throw InputError(fmt::format("{} {}: directory is not writable", what, dir.string()));
}

}  // namespace gpuvs::files
