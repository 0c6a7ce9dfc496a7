// The parts of the module ringgrad._C, one function per file (python/src/*.cpp), called in
// order by module.cpp. Each adds its classes and functions to the module `m`.
#pragma once
#include <nanobind/nanobind.h>

#include "core/tensor.h"

namespace rg::python {

namespace nb = nanobind;

void bind_errors(nb::module_& m);    // rg::Error -> ValueError / IndexError / RuntimeError
void bind_tensor(nb::module_& m);    // the Tensor class: metadata, autograd, operators
void bind_numpy(nb::module_& m);     // from_numpy, Tensor.numpy (zero-copy where possible)
void bind_ops(nb::module_& m);       // factories, the op table's functions, nn ops, grad mode
void bind_optim(nb::module_& m);     // SGD and AdamW over the C++ optimizers
void bind_dist(nb::module_& m);      // process groups, collectives, the DDP reducer
void bind_hooks(nb::module_& m);     // autograd hooks with Python callables
void bind_io(nb::module_& m);        // safetensors, optimizer state dicts, clip_grad_norm_
void bind_indexing(nb::module_& m);  // gather, scatter, cumsum, sort, topk, max/min (+ methods)
void bind_runtime(nb::module_& m);   // device counts, synchronize, autocast state, TF32
void bind_random(nb::module_& m);    // PyTorch's CPU random streams: Generator, rand, randperm ...
void bind_composite_ops(
    nb::module_& m);  // var/std, norm, masks, pad, einsum, conv, pools, batch norm

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

// The ops of the op tables (core/op_table.h), generated from its X-macros (bind_table.cpp):
// as ringgrad._C functions and as Tensor methods.
void bind_table_functions(nb::module_& m);
void bind_table_methods(nb::class_<Tensor>& c);
// The two operands of a binary op from Python values: tensors, or a number on one side,
// made a 0-d tensor of the other's dtype (PyTorch's scalar rule). TypeError naming op else.
std::pair<Tensor, Tensor> binary_operands(const char* op, nb::handle a, nb::handle b);

// A shape from Python's t.reshape(2, 3) or t.reshape((2, 3)) or t.reshape([2, 3]).
Shape shape_from_args(const nb::args& args);

}  // namespace rg::python
