#include "core/files.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "core/error.hpp"

namespace gpuvs::files {

namespace fs = std::filesystem;

namespace {
void fsync_dir(const fs::path& dir) {
  const int fd = ::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY);
  if (fd >= 0) {
    ::fsync(fd);
    ::close(fd);
  }
}
}  // namespace

void write_atomic(const fs::path& path, std::string_view bytes) {
  const fs::path dir = path.parent_path();
  std::string tmpl = (dir.empty() ? fs::path(".") : dir) / fmt::format(".{}.tmp.XXXXXX", path.filename().string());
  const int fd = ::mkstemp(tmpl.data());
  if (fd < 0) throw InputError(fmt::format("cannot write {}: {}", path.string(), std::strerror(errno)));
  // mkstemp makes the file private (0600); give it the permissions an ordinary new file gets (umask).
  const mode_t mask = ::umask(0);
  ::umask(mask);
  ::fchmod(fd, static_cast<mode_t>(0666 & ~mask));
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

std::string read_all(const fs::path& path, std::string_view what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(fmt::format("{} {}: cannot open file: {}", what, path.string(), std::strerror(errno)));
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace gpuvs::files
