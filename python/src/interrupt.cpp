// Ctrl-C during a long C++ call that runs without the GIL (backward): Python's own SIGINT
// handler only marks the signal, and Python would act on it after the call returned. While
// such a call runs, a handler of ours sits in front of Python's: it sets ringgrad's interrupt
// flag (core/interrupt.h; the engine stops at the next node) and then calls Python's handler,
// so that the call, on its way out, raises what Python's handler says (KeyboardInterrupt by
// default) through PyErr_CheckSignals.
#include "python/src/interrupt.h"

#include <signal.h>

#include <mutex>

#include "core/interrupt.h"

namespace rg::python {

namespace {

std::mutex g_mutex;
int g_depth = 0;  // calls in flight (several threads may run backward at once)
struct sigaction g_python_handler;

void on_sigint(int sig, siginfo_t* info, void* context) {
  request_interrupt();
  const struct sigaction& previous = g_python_handler;
  if (previous.sa_flags & SA_SIGINFO) {
    if (previous.sa_sigaction) previous.sa_sigaction(sig, info, context);
  } else if (previous.sa_handler != SIG_DFL && previous.sa_handler != SIG_IGN) {
    previous.sa_handler(sig);
  }
}

}  // namespace

SigintScope::SigintScope() {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (g_depth++ > 0) return;
  clear_interrupt();
  struct sigaction ours = {};
  ours.sa_sigaction = on_sigint;
  ours.sa_flags = SA_SIGINFO;
  sigemptyset(&ours.sa_mask);
  sigaction(SIGINT, &ours, &g_python_handler);
}

SigintScope::~SigintScope() {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (--g_depth > 0) return;
  sigaction(SIGINT, &g_python_handler, nullptr);
}

void raise_pending_signal() {
  if (PyErr_CheckSignals() != 0) throw nb::python_error();
}

}  // namespace rg::python
