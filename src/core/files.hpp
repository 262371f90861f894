// SPDX-License-Identifier: Apache-2.0
// The file policy every reader and writer follows, with the project's error conventions.
//
// Inputs: a regular file only (a FIFO, device, socket or directory is refused before it is opened, and the open
// does not block), read with a size cap, and noted as one of this run's inputs.
// Outputs: replaced atomically, and only when the target is a regular file that is not one of this run's inputs,
// that this writer recognises as its own (or --force), and that has no other hard link (or --force); the target's
// mode is kept; a symbolic link is followed, so the link stays and its target is replaced.
#pragma once
#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

namespace gpuvs::files {

/// Most bytes a text input (a model file, scenario, catalog, bench record, constants or validation file) may hold:
/// far above any real one, and what stops a link to /dev/zero-like content or a giant file being read without end.
inline constexpr std::uint64_t kMaxTextBytes = std::uint64_t{64} << 20;

// ---- inputs ----

/// A regular file opened for reading under the input policy. Anything else at `path` (FIFO, character or block
/// device, socket, directory; a link is followed first) is an InputError "WHAT PATH: is a FIFO, not a regular file",
/// checked before the open, and the open itself is non-blocking, so no input can hang the run. The file is noted as
/// one of this run's inputs (see note_input).
class InputFile {
 public:
  InputFile(const std::filesystem::path& path, std::string_view what);
  ~InputFile();
  InputFile(const InputFile&) = delete;
  InputFile& operator=(const InputFile&) = delete;

  int fd() const { return fd_; }
  /// Size when opened.
  std::uint64_t size() const { return size_; }
  const std::filesystem::path& path() const { return path_; }
  /// The rest of the file from the current offset; InputError naming the file when it holds more than `max_bytes`
  /// (checked against its size before reading, and while reading, for a file that grows).
  std::string read_rest(std::uint64_t max_bytes);
  /// Exactly `n` bytes from `offset` (the header of a file too large to read whole); InputError naming the file
  /// when it ends before them.
  std::string read_at(std::uint64_t offset, std::uint64_t n);
  /// Gives the descriptor to a library that closes it itself (gzdopen, zip_fdopen); -1 afterwards.
  int release();

 private:
  std::filesystem::path path_;
  std::string what_;
  int fd_ = -1;
  std::uint64_t size_ = 0;
};

/// Whole file under the input policy; InputError naming `what` when it cannot be read, is not a regular file, or
/// holds more than `max_bytes`.
std::string read_all(const std::filesystem::path& path, std::string_view what, std::uint64_t max_bytes = kMaxTextBytes);

/// Checks `path` under the input policy (a regular file; InputError otherwise, naming `what`) and notes it as an
/// input, for libraries that open files themselves (SQLite).
void check_input(const std::filesystem::path& path, std::string_view what);

/// Notes `path` as one of this run's inputs, whether or not it exists yet (a history a run will create): an output
/// that resolves to it is refused. Compared by device and inode when it exists, by its resolved path otherwise.
void note_input(const std::filesystem::path& path);

/// Forgets the inputs noted so far: for a process that runs several jobs in turn (the tests).
void forget_run_files();

// ---- outputs ----

/// A writer, as the output policy sees it.
struct OutputSpec {
  std::string flag;       // the option that names the output ("--report"), for messages
  std::string kind;       // what the writer writes ("HTML report"), for messages
  std::string signature;  // text every file this writer writes holds in its first 4 KiB: how it knows its own
  bool force = false;     // --force: replace a file without the signature, unwritable, or with other hard links
};

/// Checks that `spec` may write `path` and returns the file it would replace or create (the target when `path` is a
/// symbolic link). Refused with an InputError naming the flag and the path: a directory, a special file (FIFO,
/// device, socket), a dangling link, one of this run's inputs or another output of this run, a folder that cannot be
/// written, and unless spec.force: an existing file without the signature, one this user may not write, or one with
/// other hard links (replacing it would split them). Nothing is written.
std::filesystem::path check_output(const std::filesystem::path& path, const OutputSpec& spec);

/// check_output, then write_atomic to the file it returns, keeping an existing file's mode (and, as root, owner).
void write_output(const std::filesystem::path& path, const OutputSpec& spec, std::string_view bytes);

/// Writes `bytes` to `path` atomically: a temporary file in the same folder, fsync, rename, fsync of the folder.
/// Readers see the old file or the new one, never a torn one. The new file gets `mode` (default: what an
/// ordinary new file gets under the umask). Temporary files that earlier runs killed midway left for this path
/// (".NAME.gpuvs-tmp.HOST.PID.XXXXXX" of a process no longer running on this host) are removed first. No policy
/// check: for gpuvs's own files in folders it owns (checkpoints); everything a user names goes through write_output.
void write_atomic(const std::filesystem::path& path, std::string_view bytes, std::optional<mode_t> mode = std::nullopt);

/// Creates `dir` (and parents) if needed and proves it writable by creating and removing a probe file.
/// Throws InputError naming `what` (e.g. "--logdir") and the reason. Creates nothing if it fails; refuses a path
/// that is a file or a special file.
void ensure_writable_dir(const std::filesystem::path& dir, std::string_view what);

/// "a FIFO", "a directory", "a character device", ... for a stat mode: what a message calls the thing at a path.
std::string describe_file_type(mode_t mode);

}  // namespace gpuvs::files
