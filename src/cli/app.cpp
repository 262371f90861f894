// SPDX-License-Identifier: Apache-2.0
#include "cli/app.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <memory>

#include "cli/output.hpp"
#include "core/error.hpp"
#include "core/files.hpp"
#include "core/strings.hpp"
#include "engine/cuda/cuda_build.hpp"
#include "import/held_models.hpp"
#include "gpuvs_revision.hpp"

namespace gpuvs::cli {

std::map<CLI::App*, Runner> build_app(CLI::App& app) {
  app.description("gpuvs: which accelerator should run your model, how fast, will it fit, what will it cost");
  app.name("gpuvs");
  app.set_version_flag("--version", fmt::format("gpuvs {} (git {}; cuda: {})", GPUVS_VERSION, GPUVS_GIT_REVISION,
                                                engine::cuda::build_info()));
  app.require_subcommand(1);
  std::map<CLI::App*, Runner> runners;
  auto add = [&](Runner (*fn)(CLI::App&)) {
    const std::size_t before = app.get_subcommands({}).size();
    auto runner = fn(app);
    runners[app.get_subcommands({}).at(before)] = std::move(runner);
  };
  for (auto fn : {add_train_command, add_graph_command, add_catalog_command, add_predict_command, add_validate_command,
                  add_compare_command, add_devices_command, add_bench_command, add_advise_command, add_evaluate_command,
                  add_history_command, add_diff_command, add_report_command, add_workloads_command, add_calibrate_command,
                  add_completion_command, add_man_command})  // completion and man read the tree: registered last
    add(fn);
  return runners;
}

std::string unknown_command_error(CLI::App& app, const std::string& first) {
  if (first.empty() || first[0] == '-') return {};
  std::vector<std::string> names;
  for (const auto* sub : app.get_subcommands({})) names.push_back(sub->get_name());
  if (std::find(names.begin(), names.end(), first) != names.end()) return {};
  return fmt::format("'{}' is not a gpuvs command; did you mean {}? (see gpuvs --help)", strings::printable(first),
                     strings::join(strings::closest(first, names, 2), " or "));
}

nlohmann::json run_json(const std::vector<std::string>& args, const std::map<std::string, std::string>& held_models) {
  std::vector<std::unique_ptr<import::HeldModel>> held;
  for (const auto& [name, bytes] : held_models) held.push_back(std::make_unique<import::HeldModel>(name, bytes));
  CLI::App app;
  auto runners = build_app(app);
  if (args.empty()) throw InputError("no command given (see gpuvs --help)");
  if (const std::string e = unknown_command_error(app, args[0]); !e.empty()) throw InputError(e);
  // The innermost command the words name ("catalog show"): one that prints no JSON document is said as such.
  auto child = [](CLI::App* parent, const std::string& name) -> CLI::App* {
    for (CLI::App* sub : parent->get_subcommands({}))
      if (sub->check_name(name)) return sub;
    return nullptr;
  };
  CLI::App* inner = child(&app, args[0]);
  std::string named = args[0];
  for (std::size_t i = 1; i < args.size() && args[i] != "--"; ++i)
    if (CLI::App* sub = child(inner, args[i])) inner = sub, named += " " + args[i];
  if (!inner->get_option_no_throw("--json"))
    throw InputError(fmt::format("gpuvs {} prints no JSON document: run it from the command line", strings::printable(named)));
  // --json goes before a "--" (after it, it would be a positional argument). CLI11 parses a vector reversed.
  std::vector<std::string> forward = args;
  const auto dashes = std::find(forward.begin(), forward.end(), "--");
  const bool help = std::find(forward.begin(), dashes, "--help") != dashes || std::find(forward.begin(), dashes, "-h") != dashes;
  if (!help) forward.insert(dashes, "--json");
  std::vector<std::string> reversed(forward.rbegin(), forward.rend());
  try {
    app.parse(reversed);
  } catch (const CLI::CallForHelp&) {
    // The innermost command parsed, its usage line led by the commands above it ("gpuvs catalog show"), as main prints it.
    CLI::App* at = &app;
    std::string above;
    while (!at->get_subcommands().empty()) {
      above += (above.empty() ? "" : " ") + at->get_name();
      at = at->get_subcommands().front();
    }
    return at->help(above);
  } catch (const CLI::CallForAllHelp&) {
    return app.help("", CLI::AppFormatMode::All);
  } catch (const CLI::CallForVersion&) {
    return app.version();
  } catch (const CLI::ParseError& e) {
    throw InputError(fmt::format("{} (see gpuvs --help)", e.what()));
  }
  files::forget_run_files();  // each call is a run of its own: the last call's inputs are not this one's
  JsonCapture capture;
  for (auto* sub : app.get_subcommands()) {
    const int code = runners.at(sub)();
    if (code != 0) throw RuntimeFailure(fmt::format("gpuvs {} ended with exit code {}", sub->get_name(), code));
    if (capture.docs().empty()) throw InputError(fmt::format("gpuvs {} prints no JSON document", sub->get_name()));
    if (capture.docs().size() == 1) return capture.docs().front();
    return nlohmann::json(capture.docs());
  }
  throw InputError("no command given (see gpuvs --help)");
}

}  // namespace gpuvs::cli
