#include "memory/trace_signals.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

namespace nuvec::detail {
namespace {

constexpr int kSignals[] = {SIGINT, SIGTERM};

struct Registry {
  std::mutex mutex;
  std::vector<std::pair<Device*, WriteTrace>> devices;
};

// Never destroyed: the watcher may run while static objects are torn down.
Registry& registry() {
  static Registry* const r = new Registry;
  return *r;
}

int wake_fd = -1;  // the pipe's write end, for the handler

void on_signal(int signal) {
  const int saved = errno;
  const unsigned char byte = static_cast<unsigned char>(signal);
  [[maybe_unused]] const ssize_t ignored = ::write(wake_fd, &byte, 1);
  errno = saved;
}

void watch(int read_fd) {
  unsigned char byte = 0;
  while (true) {
    const ssize_t n = ::read(read_fd, &byte, 1);
    if (n == 1) break;
    if (n < 0 && errno == EINTR) continue;
    return;  // the pipe is gone: nothing more to watch
  }
  {
    Registry& r = registry();
    std::lock_guard lock(r.mutex);
    for (const auto& [device, write] : r.devices) write(*device);
  }
  const int signal = byte;
  struct sigaction action = {};
  action.sa_handler = SIG_DFL;
  sigemptyset(&action.sa_mask);
  sigaction(signal, &action, nullptr);
  ::kill(::getpid(), signal);
}

void install() {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return;  // no handlers: the trace is still written at exit
  wake_fd = fds[1];
  bool any = false;
  for (const int signal : kSignals) {
    struct sigaction current = {};
    if (sigaction(signal, nullptr, &current) != 0 || current.sa_handler != SIG_DFL) continue;
    struct sigaction action = {};
    action.sa_handler = on_signal;
    sigemptyset(&action.sa_mask);
    action.sa_flags = SA_RESTART;
    any = sigaction(signal, &action, nullptr) == 0 || any;
  }
  if (!any) return;
  std::thread(watch, fds[0]).detach();
}

}  // namespace

void write_trace_on_signal(Device& device, WriteTrace write) {
  static std::once_flag installed;
  std::call_once(installed, install);
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  r.devices.emplace_back(&device, write);
}

void forget_trace_on_signal(Device& device) {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  std::erase_if(r.devices, [&](const auto& entry) { return entry.first == &device; });
}

}  // namespace nuvec::detail
