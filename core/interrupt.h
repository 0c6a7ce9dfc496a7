// Stopping a long computation between its steps: a signal handler (Ctrl-C in Python, see
// python/src/interrupt.cpp) calls request_interrupt(), and the autograd engine checks between
// nodes, so backward stops at the next node with an rg::Error instead of running to the end.
// One flag for the process: every computation that checks it stops.
#pragma once

namespace rg {

// Async-signal-safe: sets the flag.
void request_interrupt();
bool interrupt_requested();
void clear_interrupt();
// When the flag is set: clears it and throws rg::Error("<what>: interrupted").
void throw_if_interrupted(const char* what);

}  // namespace rg
