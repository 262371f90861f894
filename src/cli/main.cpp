// gpuvs: measure the hardware you have, predict the hardware you don't, decide, and show it.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "cli/commands.hpp"
#include "core/error.hpp"
#include "core/strings.hpp"
#include "dist/world.hpp"
#include "engine/cuda/cuda_build.hpp"
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
  CLI::App app{"gpuvs: which accelerator should run your model, how fast, will it fit, what will it cost"};
  app.name("gpuvs");
  app.set_version_flag("--version", fmt::format("gpuvs {} (git {}; cuda: {})", GPUVS_VERSION, GPUVS_GIT_REVISION,
                                                gpuvs::engine::cuda::build_info()));
  app.require_subcommand(1);
  std::map<CLI::App*, gpuvs::cli::Runner> runners;
  auto add = [&](gpuvs::cli::Runner (*fn)(CLI::App&)) {
    const std::size_t before = app.get_subcommands({}).size();
    auto runner = fn(app);
    runners[app.get_subcommands({}).at(before)] = std::move(runner);
  };
  add(gpuvs::cli::add_train_command);
  add(gpuvs::cli::add_graph_command);
  add(gpuvs::cli::add_catalog_command);
  add(gpuvs::cli::add_predict_command);
  add(gpuvs::cli::add_validate_command);
  add(gpuvs::cli::add_compare_command);
  add(gpuvs::cli::add_devices_command);
  add(gpuvs::cli::add_bench_command);
  add(gpuvs::cli::add_advise_command);
  add(gpuvs::cli::add_evaluate_command);
  add(gpuvs::cli::add_history_command);
  add(gpuvs::cli::add_diff_command);
  add(gpuvs::cli::add_report_command);
  add(gpuvs::cli::add_workloads_command);
  add(gpuvs::cli::add_calibrate_command);
  add(gpuvs::cli::add_completion_command);
  add(gpuvs::cli::add_man_command);
  // A mistyped command ("comapre") is named with the nearest ones, not only "a subcommand is required".
  if (argc > 1 && argv[1][0] != '-') {
    std::vector<std::string> names;
    for (const auto* sub : app.get_subcommands({})) names.push_back(sub->get_name());
    if (std::find(names.begin(), names.end(), argv[1]) == names.end()) {
      if (!quiet)
        fmt::print(stderr, "gpuvs: error: '{}' is not a gpuvs command; did you mean {}? (see gpuvs --help)\n", gpuvs::strings::printable(argv[1]),
                   gpuvs::strings::join(gpuvs::strings::closest(argv[1], names, 2), " or "));
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
