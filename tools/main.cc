// The `nuvec` command: parses the command line, runs the chosen subcommand,
// and turns any error into one line on stderr and exit status 1.
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include <fmt/core.h>

#include "command.h"

#ifndef NUVEC_VERSION
#define NUVEC_VERSION "unknown"
#endif

int main(int argc, char** argv) {
  CLI::App app{"nuvec: a caching device-memory allocator with hard limits, wiring and\n"
               "zero-copy file mappings. This command shows what it does and what it holds.",
               "nuvec"};
  app.set_version_flag("--version", "nuvec " NUVEC_VERSION);
  app.require_subcommand(1);
  app.footer(std::string{nuvec::tool::kEnvironmentHelp} +
             "\n\nRun `nuvec <command> --help` for what a command does and its options.");
  // Usage errors read like every other error; exit status 2, as is customary.
  app.failure_message([](const CLI::App*, const CLI::Error& e) {
    return fmt::format("nuvec: error: {}\nRun `nuvec --help` for usage.\n", e.what());
  });

  std::vector<nuvec::tool::Command> commands = {
      nuvec::tool::add_stats_command(app),
      nuvec::tool::add_demo_command(app),
      nuvec::tool::add_inspect_command(app),
      nuvec::tool::add_align_command(app),
      nuvec::tool::add_replay_command(app),
      nuvec::tool::add_plot_command(app),
      nuvec::tool::add_export_command(app),
      nuvec::tool::add_demo_model_command(app),
      nuvec::tool::add_run_command(app),
      nuvec::tool::add_tokenize_command(app),
      nuvec::tool::add_chat_command(app),
      nuvec::tool::add_profile_command(app),
      nuvec::tool::add_profile_phase_command(app),
  };

  // CLI11 would call an unknown command a missing one; name it instead.
  if (argc > 1 && argv[1][0] != '-') {
    std::string names;
    bool known = false;
    for (const auto& command : commands) {
      known = known || command.app->get_name() == argv[1];
      names += (names.empty() ? "" : ", ") + command.app->get_name();
    }
    if (!known) {
      fmt::print(stderr, "nuvec: error: unknown command '{}' (commands: {})\nRun `nuvec --help` for usage.\n",
                 argv[1], names);
      return 2;
    }
  }

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int status = app.exit(e);  // prints the help, the version or the usage error
    return status == 0 ? 0 : 2;
  }

  try {
    for (const auto& command : commands) {
      if (command.app->parsed()) return command.run();
    }
  } catch (const std::exception& e) {
    std::fflush(stdout);
    fmt::print(stderr, "nuvec: error: {}\n", e.what());
    return 1;
  } catch (...) {
    std::fflush(stdout);
    fmt::print(stderr, "nuvec: error: unknown exception\n");
    return 1;
  }
  return 1;  // unreachable: require_subcommand(1)
}
