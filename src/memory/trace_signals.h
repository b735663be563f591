// The traces of devices started by NUVEC_TRACE are written when SIGINT or
// SIGTERM stops the program, not only at exit: a signal handler only wakes
// a thread (writing a file is not async-signal-safe), which writes every
// registered device's trace and then lets the signal end the process as it
// would have (its default action, so the exit status still says which
// signal). A signal the program already handles (Python's SIGINT) or
// ignores is left alone: the program's own exit writes the trace then.
#pragma once

namespace nuvec {
class Device;
}

namespace nuvec::detail {

using WriteTrace = void (*)(Device&) noexcept;

// From now until forget_trace_on_signal(device), a SIGINT or SIGTERM calls
// write(device) before the process ends. Installs the handlers on first use.
void write_trace_on_signal(Device& device, WriteTrace write);
void forget_trace_on_signal(Device& device);

}  // namespace nuvec::detail
