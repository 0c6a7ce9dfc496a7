// error_of(fn): the message of the rg::Error that fn throws, or "(no error)"; shared by the
// kernel tests (tests/kernels_cpu, tests/kernels) that compare messages.
#pragma once
#include <string>

#include "core/error.h"

namespace rg::test {

template <typename F>
std::string error_of(F fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace rg::test
