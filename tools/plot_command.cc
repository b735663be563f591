// `nuvec plot TRACE -o timeline.png [--html timeline.html]`: the timeline of
// a trace as a picture, drawn by the copy of tools/plot_trace.py this binary
// carries (matplotlib, from Debian's python3-matplotlib), and as an
// interactive page (tools/plot_html.h), written without Python.
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "command.h"
#include "embedded.h"
#include "nuvec/error.h"
#include "plot_html.h"

namespace nuvec::tool {
namespace {

struct PlotOptions {
  std::string trace;
  std::string output;
  std::string html;
  std::string x = "events";
  std::string title;
};

void write_file(const std::string& path, std::string_view contents, const char* what) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(contents.data(), static_cast<std::streamsize>(contents.size()));
  out.close();
  if (!out) throw IoError(fmt::format("cannot write the {} {}", what, path), path, errno);
}

// The embedded script in a temporary file, removed when this goes.
class ScriptFile {
 public:
  ScriptFile() {
    std::string name = (std::filesystem::temp_directory_path() / "nuvec-plot-XXXXXX.py").string();
    const int fd = mkstemps(name.data(), 3);
    if (fd < 0) throw IoError(fmt::format("cannot make a temporary file {} for the plot script", name), name, errno);
    path_ = name;
    const std::string_view script = kPlotTraceScript;
    const bool written = ::write(fd, script.data(), script.size()) == static_cast<ssize_t>(script.size());
    ::close(fd);
    if (!written) throw IoError(fmt::format("cannot write the plot script to {}", name), name, errno);
  }
  ~ScriptFile() {
    std::error_code ignored;
    std::filesystem::remove(path_, ignored);
  }
  ScriptFile(const ScriptFile&) = delete;
  ScriptFile& operator=(const ScriptFile&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// Runs python3 on the plot script; its exit status (127: no python3).
int draw_png(const PlotOptions& o) {
  const ScriptFile script;
  std::vector<std::string> args = {"python3", script.path(), o.trace, "-o", o.output, "--x", o.x};
  if (!o.title.empty()) {
    args.push_back("--title");
    args.push_back(o.title);
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
  if (!WIFEXITED(status)) return 1;
  return WEXITSTATUS(status);
}

}  // namespace

Command add_plot_command(CLI::App& parent) {
  auto options = std::make_shared<PlotOptions>();
  CLI::App* app = parent.add_subcommand("plot", "Draw a trace's memory timeline: a picture, an interactive page");
  app->footer(
      "The live buffers and mapped files stacked by tag (nuvec::Tag: weights, kv_cache,\n"
      "activations, ...), the cache above them, wired and the memory limit as lines,\n"
      "phases (marks) shaded and labelled, refusals marked, the peak pointed out with\n"
      "what was live there, largest first. The picture (-o) needs python3 with matplotlib\n"
      "(Debian: python3-matplotlib; scripts/install-deps.sh installs it). The page\n"
      "(--html) is one file with no network use: zoom, pan, and hover for a block's size,\n"
      "tag, lifetime and stream.");
  app->add_option("TRACE", options->trace, "a nuvec trace (.jsonl or .jsonl.gz)")->required()->check(CLI::ExistingFile);
  app->add_option("-o,--output", options->output, "the picture to write (.png)");
  app->add_option("--html", options->html, "the interactive page to write (.html)");
  app->add_option("--x", options->x, "the picture's horizontal axis: events (default) or time")
      ->check(CLI::IsMember({"events", "time"}));
  app->add_option("--title", options->title, "the title");
  return {app, [options] {
            if (options->output.empty() && options->html.empty()) {
              throw InvalidArgument("nuvec plot: say what to write: -o timeline.png, --html timeline.html, or both");
            }
            if (!options->html.empty()) {
              const Trace trace = read_trace(options->trace);
              const std::string title = options->title.empty()
                                            ? std::filesystem::path(options->trace).filename().string()
                                            : options->title;
              write_file(options->html, timeline_html(trace, title), "page");
              fmt::print("wrote {}\n", options->html);
            }
            if (!options->output.empty()) {
              if (const int status = draw_png(*options); status != 0) return status == 127 ? 127 : 1;
              fmt::print("wrote {}\n", options->output);
            }
            return 0;
          }};
}

}  // namespace nuvec::tool
