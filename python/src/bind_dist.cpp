// rg::dist for Python: init_process_group (the launcher's variables, as torchrun sets them),
// the ProcessGroup's collectives (blocking, as torch.distributed's defaults; the GIL is
// released while they wait) and the DDP Reducer (nn/reducer.h) that
// ringgrad.nn.parallel.DistributedDataParallel drives: its autograd hooks average the
// gradients in buckets during backward, in C++.
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "dist/init.h"
#include "nn/reducer.h"
#include "python/src/bindings.h"

namespace rg::python {

namespace {

using dist::CombineOp;
using dist::ProcessGroup;

// Waits for a collective without the GIL (other Python threads run meanwhile); its failure
// (a DistError naming the rank) arrives as RuntimeError.
void wait_released(const std::function<std::shared_ptr<dist::Work>()>& issue) {
  as_runtime_error([&] {
    nb::gil_scoped_release release;
    issue()->wait();
  });
}

void bind_process_group(nb::module_& m) {
  nb::enum_<CombineOp>(m, "ReduceOp")
      .value("SUM", CombineOp::sum)
      .value("AVG", CombineOp::avg)
      .value("MAX", CombineOp::max);
  nb::class_<ProcessGroup>(m, "ProcessGroup")
      .def_prop_ro("rank", &ProcessGroup::rank)
      .def_prop_ro("size", &ProcessGroup::size)
      .def_prop_ro("backend", [](const ProcessGroup& g) { return std::string(g.backend_name()); })
      .def("all_reduce", [](ProcessGroup& g, const Tensor& t,
                            CombineOp op) { wait_released([&] { return g.allreduce(t, op); }); })
      .def("broadcast", [](ProcessGroup& g, const Tensor& t,
                           int src) { wait_released([&] { return g.broadcast(t, src); }); })
      .def("barrier", [](ProcessGroup& g) { wait_released([&] { return g.barrier(); }); })
      .def("abort", &ProcessGroup::abort, nb::arg("reason"));
  m.def(
      "init_process_group",
      [](const std::string& backend) {
        return as_runtime_error([&] {
          nb::gil_scoped_release release;
          return dist::init_process_group(backend);
        });
      },
      nb::arg("backend") = "auto");
}

void bind_reducer(nb::module_& m) {
  nb::class_<nn::Reducer>(m, "Reducer")
      .def(
          "__init__",
          [](nn::Reducer* self, std::vector<Tensor> params, std::vector<std::string> names,
             ProcessGroup& group, double bucket_cap_mb, bool gradient_as_bucket_view,
             bool find_unused_parameters) {
            nn::ReducerOptions options;
            options.bucket_cap_bytes = static_cast<size_t>(bucket_cap_mb * (1 << 20));
            options.gradient_as_bucket_view = gradient_as_bucket_view;
            options.find_unused_parameters = find_unused_parameters;
            new (self) nn::Reducer(std::move(params), std::move(names), group, options);
          },
          nb::arg("params"), nb::arg("names"), nb::arg("group"), nb::arg("bucket_cap_mb"),
          nb::arg("gradient_as_bucket_view"), nb::arg("find_unused_parameters"),
          nb::keep_alive<1, 4>())  // the reducer keeps its group alive
      .def("prepare_for_forward",
           [](nn::Reducer& r) { as_runtime_error([&] { r.prepare_for_forward(); }); })
      .def_prop_rw("require_sync", &nn::Reducer::require_sync, &nn::Reducer::set_require_sync)
      .def_prop_ro("synchronized_backwards", &nn::Reducer::synchronized_backwards)
      .def_prop_ro("bucket_count", &nn::Reducer::bucket_count);
}

}  // namespace

void bind_dist(nb::module_& m) {
  bind_process_group(m);
  bind_reducer(m);
}

}  // namespace rg::python
