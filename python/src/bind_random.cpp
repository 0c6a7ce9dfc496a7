// PyTorch's CPU random streams for ringgrad's Python module: the Generator class (MT19937,
// core/torch_generator.h), the process's default one, and functions that fill a new CPU tensor
// from a generator. ringgrad/_random.py gives them torch's names (rand, randn, randint, randperm,
// multinomial, Tensor.uniform_ ...) and copies to the requested device. Generation holds the GIL:
// one Python thread at a time draws, in program order, as PyTorch's generator lock serialises.
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <cstring>
#include <random>
#include <type_traits>

#include "core/shape_checks.h"
#include "core/torch_generator.h"
#include "ops/ops.h"
#include "python/src/bindings.h"

namespace rg::python {

namespace {

uint64_t nondeterministic_seed() {
  std::random_device device;
  return (static_cast<uint64_t>(device()) << 32) | device();
}

// A CPU tensor of `dtype` filled by fill(pointer, n) as float or double; bfloat16 is drawn as
// float32 and rounded (PyTorch draws bfloat16 differently: its streams are not reproduced).
template <typename Fill>
Tensor floating(const Shape& shape, DType dtype, const char* op, Fill fill) {
  RG_CHECK(is_floating(dtype), op, ": expected a floating dtype, got ", dtype);
  checked_nbytes(shape, itemsize(dtype), op);
  DType drawn = dtype == DType::f64 ? DType::f64 : DType::f32;
  Tensor out = empty(shape, drawn, kCPU);
  if (drawn == DType::f64)
    fill(out.data<double>(), out.numel());
  else
    fill(out.data<float>(), out.numel());
  return drawn == dtype ? out : out.to(dtype);
}

Tensor integers(TorchGenerator& g, const Shape& shape, DType dtype, uint64_t modulus, int64_t base,
                bool wide) {
  checked_nbytes(shape, itemsize(DType::i64), "randint");
  Tensor out = empty(shape, DType::i64, kCPU);
  g.integers(out.data<int64_t>(), out.numel(), modulus, base, wide);
  return dtype == DType::i64 ? out : out.to(dtype);
}

// probs as a contiguous CPU float or double tensor, the layout the generator reads.
Tensor cpu_probabilities(const Tensor& probs, const char* op) {
  RG_CHECK(probs.dtype() == DType::f32 || probs.dtype() == DType::f64, op,
           ": expected float32 or float64 probabilities, got ", probs.dtype());
  return probs.to(kCPU).contiguous();
}

Tensor multinomial(TorchGenerator& g, const Tensor& probs, int64_t samples, bool replacement) {
  RG_CHECK(probs.dim() == 1 || probs.dim() == 2, "multinomial: prob_dist must be 1 or 2 dim, got ",
           probs.dim(), " dims");
  Tensor p = cpu_probabilities(probs, "multinomial");
  int64_t categories = p.shape().back();
  int64_t rows = p.dim() == 2 ? p.shape()[0] : 1;
  Shape shape = p.dim() == 2 ? Shape{rows, samples} : Shape{samples};
  Tensor out = empty(shape, DType::i64, kCPU);
  if (p.dtype() == DType::f64)
    g.multinomial(p.data<double>(), rows, categories, samples, replacement, out.data<int64_t>());
  else
    g.multinomial(p.data<float>(), rows, categories, samples, replacement, out.data<int64_t>());
  return out;
}

Tensor bernoulli_of(TorchGenerator& g, const Tensor& probs) {
  Tensor p = cpu_probabilities(probs, "bernoulli");
  Tensor out = empty(p.shape(), p.dtype(), kCPU);
  if (p.dtype() == DType::f64)
    g.bernoulli(out.data<double>(), p.data<double>(), p.numel());
  else
    g.bernoulli(out.data<float>(), p.data<float>(), p.numel());
  return out;
}

void bind_generator_class(nb::module_& m) {
  nb::class_<TorchGenerator>(m, "Generator")
      .def(nb::init<uint64_t>(), nb::arg("seed") = TorchGenerator::kFreshSeed)
      .def("manual_seed", &TorchGenerator::manual_seed, nb::arg("seed"))
      .def("initial_seed", &TorchGenerator::initial_seed)
      .def("seed",
           [](TorchGenerator& g) {
             uint64_t seed = nondeterministic_seed();
             g.manual_seed(seed);
             return seed;
           })
      .def("random", &TorchGenerator::random)
      .def("random64", &TorchGenerator::random64)
      .def("get_state",
           [](const TorchGenerator& g) {
             return nb::bytes(reinterpret_cast<const char*>(&g), sizeof(TorchGenerator));
           })
      .def("set_state", [](TorchGenerator& g, nb::bytes state) {
        if (state.size() != sizeof(TorchGenerator))
          throw nb::value_error("set_state: expected a state from get_state of this build");
        std::memcpy(static_cast<void*>(&g), state.c_str(), sizeof(TorchGenerator));
      });
  static TorchGenerator default_generator{nondeterministic_seed()};
  m.attr("default_generator") = nb::cast(&default_generator, nb::rv_policy::reference);
}

}  // namespace

void bind_random(nb::module_& m) {
  bind_generator_class(m);
  using G = TorchGenerator;
  // op: the name errors give (rand or uniform_, randn or normal_).
  m.def("uniform",
        [](G& g, const Shape& s, DType d, double from, double to, const std::string& op) {
          return floating(s, d, op.c_str(), [&](auto* p, int64_t n) { g.uniform(p, n, from, to); });
        });
  m.def("normal", [](G& g, const Shape& s, DType d, double mean, double std, bool contiguous,
                     const std::string& op) {
    return floating(s, d, op.c_str(),
                    [&](auto* p, int64_t n) { g.normal(p, n, mean, std, contiguous); });
  });
  m.def("exponential", [](G& g, const Shape& s, DType d, double lambda) {
    return floating(s, d, "exponential_", [&](auto* p, int64_t n) { g.exponential(p, n, lambda); });
  });
  m.def("bernoulli_scalar", [](G& g, const Shape& s, DType d, double prob) {
    return floating(s, d, "bernoulli_", [&](auto* p, int64_t n) { g.bernoulli(p, n, prob); });
  });
  m.def("bernoulli_tensor", &bernoulli_of);
  // torch's CPU dropout mask: bernoulli_(keep), then divided by keep in the dtype.
  m.def("dropout_noise", [](G& g, const Shape& s, DType d, double keep) {
    return floating(s, d, "dropout", [&](auto* p, int64_t n) {
      using T = std::remove_pointer_t<decltype(p)>;
      g.bernoulli(p, n, keep);
      const T scale = T(1) / static_cast<T>(keep);
      for (int64_t i = 0; i < n; ++i) p[i] *= scale;
    });
  });
  m.def("integers", &integers);
  m.def("randperm", [](G& g, int64_t n) {
    Tensor out = empty(Shape{n < 0 ? 0 : n}, DType::i64, kCPU);
    g.randperm(out.data<int64_t>(), n);
    return out;
  });
  m.def("multinomial", &multinomial);
}

}  // namespace rg::python
