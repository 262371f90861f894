// SPDX-License-Identifier: Apache-2.0
// The gpuvs command tree: what main parses argv against, and what a program embedding gpuvs (the Python module,
// src/python) runs in its own process, so that both answer a question with the same code, defaults and errors.
#pragma once
#include <CLI/CLI.hpp>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli/commands.hpp"

namespace gpuvs::cli {

/// Sets up `app` as the gpuvs root (name, description, --version, one subcommand required), registers every
/// subcommand and returns the function that runs each.
std::map<CLI::App*, Runner> build_app(CLI::App& app);

/// The one-line error for a first argument that names no command of `app` ("'comapre' is not a gpuvs command; did
/// you mean compare? ..."), or empty when `first` is an option or a command.
std::string unknown_command_error(CLI::App& app, const std::string& first);

/// Runs `gpuvs ARGS... --json` in this process (a world of one: no MPI) and returns the JSON document the command
/// prints; for --help, the help text as a JSON string. The run follows every rule the command line does (the file
/// policy, the defaults, what it prints to stderr). Errors are thrown as the command line would report them:
/// InputError (exit 2) with the line it prints after "gpuvs: error: ", including a bad command line; anything else
/// as thrown (exit 1). A command that prints no JSON (report, completion) is an InputError naming it. One call at a
/// time: commands keep process-wide state (the active constants, this run's input files).
/// `held_models` (name -> bytes) are models the caller holds in memory (import/held_models.hpp) for this run: a
/// command names one as it would a model file (`--workload torch:Net.onnx`).
nlohmann::json run_json(const std::vector<std::string>& args, const std::map<std::string, std::string>& held_models = {});

}  // namespace gpuvs::cli
