// SPDX-License-Identifier: Apache-2.0
// Error kinds and the exit codes they map to: 0 ok, 1 runtime failure, 2 bad usage or input.
#pragma once
#include <stdexcept>
#include <string>

namespace gpuvs {

enum class ExitCode : int { ok = 0, runtime_failure = 1, bad_input = 2 };

/// The user gave something wrong (argument, file content, id). Message is one line: what, where, what is right.
/// The line is kept one by construction: a control character in it (a newline quoted from a file, say) is
/// written as \xNN, so a call site that forgets strings::printable cannot break the rule.
class InputError : public std::runtime_error {
 public:
  explicit InputError(const std::string& what);
  explicit InputError(const char* what) : InputError(std::string(what)) {}
};

/// A bad input every rank of an MPI job finds together (a launch that mixes builds or commands): rank 0
/// reports it, every rank exits 2.
class JobError : public InputError {
 public:
  using InputError::InputError;
};

/// Something failed while doing valid work (I/O error, numeric failure). Exit code 1.
class RuntimeFailure : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Maps an exception to its exit code (InputError -> 2, everything else -> 1).
ExitCode exit_code_for(const std::exception& e) noexcept;

}  // namespace gpuvs
