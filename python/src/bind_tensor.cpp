// The Tensor class as Python sees it: a handle (copying it shares storage and autograd state,
// as rg::Tensor does), with PyTorch's names: .shape, .dtype, .item(), .grad, .backward(),
// operators with NumPy broadcasting and Python numbers on either side (comparisons are
// elementwise; & | ^ ~ on bool tensors), in-place forms, .T, .reshape/.view, repr. The op
// tables' methods are generated (bind_table.cpp); methods written in Python are added by
// ringgrad/_tensor.py. Python's Parameter (ringgrad/nn) subclasses it.
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "autograd/grad_mode.h"
#include "autograd/node.h"
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

void bind_metadata(TensorClass& c) {
  // Tensor(other): a new handle over other's data, detached (what Parameter(data) needs).
  c.def("__init__", [](Tensor* self, const Tensor& other) { new (self) Tensor(other.detach()); });
  // torch.Tensor(2, 3): a float32 tensor of that shape (zeros); torch.Tensor([1, 2]): float32
  // values (through ringgrad.tensor).
  c.def("__init__", [](Tensor* self, nb::args args) {
    bool sizes = args.size() > 0;
    for (nb::handle a : args) sizes = sizes && nb::isinstance<nb::int_>(a);
    if (sizes || args.size() == 0) {
      new (self) Tensor(zeros(sizes ? shape_from_args(args) : Shape{0}, DType::f32));
      return;
    }
    if (args.size() != 1)
      throw nb::type_error("Tensor(): expected sizes (ints) or one sequence of values");
    nb::object make = nb::module_::import_("ringgrad").attr("tensor");
    new (self) Tensor(nb::cast<Tensor>(make(args[0], nb::arg("dtype") = DType::f32)));
  });
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
  // The autograd node that made this tensor (None for leaves), by name: Tensor.grad_fn
  // (ringgrad/_tensor.py) wraps it.
  c.def_prop_ro("_grad_fn_name", [](const Tensor& t) -> nb::object {
    auto node = t.grad_fn();
    return node ? nb::cast(node->name()) : nb::none();
  });
  // t.data = other: t now views other's storage (shape, dtype), keeping its autograd state.
  c.def("_set_data", [](Tensor& t, const Tensor& src) {
    TensorImpl* dst = t.impl();
    dst->storage = src.storage();
    dst->shape = src.shape();
    dst->strides = src.strides();
    dst->offset = src.offset();
    dst->dtype = src.dtype();
  });
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

// Whether a Python value can be an operand of an operator (else it returns NotImplemented,
// so that t == None is False and Python tries the other side).
bool is_operand(nb::handle v) {
  return nb::isinstance<Tensor>(v) || nb::isinstance<nb::int_>(v) ||
         nb::isinstance<nb::float_>(v) || nb::hasattr(v, "__index__") ||
         nb::hasattr(v, "__float__");
}

// An operator over binary_operands: `self op other` (reflected: `other op self`).
template <typename Fn>
void def_operator(TensorClass& c, const char* name, const char* op, bool reflected, Fn fn) {
  c.def(
      name,
      [fn, op, reflected](nb::handle self, nb::handle other) -> nb::object {
        if (!is_operand(other)) return nb::borrow(Py_NotImplemented);
        auto [a, b] =
            reflected ? binary_operands(op, other, self) : binary_operands(op, self, other);
        return nb::cast(fn(a, b));
      },
      nb::arg("other").none());
}

// Logical &, |, ^ of bool tensors (PyTorch's bitwise ops on integers are not supported).
Tensor logical(const char* op, const Tensor& a, const Tensor& b) {
  if (a.dtype() != DType::b8 || b.dtype() != DType::b8)
    throw nb::type_error((std::string(op) + ": only bool tensors are supported (got " +
                          dtype_name(a.dtype()) + " and " + dtype_name(b.dtype()) + ")")
                             .c_str());
  std::string_view name(op);
  Tensor zero = scalar_tensor(0, DType::i64, a.device());
  if (name == "__and__") return rg::ne(rg::mul(a, b), zero);
  if (name == "__or__") return rg::ne(rg::add(a, b), zero);
  return rg::ne(a, b);
}

void bind_operators(TensorClass& c) {
  using T = const Tensor&;
  def_operator(c, "__add__", "add", false, [](T a, T b) { return a + b; });
  def_operator(c, "__radd__", "add", true, [](T a, T b) { return a + b; });
  def_operator(c, "__sub__", "sub", false, [](T a, T b) { return a - b; });
  def_operator(c, "__rsub__", "sub", true, [](T a, T b) { return a - b; });
  def_operator(c, "__mul__", "mul", false, [](T a, T b) { return a * b; });
  def_operator(c, "__rmul__", "mul", true, [](T a, T b) { return a * b; });
  def_operator(c, "__truediv__", "div", false, [](T a, T b) { return a / b; });
  def_operator(c, "__rtruediv__", "div", true, [](T a, T b) { return a / b; });
  def_operator(c, "__pow__", "pow", false, [](T a, T b) { return rg::pow(a, b); });
  def_operator(c, "__rpow__", "pow", true, [](T a, T b) { return rg::pow(a, b); });
  def_operator(c, "__eq__", "eq", false, [](T a, T b) { return rg::eq(a, b); });
  def_operator(c, "__ne__", "ne", false, [](T a, T b) { return rg::ne(a, b); });
  def_operator(c, "__lt__", "lt", false, [](T a, T b) { return rg::lt(a, b); });
  def_operator(c, "__le__", "le", false, [](T a, T b) { return rg::le(a, b); });
  def_operator(c, "__gt__", "gt", false, [](T a, T b) { return rg::gt(a, b); });
  def_operator(c, "__ge__", "ge", false, [](T a, T b) { return rg::ge(a, b); });
  const std::pair<const char*, const char*> logical_ops[] = {
      {"__and__", "__rand__"}, {"__or__", "__ror__"}, {"__xor__", "__rxor__"}};
  for (auto [op, reflected] : logical_ops) {
    def_operator(c, op, op, false, [op](T a, T b) { return logical(op, a, b); });
    def_operator(c, reflected, op, true, [op](T a, T b) { return logical(op, a, b); });
  }
  c.def("__matmul__", [](T a, T b) { return rg::matmul(a, b); });
  c.def("__neg__", [](T a) { return -a; });
  c.def("__pos__", [](T a) { return a; });
  c.def("__abs__", [](T a) { return rg::abs(a); });
  c.def("__invert__", [](T a) {
    if (a.dtype() != DType::b8)
      throw nb::type_error(
          (std::string("__invert__: only bool tensors are supported, got ") + dtype_name(a.dtype()))
              .c_str());
    return rg::logical_not(a);
  });
}

// In place, returning self: add_(other, alpha=1), sub_, mul_, div_ with a tensor or a number,
// and the augmented assignments +=, -=, *=, /= (out of place when autograd records, so that
// `x += y` inside a model keeps its gradient, as PyTorch's in-place autograd would).
void bind_inplace(TensorClass& c) {
  auto inplace = [](const char* op, nb::handle self, nb::handle other, double alpha) {
    auto [t, o] = binary_operands(op, self, other);
    std::string_view name(op);
    if (name == "add_") t.add_(o, alpha);
    if (name == "sub_") t.add_(o, -alpha);
    if (name == "mul_") t.mul_(o);
    if (name == "div_") t.div_(o);
    return nb::borrow(self);
  };
  for (const char* op : {"add_", "sub_"})
    c.def(
        op,
        [inplace, op](nb::handle s, nb::handle o, double alpha) {
          return inplace(op, s, o, alpha);
        },
        nb::arg("other"), nb::kw_only(), nb::arg("alpha") = 1.0);
  for (const char* op : {"mul_", "div_"})
    c.def(
        op, [inplace, op](nb::handle s, nb::handle o) { return inplace(op, s, o, 1.0); },
        nb::arg("other"));
  const std::pair<const char*, const char*> augmented[] = {
      {"__iadd__", "add_"}, {"__isub__", "sub_"}, {"__imul__", "mul_"}, {"__itruediv__", "div_"}};
  for (auto [name, op] : augmented)
    c.def(
        name,
        [inplace, op](nb::handle self, nb::handle other) -> nb::object {
          if (!is_operand(other)) return nb::borrow(Py_NotImplemented);
          auto [a, b] = binary_operands(op, self, other);
          bool records = GradMode::is_enabled() && (a.requires_grad() || b.requires_grad());
          if (!records) return inplace(op, self, other, 1.0);
          std::string_view o(op);
          return nb::cast(o == "add_" ? a + b : o == "sub_" ? a - b : o == "mul_" ? a * b : a / b);
        },
        nb::arg("other").none());
  c.def("zero_", [](nb::handle self) {
    nb::cast<Tensor&>(self).zero_();
    return nb::borrow(self);
  });
}

}  // namespace

void bind_tensor(nb::module_& m) {
  TensorClass c(m, "Tensor");
  bind_metadata(c);
  bind_autograd(c);
  bind_shape_methods(c);
  bind_operators(c);
  bind_inplace(c);
  bind_table_methods(c);
}

}  // namespace rg::python
