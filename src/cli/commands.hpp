// SPDX-License-Identifier: Apache-2.0
// Subcommand registration. Each command adds itself to the CLI11 app and returns the function that runs it.
#pragma once
#include <CLI/CLI.hpp>
#include <functional>

namespace gpuvs::cli {

using Runner = std::function<int()>;

Runner add_train_command(CLI::App& app);
Runner add_graph_command(CLI::App& app);
Runner add_catalog_command(CLI::App& app);
Runner add_predict_command(CLI::App& app);
Runner add_validate_command(CLI::App& app);
Runner add_compare_command(CLI::App& app);
Runner add_devices_command(CLI::App& app);
Runner add_bench_command(CLI::App& app);
Runner add_advise_command(CLI::App& app);
Runner add_evaluate_command(CLI::App& app);
Runner add_history_command(CLI::App& app);
Runner add_diff_command(CLI::App& app);
Runner add_report_command(CLI::App& app);
Runner add_workloads_command(CLI::App& app);
Runner add_calibrate_command(CLI::App& app);
/// `gpuvs completion bash|zsh` and `gpuvs man`: generated from the command tree `app` holds when they run (register last).
Runner add_completion_command(CLI::App& app);
Runner add_man_command(CLI::App& app);

}  // namespace gpuvs::cli
