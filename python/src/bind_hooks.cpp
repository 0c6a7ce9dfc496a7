// Autograd hooks with Python callables (autograd/hooks.h): Tensor.register_hook(fn), where
// fn(grad) may return a replacement gradient, and
// Tensor.register_post_accumulate_grad_hook(fn), where fn(param) runs once param.grad is
// final for this backward (the hook a from-scratch DDP all-reduces in). Backward runs without
// the GIL (other ranks may be waited for), so each call takes it back; the callable is
// released with the GIL held too, whichever thread drops the last reference.
#include <memory>

#include "autograd/hooks.h"
#include "python/src/bindings.h"

namespace rg::python {

namespace {

// A Python callable owned from C++: its reference is dropped under the GIL.
class PythonCallable {
 public:
  explicit PythonCallable(nb::callable fn) : fn_(std::move(fn)) {}
  ~PythonCallable() {
    if (!Py_IsInitialized()) {  // the interpreter is gone: nothing left to release into
      fn_.release();
      return;
    }
    nb::gil_scoped_acquire gil;
    fn_.reset();
  }
  PythonCallable(const PythonCallable&) = delete;
  PythonCallable& operator=(const PythonCallable&) = delete;
  nb::object operator()(const Tensor& t) const { return fn_(t); }

 private:
  nb::callable fn_;
};

void register_tensor_hook(const Tensor& t, nb::callable fn) {
  auto callable = std::make_shared<PythonCallable>(std::move(fn));
  register_hook(t, [callable](const Tensor& grad) -> Tensor {
    nb::gil_scoped_acquire gil;
    nb::object replaced = (*callable)(grad);
    return replaced.is_none() ? grad : nb::cast<Tensor>(replaced);
  });
}

void register_post_accumulate_hook(const Tensor& t, nb::callable fn) {
  auto callable = std::make_shared<PythonCallable>(std::move(fn));
  register_post_accumulate_grad_hook(t, [callable](const Tensor& param) {
    nb::gil_scoped_acquire gil;
    (*callable)(param);
  });
}

}  // namespace

void bind_hooks(nb::module_& m) {
  m.def(
      "register_hook",
      [](const Tensor& t, nb::callable fn) {
        as_runtime_error([&] { register_tensor_hook(t, std::move(fn)); });
      },
      nb::arg("tensor"), nb::arg("hook"));
  m.def(
      "register_post_accumulate_grad_hook",
      [](const Tensor& t, nb::callable fn) {
        as_runtime_error([&] { register_post_accumulate_hook(t, std::move(fn)); });
      },
      nb::arg("tensor"), nb::arg("hook"));
}

}  // namespace rg::python
