// The parts of the module ringgrad._C, one function per file (python/src/*.cpp), called in
// order by module.cpp. Each adds its classes and functions to the module `m`.
#pragma once
#include <nanobind/nanobind.h>

#include "core/tensor.h"

namespace rg::python {

namespace nb = nanobind;

void bind_errors(nb::module_& m);  // rg::Error -> ValueError / IndexError / RuntimeError
void bind_tensor(nb::module_& m);  // the Tensor class: metadata, autograd, operators
void bind_numpy(nb::module_& m);   // from_numpy, Tensor.numpy (zero-copy where possible)
void bind_ops(nb::module_& m);     // factories, the op table's functions, nn ops, grad mode
void bind_optim(nb::module_& m);   // SGD and AdamW over the C++ optimizers
void bind_dist(nb::module_& m);    // process groups, collectives, the DDP reducer
void bind_hooks(nb::module_& m);   // autograd hooks with Python callables
void bind_io(nb::module_& m);      // safetensors, optimizer state dicts, clip_grad_norm_
// var, std, norm, tril, einsum, pad, conv2d, batch_norm, ...: after bind_tensor (adds methods)
void bind_composite_ops(nb::module_& m);

// Runs fn; an rg::Error it throws becomes a Python RuntimeError with the same message. For
// calls whose failures are about state, not arguments (backward, an optimizer's step).
template <typename Fn>
auto as_runtime_error(Fn&& fn) -> decltype(fn()) {
  try {
    return fn();
  } catch (const Error& e) {
    throw nb::builtin_exception(nb::exception_type::runtime_error, e.what());
  }
}

// A shape from Python's t.reshape(2, 3) or t.reshape((2, 3)) or t.reshape([2, 3]).
Shape shape_from_args(const nb::args& args);

}  // namespace rg::python
