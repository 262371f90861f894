// File-system helpers with the project's error conventions: atomic replacement and writability checks.
#pragma once
#include <filesystem>
#include <string>
#include <string_view>

namespace gpuvs::files {

/// Writes `bytes` to `path` atomically: a temporary file in the same folder, fsync, rename, fsync of the
/// folder. Readers see the old file or the new one, never a torn one. Throws InputError if the folder
/// cannot be written.
void write_atomic(const std::filesystem::path& path, std::string_view bytes);

/// Creates `dir` (and parents) if needed and proves it writable by creating and removing a probe file.
/// Throws InputError naming `what` (e.g. "--logdir") and the reason. Creates nothing if it fails.
void ensure_writable_dir(const std::filesystem::path& dir, std::string_view what);

/// Whole file as bytes; InputError naming `what` when it cannot be read.
std::string read_all(const std::filesystem::path& path, std::string_view what);

}  // namespace gpuvs::files
