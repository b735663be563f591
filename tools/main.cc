// The `nuvec` command: parses the command line, runs the chosen subcommand,
// and turns any error into one line on stderr and exit status 1.
#include <algorithm>
#include <cstdio>
#include <exception>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/core.h>

#include "command.h"
#include "nuvec/error.h"

#ifndef NUVEC_VERSION
#define NUVEC_VERSION "unknown"
#endif

namespace {

std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = up;
    }
  }
  return row[b.size()];
}

// For a flag the command does not have, the one it most likely meant:
// " (did you mean --max-new?)", or nothing when none is close.
std::string did_you_mean(const CLI::App& app, int argc, char** argv) {
  const CLI::App* command = &app;
  for (const CLI::App* sub : app.get_subcommands()) command = sub;  // the one that was being parsed
  std::vector<std::string> names;
  for (const CLI::Option* o : command->get_options()) {
    for (const std::string& n : o->get_lnames()) names.push_back(n);
  }
  std::string out;
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    if (!arg.starts_with("--") || arg.size() < 3) continue;
    arg = arg.substr(2, arg.find('=') == std::string_view::npos ? std::string_view::npos : arg.find('=') - 2);
    if (std::find(names.begin(), names.end(), arg) != names.end()) continue;
    const std::string* best = nullptr;
    std::size_t best_distance = std::max<std::size_t>(2, arg.size() / 3) + 1;
    for (const std::string& n : names) {
      const std::size_t d = n.starts_with(arg) ? 1 : edit_distance(arg, n);
      if (d < best_distance) best = &n, best_distance = d;
    }
    if (best != nullptr) out += fmt::format(" (--{}: did you mean --{}?)", arg, *best);
  }
  return out;
}

}  // namespace

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
      nuvec::tool::add_roofline_command(app),
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
    // A mistyped flag: CLI11 reports it as an extra argument, or as the
    // positional MODEL its value was then taken for; name the flag meant.
    const std::string hint = e.get_exit_code() == 0 ? std::string() : did_you_mean(app, argc, argv);
    if (hint.empty()) return app.exit(e) == 0 ? 0 : 2;  // prints the help, the version or the usage error
    const CLI::App* command = &app;
    for (const CLI::App* sub : app.get_subcommands()) command = sub;
    fmt::print(stderr, "nuvec: error: {}{}\nRun `{} --help` for usage.\n", e.what(), hint,
               command == &app ? std::string("nuvec") : "nuvec " + command->get_name());
    return 2;
  }

  try {
    for (const auto& command : commands) {
      if (command.app->parsed()) return command.run();
    }
  } catch (const nuvec::OutOfMemory& e) {
    // The library's message names the API call; a command-line user changes a flag or the variable.
    std::fflush(stdout);
    fmt::print(stderr,
               "nuvec: error: {}\n  From the command line: --memory-limit SIZE (or NUVEC_MEMORY_LIMIT=SIZE) sets the "
               "limit; --context, --prefill-chunk and --max-new ask for less.\n",
               e.what());
    return 1;
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
