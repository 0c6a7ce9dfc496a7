// The C++ optimizers (nn/optim/) as ringgrad._C.SGD and ringgrad._C.AdamW: built over a list
// of tensors (updated in place, so Python's Parameters see the new values), with step(),
// zero_grad() and the learning rate. ringgrad/optim.py gives them PyTorch's signatures.
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/vector.h>

#include "nn/optim/adamw.h"
#include "nn/optim/sgd.h"
#include "python/src/bindings.h"

namespace rg::python {

namespace {

// Parameter groups from Python: (parameters, weight decay or None for the optimizer's).
using Groups = std::vector<std::pair<std::vector<Tensor>, std::optional<double>>>;

std::vector<optim::ParamGroup> param_groups(Groups groups) {
  std::vector<optim::ParamGroup> out;
  for (auto& [params, weight_decay] : groups) out.push_back({std::move(params), weight_decay});
  return out;
}

void bind_optimizer_base(nb::module_& m) {
  nb::class_<optim::Optimizer>(m, "Optimizer")
      .def("step", [](optim::Optimizer& o) { as_runtime_error([&] { o.step(); }); })
      .def("zero_grad", &optim::Optimizer::zero_grad, nb::arg("set_to_none") = true)
      .def_prop_rw("lr", &optim::Optimizer::lr, &optim::Optimizer::set_lr);
}

}  // namespace

void bind_optim(nb::module_& m) {
  bind_optimizer_base(m);
  nb::class_<optim::SGD, optim::Optimizer>(m, "SGD").def(
      "__init__",
      [](optim::SGD* self, Groups groups, double lr, double momentum, double dampening,
         double weight_decay, bool nesterov) {
        new (self) optim::SGD(param_groups(std::move(groups)),
                              {lr, momentum, dampening, nesterov, weight_decay});
      },
      nb::arg("params"), nb::arg("lr"), nb::arg("momentum"), nb::arg("dampening"),
      nb::arg("weight_decay"), nb::arg("nesterov"));
  nb::class_<optim::AdamW, optim::Optimizer>(m, "AdamW")
      .def(
          "__init__",
          [](optim::AdamW* self, Groups groups, double lr, double beta1, double beta2, double eps,
             double weight_decay) {
            new (self) optim::AdamW(param_groups(std::move(groups)),
                                    {lr, beta1, beta2, eps, weight_decay});
          },
          nb::arg("params"), nb::arg("lr"), nb::arg("beta1"), nb::arg("beta2"), nb::arg("eps"),
          nb::arg("weight_decay"));
}

}  // namespace rg::python
