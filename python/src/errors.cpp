// rg::Error reaches Python as a builtin exception with the same message:
//   a dim or index out of range ("... out of range ...")   IndexError (as PyTorch)
//   rg::DistError, rg::StoreTimeout (a job failed)          RuntimeError
//   any other rg::Error: an op refused its arguments        ValueError
// Calls whose errors are about state rather than arguments (backward, optimizer steps)
// raise RuntimeError through as_runtime_error (bindings.h).
#include <cstring>

#include "dist/dist_error.h"
#include "dist/store.h"
#include "python/src/bindings.h"

namespace rg::python {

namespace {

void translate(const std::exception_ptr& thrown, void*) {
  try {
    std::rethrow_exception(thrown);
  } catch (const dist::DistError& e) {
    PyErr_SetString(PyExc_RuntimeError, e.what());
  } catch (const dist::StoreTimeout& e) {
    PyErr_SetString(PyExc_RuntimeError, e.what());
  } catch (const Error& e) {
    bool out_of_range = std::strstr(e.what(), "out of range") != nullptr;
    PyErr_SetString(out_of_range ? PyExc_IndexError : PyExc_ValueError, e.what());
  }
}

}  // namespace

void bind_errors(nb::module_&) { nb::register_exception_translator(translate); }

}  // namespace rg::python
