// gpuvs: measure the hardware you have, predict the hardware you don't, decide, and show it.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <map>

#include "cli/commands.hpp"
#include "core/error.hpp"
#include "engine/cuda/cuda_build.hpp"
#include "gpuvs_revision.hpp"

int main(int argc, char** argv) {
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
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    fmt::print(stderr, "gpuvs: error: {} (see gpuvs --help)\n", e.what());
    return static_cast<int>(gpuvs::ExitCode::bad_input);
  }
  try {
    for (auto* sub : app.get_subcommands()) return runners.at(sub)();
    return static_cast<int>(gpuvs::ExitCode::bad_input);
  } catch (const std::exception& e) {
    fmt::print(stderr, "gpuvs: error: {}\n", e.what());
    return static_cast<int>(gpuvs::exit_code_for(e));
  }
}
