// Saving, restoring and moving training state from Python: safetensors files
// (nn/safetensors.h; the format rgtrain's checkpoints and --init use), optimizer state dicts,
// clip_grad_norm_, and moving a parameter to another device or dtype in place.
// ringgrad/serialization.py and ringgrad/optim.py give them torch's names.
#include <nanobind/stl/map.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "nn/module.h"
#include "nn/optim/clip_grad.h"
#include "nn/optim/optimizer.h"
#include "nn/safetensors.h"
#include "python/src/bindings.h"

namespace rg::python {

namespace {

using Named = std::vector<std::pair<std::string, Tensor>>;

Named items_of(const nn::StateDict& dict) { return Named(dict.begin(), dict.end()); }

nn::StateDict dict_of(const Named& items) {
  nn::StateDict dict;
  for (const auto& [name, t] : items) dict.insert(name, t);
  return dict;
}

}  // namespace

void bind_io(nb::module_& m) {
  m.def(
      "save_safetensors",
      [](const std::string& path, const Named& tensors,
         const std::map<std::string, std::string>& metadata) {
        nn::save_safetensors(path, tensors, metadata);
      },
      nb::arg("path"), nb::arg("tensors"), nb::arg("metadata"));
  m.def(
      "load_safetensors",
      [](const std::string& path) {
        nn::SafetensorsContents contents = nn::load_safetensors(path);
        return std::make_pair(contents.tensors, contents.metadata);
      },
      nb::arg("path"));
  m.def("clip_grad_norm_", &optim::clip_grad_norm_, nb::arg("params"), nb::arg("max_norm"));
  // Module.to from Python: each parameter moved in place (nn/module.h).
  m.def(
      "convert_in_place",
      [](const Tensor& t, const std::string& device, DType dtype) {
        nn::convert_in_place(t, Device(device), dtype);
      },
      nb::arg("tensor"), nb::arg("device"), nb::arg("dtype"));
  // Optimizer state dicts as (name, tensor) lists; scalars (the step) are 0-d tensors.
  nb::module_ optimizer_state = m.def_submodule("optimizer_state");
  optimizer_state.def("get", [](const optim::Optimizer& o) { return items_of(o.state_dict()); });
  optimizer_state.def("load", [](optim::Optimizer& o, const Named& items) {
    as_runtime_error([&] { o.load_state_dict(dict_of(items)); });
  });
}

}  // namespace rg::python
