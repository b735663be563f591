// `nuvec plot TRACE -o timeline.png`: the timeline picture of a trace, drawn
// by tools/plot_trace.py (matplotlib, from Debian's python3-matplotlib).
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "command.h"
#include "nuvec/error.h"

#ifndef NUVEC_SOURCE_DIR
#define NUVEC_SOURCE_DIR "."
#endif

namespace nuvec::tool {
namespace {

struct PlotOptions {
  std::string trace;
  std::string output;
  std::string x = "events";
  std::string title;
};

// The script beside the sources this binary was built from, or
// NUVEC_PLOT_SCRIPT where it has moved.
std::filesystem::path plot_script() {
  if (const char* path = std::getenv("NUVEC_PLOT_SCRIPT")) return path;
  return std::filesystem::path(NUVEC_SOURCE_DIR) / "tools" / "plot_trace.py";
}

}  // namespace

Command add_plot_command(CLI::App& parent) {
  auto options = std::make_shared<PlotOptions>();
  CLI::App* app = parent.add_subcommand("plot", "Draw a trace's memory timeline as a picture");
  app->footer(
      "Stacked active, cache and mapped bytes over the trace (or live bytes, for traces\n"
      "converted from PyTorch), wired and the memory limit as lines, phases (marks)\n"
      "shaded and labelled, refusals marked, the peak pointed out. Needs python3 with\n"
      "matplotlib (Debian: python3-matplotlib; scripts/install-deps.sh installs it).");
  app->add_option("TRACE", options->trace, "a nuvec trace (.jsonl or .jsonl.gz)")->required()->check(CLI::ExistingFile);
  app->add_option("-o,--output", options->output, "the picture to write (.png)")->required();
  app->add_option("--x", options->x, "the horizontal axis: events (default) or time")
      ->check(CLI::IsMember({"events", "time"}));
  app->add_option("--title", options->title, "the picture's title");
  return {app, [options] {
            const std::filesystem::path script = plot_script();
            if (!std::filesystem::exists(script)) {
              throw InvalidArgument(fmt::format("cannot find {} (set NUVEC_PLOT_SCRIPT to tools/plot_trace.py)",
                                                script.string()));
            }
            std::vector<std::string> args = {"python3",       script.string(), options->trace, "-o",
                                             options->output, "--x",           options->x};
            if (!options->title.empty()) {
              args.push_back("--title");
              args.push_back(options->title);
            }
            std::vector<char*> argv;
            for (std::string& a : args) argv.push_back(a.data());
            argv.push_back(nullptr);
            const pid_t pid = fork();
            if (pid == 0) {
              execvp("python3", argv.data());
              _exit(127);
            }
            int status = 0;
            if (pid < 0 || waitpid(pid, &status, 0) < 0) throw InvalidArgument("cannot start python3 to draw the plot");
            if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
              return WIFEXITED(status) && WEXITSTATUS(status) == 127 ? 127 : 1;
            }
            fmt::print("wrote {}\n", options->output);
            return 0;
          }};
}

}  // namespace nuvec::tool
