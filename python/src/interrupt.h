// Ctrl-C for C++ calls that run without the GIL (see interrupt.cpp).
#pragma once
#include "python/src/bindings.h"

namespace rg::python {

// While one lives, SIGINT also sets ringgrad's interrupt flag (core/interrupt.h).
class SigintScope {
 public:
  SigintScope();
  ~SigintScope();
  SigintScope(const SigintScope&) = delete;
  SigintScope& operator=(const SigintScope&) = delete;
};

// With the GIL held: runs Python's pending signal handlers; throws what they raise.
void raise_pending_signal();

}  // namespace rg::python
