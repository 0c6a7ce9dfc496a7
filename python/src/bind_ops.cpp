// Module-level functions of ringgrad._C: the dtype enum, grad mode, factories, matmul, where,
// clamp, cat, the op tables' functions (generated in bind_table.cpp) and the neural-network
// ops ringgrad.nn.functional calls. The Python package gives them PyTorch's signatures where
// those differ (ringgrad/_creation.py, _functions.py).
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "autograd/grad_mode.h"
#include "core/parallel.h"
#include "kernels/builtin.h"
#include "ops/ops.h"
#include "python/src/bindings.h"

namespace rg::python {

namespace {

// The ops whose kernels take long enough to matter run without the GIL, so that other Python
// threads (a DataLoader's prefetching) run meanwhile; the small ones keep it (releasing costs
// more than they take).
constexpr auto kReleaseGil = nb::call_guard<nb::gil_scoped_release>();

void bind_dtypes_and_grad_mode(nb::module_& m) {
  nb::enum_<DType>(m, "dtype")
      .value("float32", DType::f32)
      .value("float64", DType::f64)
      .value("bfloat16", DType::bf16)
      .value("int32", DType::i32)
      .value("int64", DType::i64)
      .value("bool", DType::b8);
  m.def("is_grad_enabled", &GradMode::is_enabled);
  m.def("set_grad_enabled", &GradMode::set_enabled, nb::arg("enabled"));
  m.def("manual_seed", &manual_seed, nb::arg("seed"));
  m.def("set_num_threads", &set_num_threads, nb::arg("n"));  // intra-op threads
  m.def("get_num_threads", &get_num_threads);
  // Which devices this build has: pip install . leaves sim and cuda out unless asked.
  m.def("sim_backend_built", &sim_backend_built);
  m.def("cuda_backend_built", &cuda_backend_built);
}

void bind_factories(nb::module_& m) {
  m.def("zeros", [](const Shape& s, DType d) { return zeros(s, d); });
  m.def("ones", [](const Shape& s, DType d) { return ones(s, d); });
  m.def("full", [](const Shape& s, double v, DType d) { return full(s, v, d); });
  m.def("rand", [](const Shape& s, DType d) { return rand(s, d); });
  m.def("randn", [](const Shape& s, DType d) { return randn(s, d); });
  m.def("arange",
        [](double start, double end, double step, DType d) { return arange(start, end, step, d); });
}

void bind_elementwise(nb::module_& m) {
  m.def(
      "matmul", [](const Tensor& a, const Tensor& b) { return matmul(a, b); }, kReleaseGil);
  m.def("where", [](const Tensor& c, const Tensor& a, const Tensor& b) { return where(c, a, b); });
  m.def("clamp", [](const Tensor& x, double lo, double hi) { return clamp(x, lo, hi); });
  m.def("masked_fill", [](const Tensor& x, const Tensor& mask, double value) {
    return masked_fill(x, mask, value);
  });
  m.def(
      "cat", [](const std::vector<Tensor>& tensors, int64_t dim) { return cat(tensors, dim); },
      nb::arg("tensors"), nb::arg("dim") = 0);
}

Reduction reduction_named(const std::string& name) {
  if (name == "mean") return Reduction::mean;
  if (name == "sum") return Reduction::sum;
  RG_CHECK(name == "none", "reduction: '", name, "' is not one of 'mean', 'sum', 'none'");
  return Reduction::none;
}

void bind_nn_ops(nb::module_& m) {
  m.def("gelu_approximate",
        [](const Tensor& x, const std::string& approximate) { return gelu(x, approximate); });
  m.def("softmax", [](const Tensor& x, int64_t dim) { return softmax(x, dim); });
  m.def("log_softmax", [](const Tensor& x, int64_t dim) { return log_softmax(x, dim); });
  m.def(
      "linear",
      [](const Tensor& x, const Tensor& w, std::optional<Tensor> b) {
        return linear(x, w, b.value_or(Tensor()));
      },
      nb::arg("input"), nb::arg("weight"), nb::arg("bias").none(), kReleaseGil);
  m.def(
      "cross_entropy",
      [](const Tensor& logits, const Tensor& targets, const std::string& r, int64_t ignore_index) {
        return cross_entropy(logits, targets, reduction_named(r), ignore_index);
      },
      kReleaseGil);
  m.def("mse_loss", [](const Tensor& a, const Tensor& b, const std::string& r) {
    return mse_loss(a, b, reduction_named(r));
  });
}

// The transformer's ops: embedding, layer norm, the fused attention.
void bind_transformer_ops(nb::module_& m) {
  m.def("embedding",
        [](const Tensor& weight, const Tensor& idx) { return embedding(weight, idx); });
  m.def(
      "layer_norm",
      [](const Tensor& x, const Shape& shape, std::optional<Tensor> w, std::optional<Tensor> b,
         double eps) {
        return layer_norm(x, shape, w.value_or(Tensor()), b.value_or(Tensor()), eps);
      },
      nb::arg("input"), nb::arg("normalized_shape"), nb::arg("weight").none(),
      nb::arg("bias").none(), nb::arg("eps"), kReleaseGil);
  m.def(
      "scaled_dot_product_attention",
      [](const Tensor& q, const Tensor& k, const Tensor& v, bool is_causal, double scale) {
        return scaled_dot_product_attention(q, k, v, is_causal, scale);
      },
      kReleaseGil);
  m.def("dropout",
        [](const Tensor& x, double p, bool training) { return dropout(x, p, training); });
  m.def(
      "packed_qkv_attention",
      [](const Tensor& qkv, int64_t n_head, bool is_causal) {
        return packed_qkv_attention(qkv, n_head, is_causal);
      },
      kReleaseGil);
}

}  // namespace

void bind_ops(nb::module_& m) {
  bind_dtypes_and_grad_mode(m);
  bind_factories(m);
  bind_elementwise(m);
  bind_table_functions(m);
  bind_nn_ops(m);
  bind_transformer_ops(m);
}

}  // namespace rg::python
