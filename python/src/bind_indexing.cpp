// Indexing, scans and sorting (ops/indexing.cpp, ops/cumsum.cpp, ops/sort.cpp), each bound
// twice with PyTorch's names and arguments: as ringgrad._C.<op>(input, ...) and as the
// method Tensor.<op>(...). Ops that give values and indices (sort, topk, max/min along a
// dim) return a ValuesIndices: .values, .indices, and unpacking as a pair, as PyTorch's
// torch.return_types. max/min also take PyTorch's other forms: no dim (the overall max) and
// a tensor (elementwise, as maximum/minimum). Python's t[...] indexing is in
// ringgrad/_indexing.py, over these ops.
#include <nanobind/stl/optional.h>

#include "ops/ops.h"
#include "python/src/bindings.h"

namespace rg::python {

namespace {

// Registers fn as the module function <name>(input, ...) and the method Tensor.<name>(...).
template <typename F, typename... Args>
void def_both(nb::module_& m, const char* name, F fn, const Args&... args) {
  m.def(name, fn, nb::arg("input"), args...);
  nb::cpp_function_def(fn, nb::scope(nb::type<Tensor>()), nb::name(name), nb::is_method(), args...);
}

void bind_values_indices(nb::module_& m) {
  nb::class_<ValuesIndices>(m, "ValuesIndices")
      .def_ro("values", &ValuesIndices::values)
      .def_ro("indices", &ValuesIndices::indices)
      .def("__len__", [](const ValuesIndices&) { return 2; })
      .def("__getitem__",
           [](const ValuesIndices& v, int64_t i) {
             if (i < -2 || i > 1) throw nb::index_error("ValuesIndices: index out of range");
             return i == 0 || i == -2 ? v.values : v.indices;
           })
      .def("__iter__",
           [](const ValuesIndices& v) { return nb::iter(nb::make_tuple(v.values, v.indices)); })
      .def("__repr__", [](const ValuesIndices& v) {
        return nb::str("ValuesIndices(values={}, indices={})")
            .format(nb::cast(v.values), nb::cast(v.indices));
      });
}

void bind_gather_scatter(nb::module_& m) {
  using T = const Tensor&;
  def_both(
      m, "gather", [](T x, int64_t dim, T index) { return gather(x, dim, index); }, nb::arg("dim"),
      nb::arg("index"));
  def_both(
      m, "take_along_dim",
      [](T x, T indices, int64_t dim) { return take_along_dim(x, indices, dim); },
      nb::arg("indices"), nb::arg("dim"));
  def_both(
      m, "scatter", [](T x, int64_t dim, T index, T src) { return scatter(x, dim, index, src); },
      nb::arg("dim"), nb::arg("index"), nb::arg("src"));
  def_both(
      m, "scatter",
      [](T x, int64_t dim, T index, double value) { return scatter(x, dim, index, value); },
      nb::arg("dim"), nb::arg("index"), nb::arg("value"));
  def_both(
      m, "scatter_add",
      [](T x, int64_t dim, T index, T src) { return scatter_add(x, dim, index, src); },
      nb::arg("dim"), nb::arg("index"), nb::arg("src"));
  def_both(
      m, "index_select", [](T x, int64_t dim, T index) { return index_select(x, dim, index); },
      nb::arg("dim"), nb::arg("index"));
  def_both(
      m, "index_add",
      [](T x, int64_t dim, T index, T source, double alpha) {
        return index_add(x, dim, index, source, alpha);
      },
      nb::arg("dim"), nb::arg("index"), nb::arg("source"), nb::kw_only(), nb::arg("alpha") = 1.0);
  m.def(
      "index_put_along",
      [](T x, int64_t dim, T index, T values, bool accumulate) {
        return index_put(x, dim, index, values, accumulate);
      },
      nb::arg("input"), nb::arg("dim"), nb::arg("index"), nb::arg("values"),
      nb::arg("accumulate") = false);
}

void bind_scans_and_sorts(nb::module_& m) {
  using T = const Tensor&;
  def_both(
      m, "cumsum",
      [](T x, int64_t dim, std::optional<DType> dtype) {
        return cumsum(dtype ? x.to(*dtype) : x, dim);
      },
      nb::arg("dim"), nb::kw_only(), nb::arg("dtype") = nb::none());
  def_both(
      m, "sort",
      [](T x, int64_t dim, bool descending, bool stable) {
        return sort(x, dim, descending, stable);
      },
      nb::arg("dim") = -1, nb::arg("descending") = false, nb::kw_only(), nb::arg("stable") = false);
  def_both(
      m, "argsort",
      [](T x, int64_t dim, bool descending, bool stable) {
        return argsort(x, dim, descending, stable);
      },
      nb::arg("dim") = -1, nb::arg("descending") = false, nb::kw_only(), nb::arg("stable") = false);
  def_both(
      m, "topk",
      [](T x, int64_t k, int64_t dim, bool largest, bool sorted) {
        return topk(x, k, dim, largest, sorted);
      },
      nb::arg("k"), nb::arg("dim") = -1, nb::arg("largest") = true, nb::arg("sorted") = true);
}

// max/min: (input) the overall value, (input, dim, keepdim) values and indices, (input,
// other) elementwise.
void bind_max_min(nb::module_& m) {
  using T = const Tensor&;
  def_both(m, "max", [](T x) { return rg::max(x); });
  def_both(
      m, "max", [](T x, int64_t dim, bool keepdim) { return rg::max(x, dim, keepdim); },
      nb::arg("dim"), nb::arg("keepdim") = false);
  def_both(
      m, "max", [](T x, T other) { return maximum(x, other); }, nb::arg("other"));
  def_both(m, "min", [](T x) { return rg::min(x); });
  def_both(
      m, "min", [](T x, int64_t dim, bool keepdim) { return rg::min(x, dim, keepdim); },
      nb::arg("dim"), nb::arg("keepdim") = false);
  def_both(
      m, "min", [](T x, T other) { return minimum(x, other); }, nb::arg("other"));
}

}  // namespace

void bind_indexing(nb::module_& m) {
  bind_values_indices(m);
  bind_gather_scatter(m);
  bind_scans_and_sorts(m);
  bind_max_min(m);
}

}  // namespace rg::python
