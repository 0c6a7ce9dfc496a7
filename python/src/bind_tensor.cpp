// The Tensor class as Python sees it: a handle (copying it shares storage and autograd state,
// as rg::Tensor does), with PyTorch's names: .shape, .dtype, .item(), .grad, .backward(),
// operators with NumPy broadcasting, .T, .reshape/.view, repr. Python's Parameter
// (ringgrad/nn) subclasses it.
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "autograd/grad_mode.h"
#include "ops/ops.h"
#include "python/src/bindings.h"
#include "python/src/interrupt.h"

namespace rg::python {

Shape shape_from_args(const nb::args& args) {
  if (args.size() == 1 && !nb::isinstance<nb::int_>(args[0])) return nb::cast<Shape>(args[0]);
  Shape shape;
  for (nb::handle a : args) shape.push_back(nb::cast<int64_t>(a));
  return shape;
}

namespace {

using TensorClass = nb::class_<Tensor>;

nb::tuple shape_tuple(const Tensor& t) {
  nb::list dims;
  for (int64_t d : t.shape()) dims.append(d);
  return nb::tuple(dims);
}

// dims=None: all; an int or a sequence of ints otherwise.
std::vector<int64_t> dims_of(const nb::object& dim) {
  if (dim.is_none()) return {};
  if (nb::isinstance<nb::int_>(dim)) return {nb::cast<int64_t>(dim)};
  return nb::cast<std::vector<int64_t>>(dim);
}

void bind_metadata(TensorClass& c) {
  // Tensor(other): a new handle over other's data, detached (what Parameter(data) needs).
  c.def("__init__", [](Tensor* self, const Tensor& other) { new (self) Tensor(other.detach()); });
  c.def_prop_ro("shape", &shape_tuple);
  c.def(
      "size",
      [](const Tensor& t, nb::object dim) -> nb::object {
        if (dim.is_none()) return shape_tuple(t);
        return nb::int_(t.size(nb::cast<int64_t>(dim)));
      },
      nb::arg("dim") = nb::none());
  c.def_prop_ro("dtype", &Tensor::dtype);
  c.def_prop_ro("device", [](const Tensor& t) { return t.device().str(); });
  c.def_prop_ro("ndim", &Tensor::dim);
  c.def("dim", &Tensor::dim);
  c.def("numel", &Tensor::numel);
  c.def("__len__", [](const Tensor& t) {
    RG_CHECK(t.dim() > 0, "len() of a 0-d tensor");
    return t.size(0);
  });
  c.def("stride", [](const Tensor& t) { return t.strides(); });
  c.def("is_contiguous", &Tensor::is_contiguous);
  c.def("item", [](const Tensor& t) -> nb::object {
    RG_CHECK(t.numel() == 1, "item: a tensor of ", t.numel(), " elements, not 1");
    if (t.dtype() == DType::b8) return nb::bool_(t.item() != 0);
    if (!is_floating(t.dtype())) return nb::int_(t.item<int64_t>());
    return nb::float_(t.item());
  });
  c.def("__repr__", [](const Tensor& t) { return repr(t); });
}

void bind_autograd(TensorClass& c) {
  c.def_prop_rw("requires_grad", &Tensor::requires_grad,
                [](Tensor& t, bool value) { t.requires_grad_(value); });
  c.def(
      "requires_grad_",
      [](nb::handle self, bool value) {  // returns self, as PyTorch
        nb::cast<Tensor&>(self).requires_grad_(value);
        return nb::borrow(self);
      },
      nb::arg("requires_grad") = true);
  c.def_prop_ro("is_leaf", &Tensor::is_leaf);
  c.def_prop_rw(
      "grad",
      [](const Tensor& t) -> nb::object {
        Tensor g = t.grad();
        return g.defined() ? nb::cast(g) : nb::none();
      },
      [](Tensor& t, nb::object g) { t.set_grad(g.is_none() ? Tensor() : nb::cast<Tensor>(g)); },
      nb::arg("grad").none());
  c.def(
      "backward",
      [](const Tensor& t, nb::object gradient, bool retain_graph) {
        Tensor g = gradient.is_none() ? Tensor() : nb::cast<Tensor>(gradient);
        // Without the GIL (DDP's hooks wait for other ranks during backward), and Ctrl-C
        // stops it at the next node, raising KeyboardInterrupt.
        SigintScope sigint;
        try {
          nb::gil_scoped_release release;
          t.backward(g, retain_graph);
        } catch (const Error& e) {
          raise_pending_signal();
          throw nb::builtin_exception(nb::exception_type::runtime_error, e.what());
        }
      },
      nb::arg("gradient") = nb::none(), nb::arg("retain_graph") = false);
  c.def("detach", &Tensor::detach);
  c.def("retain_grad", &Tensor::retain_grad);
}

void bind_shape_methods(TensorClass& c) {
  c.def("reshape", [](const Tensor& t, nb::args a) { return t.reshape(shape_from_args(a)); });
  c.def("view", [](const Tensor& t, nb::args a) { return t.view(shape_from_args(a)); });
  c.def("permute", [](const Tensor& t, nb::args a) { return t.permute(shape_from_args(a)); });
  c.def("transpose", &Tensor::transpose);
  c.def("t", &Tensor::t);
  c.def_prop_ro("T", [](const Tensor& t) {
    std::vector<int64_t> reversed;
    for (int64_t d = t.dim() - 1; d >= 0; --d) reversed.push_back(d);
    return t.permute(reversed);
  });
  c.def("flatten", &Tensor::flatten, nb::arg("start_dim") = 0, nb::arg("end_dim") = -1);
  c.def("unsqueeze", &Tensor::unsqueeze);
  // The views indexing is made of (ringgrad/_indexing.py): t[i] selects, t[a:b:s] slices.
  c.def("select", &Tensor::select, nb::arg("dim"), nb::arg("index"));
  c.def("slice", &Tensor::slice, nb::arg("dim"), nb::arg("start"), nb::arg("end"),
        nb::arg("step") = 1);
  c.def("expand", [](const Tensor& t, nb::args a) { return t.expand(shape_from_args(a)); });
  c.def("narrow", &Tensor::narrow, nb::arg("dim"), nb::arg("start"), nb::arg("length"));
  c.def("copy_", [](const Tensor& t, const Tensor& src) { return t.copy_(src); });
  c.def("fill_", [](const Tensor& t, double value) { return t.fill_(value); });
  c.def(
      "squeeze",
      [](const Tensor& t, nb::object dim) {
        return dim.is_none() ? t.squeeze() : t.squeeze(nb::cast<int64_t>(dim));
      },
      nb::arg("dim") = nb::none());
  c.def("contiguous", &Tensor::contiguous);
  c.def("clone", &Tensor::clone);
  c.def("to", [](const Tensor& t, DType dtype) { return t.to(dtype); });
  // non_blocking: PyTorch's; a copy from pinned memory to a GPU returns before it has run.
  c.def(
      "to",
      [](const Tensor& t, const std::string& device, bool non_blocking) {
        return t.to(Device(device), non_blocking);
      },
      nb::arg("device"), nb::arg("non_blocking") = false);
  c.def("pin_memory", &Tensor::pin_memory);
  c.def("is_pinned", &Tensor::is_pinned);
  c.def("cpu", [](const Tensor& t) { return t.to(kCPU); });
}

void bind_reductions(TensorClass& c) {
  c.def(
      "sum",
      [](const Tensor& t, nb::object dim, bool keepdim) {
        return rg::sum(t, dims_of(dim), keepdim);
      },
      nb::arg("dim") = nb::none(), nb::arg("keepdim") = false);
  c.def(
      "mean",
      [](const Tensor& t, nb::object dim, bool keepdim) {
        return rg::mean(t, dims_of(dim), keepdim);
      },
      nb::arg("dim") = nb::none(), nb::arg("keepdim") = false);
  c.def(
      "argmax",
      [](const Tensor& t, nb::object dim, bool keepdim) {
        return dim.is_none() ? rg::argmax(t) : rg::argmax(t, nb::cast<int64_t>(dim), keepdim);
      },
      nb::arg("dim") = nb::none(), nb::arg("keepdim") = false);
  c.def("exp", &Tensor::exp);
  c.def("log", &Tensor::log);
  c.def("sqrt", &Tensor::sqrt);
  c.def("abs", &Tensor::abs);
  c.def("pow", &Tensor::pow);
}

// Binary operators for tensor op tensor and tensor op number; reflected forms for number
// op tensor. Python falls back to the reflected form when the left side is a number.
void bind_operators(TensorClass& c) {
  using T = const Tensor&;
  c.def("__add__", [](T a, T b) { return a + b; });
  c.def("__add__", [](T a, double b) { return a + b; });
  c.def("__radd__", [](T a, double b) { return b + a; });
  c.def("__sub__", [](T a, T b) { return a - b; });
  c.def("__sub__", [](T a, double b) { return a - b; });
  c.def("__rsub__", [](T a, double b) { return b - a; });
  c.def("__mul__", [](T a, T b) { return a * b; });
  c.def("__mul__", [](T a, double b) { return a * b; });
  c.def("__rmul__", [](T a, double b) { return b * a; });
  c.def("__truediv__", [](T a, T b) { return a / b; });
  c.def("__truediv__", [](T a, double b) { return a / b; });
  c.def("__rtruediv__", [](T a, double b) { return b / a; });
  c.def("__matmul__", [](T a, T b) { return rg::matmul(a, b); });
  c.def("__pow__", [](T a, double e) { return rg::pow(a, e); });
  c.def("__neg__", [](T a) { return -a; });
  c.def("__lt__", [](T a, T b) { return rg::lt(a, b); });
  c.def("__gt__", [](T a, T b) { return rg::gt(a, b); });
}

}  // namespace

void bind_tensor(nb::module_& m) {
  TensorClass c(m, "Tensor");
  bind_metadata(c);
  bind_autograd(c);
  bind_shape_methods(c);
  bind_reductions(c);
  bind_operators(c);
}

}  // namespace rg::python
