// The composite ops (ops/ops.h, "composite ops": statistics, masks, pad, einsum,
// convolution, pooling, batch norm) as functions of ringgrad._C and, where PyTorch has them,
// Tensor methods (x.var(), x.std(), x.norm(), x.tril(), x.repeat(2, 3), ...). Arguments
// arrive in PyTorch's forms (dim None, an int or a list; p a number or 'fro'; the legacy
// `unbiased` flag beside `correction`); ringgrad/nn/functional.py wraps the F.* ones.
#include <nanobind/stl/array.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <cmath>
#include <limits>

#include "ops/ops.h"
#include "python/src/bindings.h"

namespace rg::python {

namespace {

std::vector<int64_t> dims_from(const nb::object& dim) {
  if (dim.is_none()) return {};
  if (nb::isinstance<nb::int_>(dim)) return {nb::cast<int64_t>(dim)};
  return nb::cast<std::vector<int64_t>>(dim);
}

// PyTorch's correction from its arguments: correction wins, then the legacy unbiased flag
// (passed positionally as the dim in x.var(False)), else 1.
double correction_from(nb::object& dim, const nb::object& unbiased, const nb::object& correction,
                       const char* op) {
  nb::object flag = unbiased;
  if (nb::isinstance<nb::bool_>(dim)) {
    flag = dim;
    dim = nb::none();
  }
  RG_CHECK(correction.is_none() || flag.is_none(), op,
           ": pass either correction or unbiased, not both");
  if (!correction.is_none()) return nb::cast<double>(correction);
  if (!flag.is_none()) return nb::cast<bool>(flag) ? 1.0 : 0.0;
  return 1.0;
}

// p of norm: a number, inf, or 'fro' (the 2-norm); None is 'fro'.
double norm_order(const nb::object& p) {
  if (p.is_none()) return 2;
  if (nb::isinstance<nb::str>(p)) {
    const std::string name = nb::cast<std::string>(p);
    RG_CHECK(name == "fro", "norm: p = '", name, "' is not supported (a number, inf or 'fro')");
    return 2;
  }
  return nb::cast<double>(p);
}

// Defines f as a method of Tensor (the class bind_tensor made).
template <typename Func, typename... Extra>
void def_method(const char* name, Func&& f, const Extra&... extra) {
  nb::handle cls = nb::type<Tensor>();
  nb::cpp_function_def(std::forward<Func>(f), nb::scope(cls), nb::name(name), nb::is_method(),
                       extra...);
}

Tensor var_py(const Tensor& x, nb::object dim, nb::object unbiased, bool keepdim,
              nb::object correction) {
  const double c = correction_from(dim, unbiased, correction, "var");
  return var(x, dims_from(dim), c, keepdim);
}

Tensor std_py(const Tensor& x, nb::object dim, nb::object unbiased, bool keepdim,
              nb::object correction) {
  const double c = correction_from(dim, unbiased, correction, "std");
  return std_dev(x, dims_from(dim), c, keepdim);
}

Tensor norm_py(const Tensor& x, nb::object p, nb::object dim, bool keepdim) {
  return norm(x, norm_order(p), dims_from(dim), keepdim);
}

void bind_statistics(nb::module_& m) {
  m.def("var", &var_py, nb::arg("input"), nb::arg("dim") = nb::none(),
        nb::arg("unbiased") = nb::none(), nb::arg("keepdim") = false, nb::kw_only(),
        nb::arg("correction") = nb::none());
  m.def("std", &std_py, nb::arg("input"), nb::arg("dim") = nb::none(),
        nb::arg("unbiased") = nb::none(), nb::arg("keepdim") = false, nb::kw_only(),
        nb::arg("correction") = nb::none());
  m.def(
      "var_mean",
      [](const Tensor& x, nb::object dim, nb::object unbiased, bool keepdim, nb::object corr) {
        const double c = correction_from(dim, unbiased, corr, "var_mean");
        return var_mean(x, dims_from(dim), c, keepdim);
      },
      nb::arg("input"), nb::arg("dim") = nb::none(), nb::arg("unbiased") = nb::none(),
      nb::arg("keepdim") = false, nb::kw_only(), nb::arg("correction") = nb::none());
  m.def(
      "std_mean",
      [](const Tensor& x, nb::object dim, nb::object unbiased, bool keepdim, nb::object corr) {
        const double c = correction_from(dim, unbiased, corr, "std_mean");
        return std_mean(x, dims_from(dim), c, keepdim);
      },
      nb::arg("input"), nb::arg("dim") = nb::none(), nb::arg("unbiased") = nb::none(),
      nb::arg("keepdim") = false, nb::kw_only(), nb::arg("correction") = nb::none());
  m.def("norm", &norm_py, nb::arg("input"), nb::arg("p") = "fro", nb::arg("dim") = nb::none(),
        nb::arg("keepdim") = false);
  def_method("var", &var_py, nb::arg("dim") = nb::none(), nb::arg("unbiased") = nb::none(),
             nb::arg("keepdim") = false, nb::kw_only(), nb::arg("correction") = nb::none());
  def_method("std", &std_py, nb::arg("dim") = nb::none(), nb::arg("unbiased") = nb::none(),
             nb::arg("keepdim") = false, nb::kw_only(), nb::arg("correction") = nb::none());
  def_method("norm", &norm_py, nb::arg("p") = "fro", nb::arg("dim") = nb::none(),
             nb::arg("keepdim") = false);
}

void bind_masks_and_repeats(nb::module_& m) {
  auto tril_fn = [](const Tensor& x, int64_t diagonal) { return tril(x, diagonal); };
  auto triu_fn = [](const Tensor& x, int64_t diagonal) { return triu(x, diagonal); };
  auto interleave = [](const Tensor& x, int64_t repeats, std::optional<int64_t> dim) {
    return repeat_interleave(x, repeats, dim);
  };
  auto outer_fn = [](const Tensor& a, const Tensor& b) { return outer(a, b); };
  m.def("tril", tril_fn, nb::arg("input"), nb::arg("diagonal") = 0);
  m.def("triu", triu_fn, nb::arg("input"), nb::arg("diagonal") = 0);
  m.def("repeat_interleave", interleave, nb::arg("input"), nb::arg("repeats"),
        nb::arg("dim") = nb::none());
  m.def("outer", outer_fn, nb::arg("input"), nb::arg("vec2"));
  m.def(
      "one_hot", [](const Tensor& x, int64_t n) { return one_hot(x, n); }, nb::arg("tensor"),
      nb::arg("num_classes") = -1);
  def_method("tril", tril_fn, nb::arg("diagonal") = 0);
  def_method("triu", triu_fn, nb::arg("diagonal") = 0);
  def_method("repeat_interleave", interleave, nb::arg("repeats"), nb::arg("dim") = nb::none());
  def_method("outer", outer_fn, nb::arg("vec2"));
  def_method(
      "repeat", [](const Tensor& x, nb::args sizes) { return repeat(x, shape_from_args(sizes)); },
      nb::arg("sizes"));
}

void bind_einsum_and_pad(nb::module_& m) {
  // einsum(eq, a, b) or einsum(eq, [a, b]), as torch.einsum accepts both.
  m.def(
      "einsum",
      [](const std::string& equation, nb::args args) {
        std::vector<Tensor> operands;
        if (args.size() == 1 && !nb::isinstance<Tensor>(args[0]))
          operands = nb::cast<std::vector<Tensor>>(args[0]);
        else
          for (nb::handle a : args) operands.push_back(nb::cast<Tensor>(a));
        return einsum(equation, operands);
      },
      nb::arg("equation"), nb::arg("operands"));
  m.def(
      "pad",
      [](const Tensor& x, const std::vector<int64_t>& amounts, const std::string& mode,
         double value) { return pad(x, amounts, mode, value); },
      nb::arg("input"), nb::arg("pad"), nb::arg("mode") = "constant", nb::arg("value") = 0.0);
}

// Convolution and pooling take long enough to run without the GIL (as matmul does).
constexpr auto kReleaseGil = nb::call_guard<nb::gil_scoped_release>();

void bind_convolution(nb::module_& m) {
  m.def(
      "conv2d",
      [](const Tensor& x, const Tensor& w, std::optional<Tensor> b, Pair stride, Pair padding,
         Pair dilation, int64_t groups) {
        return conv2d(x, w, b.value_or(Tensor()), stride, padding, dilation, groups);
      },
      nb::arg("input"), nb::arg("weight"), nb::arg("bias").none(), nb::arg("stride"),
      nb::arg("padding"), nb::arg("dilation"), nb::arg("groups"), kReleaseGil);
  m.def(
      "conv1d",
      [](const Tensor& x, const Tensor& w, std::optional<Tensor> b, int64_t stride, int64_t padding,
         int64_t dilation, int64_t groups) {
        return conv1d(x, w, b.value_or(Tensor()), stride, padding, dilation, groups);
      },
      nb::arg("input"), nb::arg("weight"), nb::arg("bias").none(), nb::arg("stride"),
      nb::arg("padding"), nb::arg("dilation"), nb::arg("groups"), kReleaseGil);
  m.def("max_pool2d", &max_pool2d, nb::arg("input"), nb::arg("kernel_size"), nb::arg("stride"),
        nb::arg("padding"), nb::arg("dilation"), nb::arg("ceil_mode"), kReleaseGil);
  m.def("avg_pool2d", &avg_pool2d, nb::arg("input"), nb::arg("kernel_size"), nb::arg("stride"),
        nb::arg("padding"), nb::arg("ceil_mode"), nb::arg("count_include_pad"), kReleaseGil);
  m.def("adaptive_avg_pool2d", &adaptive_avg_pool2d, nb::arg("input"), nb::arg("output_size"),
        kReleaseGil);
  m.def(
      "batch_norm",
      [](const Tensor& x, std::optional<Tensor> running_mean, std::optional<Tensor> running_var,
         std::optional<Tensor> weight, std::optional<Tensor> bias, bool training, double momentum,
         double eps) {
        return batch_norm(x, running_mean.value_or(Tensor()), running_var.value_or(Tensor()),
                          weight.value_or(Tensor()), bias.value_or(Tensor()), training, momentum,
                          eps);
      },
      nb::arg("input"), nb::arg("running_mean").none(), nb::arg("running_var").none(),
      nb::arg("weight").none(), nb::arg("bias").none(), nb::arg("training"), nb::arg("momentum"),
      nb::arg("eps"));
}

}  // namespace

void bind_composite_ops(nb::module_& m) {
  bind_statistics(m);
  bind_masks_and_repeats(m);
  bind_einsum_and_pad(m);
  bind_convolution(m);
}

}  // namespace rg::python
