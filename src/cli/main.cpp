// SPDX-License-Identifier: Apache-2.0
// gpuvs: measure the hardware you have, predict the hardware you don't, decide, and show it.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "cli/app.hpp"
#include "core/error.hpp"
#include "dist/world.hpp"
#include "gpuvs_revision.hpp"

namespace {

int run(int argc, char** argv) {
  // Under MPI every rank must run the same build with the same command: checked before anything else.
  const gpuvs::dist::World& world = gpuvs::dist::world();
  const bool quiet = world.rank != 0;  // ranks other than 0 report through rank 0
  if (world.size > 1) {
    std::string fingerprint = fmt::format("gpuvs {} (git {})", GPUVS_VERSION, GPUVS_GIT_REVISION);
    for (int i = 1; i < argc; ++i) fingerprint += std::string(" ") + argv[i];
    try {
      gpuvs::dist::check_same_job(fingerprint);
    } catch (const gpuvs::JobError& e) {
      if (!quiet) fmt::print(stderr, "gpuvs: error: {}\n", e.what());
      return static_cast<int>(gpuvs::ExitCode::bad_input);
    }
  }
  CLI::App app;
  std::map<CLI::App*, gpuvs::cli::Runner> runners = gpuvs::cli::build_app(app);
  // A mistyped command ("comapre") is named with the nearest ones, not only "a subcommand is required".
  if (argc > 1) {
    if (const std::string e = gpuvs::cli::unknown_command_error(app, argv[1]); !e.empty()) {
      if (!quiet) fmt::print(stderr, "gpuvs: error: {}\n", e);
      return static_cast<int>(gpuvs::ExitCode::bad_input);
    }
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return quiet ? 0 : app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return quiet ? 0 : app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return quiet ? 0 : app.exit(e);
  } catch (const CLI::ParseError& e) {  // every rank parsed the same command: rank 0 says it
    if (!quiet) fmt::print(stderr, "gpuvs: error: {} (see gpuvs --help)\n", e.what());
    return static_cast<int>(gpuvs::ExitCode::bad_input);
  }
  // train, bench and evaluate run on every rank together; any other command is one process's work.
  static const std::set<std::string> kDistributed = {"train", "bench", "evaluate"};
  try {
    for (auto* sub : app.get_subcommands()) {
      if (world.size > 1 && quiet && !kDistributed.count(sub->get_name())) return 0;
      // Processes started by a launcher gpuvs cannot join would each train, measure or evaluate alone, and write the
      // same checkpoint, history and report: refused on every one, said once.
      bool rank0 = false;
      if (const std::string launch = gpuvs::dist::foreign_launch(&rank0); !launch.empty() && kDistributed.count(sub->get_name())) {
        if (rank0)
          fmt::print(stderr, "gpuvs: error: gpuvs {} was launched by {}: gpuvs's processes find each other through MPI; "
                             "launch it with mpirun -np N or srun (one process needs no launcher)\n", sub->get_name(), launch);
        return static_cast<int>(gpuvs::ExitCode::bad_input);
      }
      return runners.at(sub)();
    }
    return static_cast<int>(gpuvs::ExitCode::bad_input);
  } catch (const gpuvs::JobError& e) {
    if (!quiet) fmt::print(stderr, "gpuvs: error: {}\n", e.what());
    return static_cast<int>(gpuvs::ExitCode::bad_input);
  } catch (const std::exception& e) {
    const int code = static_cast<int>(gpuvs::exit_code_for(e));
    // A rank that fails alone must not leave the others waiting: it names itself and ends the job.
    if (world.size > 1) gpuvs::dist::fail_job(e.what(), code);
    fmt::print(stderr, "gpuvs: error: {}\n", e.what());
    return code;
  }
}

}  // namespace

int main(int argc, char** argv) {
  gpuvs::dist::init(argc, argv);
  const int code = run(argc, argv);
  gpuvs::dist::finalize();
  return code;
}
