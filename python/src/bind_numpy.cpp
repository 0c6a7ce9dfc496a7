// NumPy in and out without copies, as torch.from_numpy and Tensor.numpy do:
//   from_numpy(a)  a tensor over a's memory (a's strides, in elements); the tensor keeps a
//                  alive. Negative or unaligned strides, read-only or non-native arrays are
//                  copied first by the Python caller (ringgrad/_creation.py).
//   t.numpy()      an array over t's memory that keeps t's storage alive; writes show
//                  through both ways. Refused for a tensor that requires grad (detach first,
//                  as PyTorch) and for bfloat16, which NumPy lacks.
#include <nanobind/ndarray.h>

#include <memory>

#include "python/src/bindings.h"

namespace rg::python {

namespace {

using CpuArray = nb::ndarray<nb::device::cpu>;

DType dtype_of_array(const CpuArray& a) {
  using Code = nb::dlpack::dtype_code;
  nb::dlpack::dtype d = a.dtype();
  auto is = [&](Code code, int bits) { return d.code == uint8_t(code) && d.bits == bits; };
  if (is(Code::Float, 32)) return DType::f32;
  if (is(Code::Float, 64)) return DType::f64;
  if (is(Code::Bfloat, 16)) return DType::bf16;
  if (is(Code::Int, 32)) return DType::i32;
  if (is(Code::Int, 64)) return DType::i64;
  if (is(Code::Bool, 8)) return DType::b8;
  RG_FAIL("from_numpy: unsupported array dtype (code ", int(d.code), ", ", int(d.bits),
          " bits): use float32, float64, int32, int64 or bool");
}

nb::dlpack::dtype dlpack_dtype(DType dtype) {
  switch (dtype) {
    case DType::f32:
      return nb::dtype<float>();
    case DType::f64:
      return nb::dtype<double>();
    case DType::i32:
      return nb::dtype<int32_t>();
    case DType::i64:
      return nb::dtype<int64_t>();
    case DType::b8:
      return nb::dtype<bool>();
    case DType::bf16:
      break;
  }
  RG_FAIL("numpy: NumPy has no ", dtype, ": convert first, t.to(ringgrad.float32).numpy()");
}

Tensor from_numpy(const CpuArray& a) {
  DType dtype = dtype_of_array(a);
  Shape shape(a.ndim());
  Strides strides(a.ndim());
  int64_t last = 0;  // the farthest element, in elements from the first
  bool empty = false;
  for (size_t i = 0; i < a.ndim(); ++i) {
    shape[i] = static_cast<int64_t>(a.shape(i));
    strides[i] = a.stride(i);
    RG_CHECK(strides[i] >= 0, "from_numpy: negative stride ", strides[i], " in dim ", i);
    empty = empty || shape[i] == 0;
    last += (shape[i] - 1) * strides[i];
  }
  size_t nbytes = empty ? 0 : static_cast<size_t>(last + 1) * itemsize(dtype);
  // The array handle dies under the GIL, whichever thread drops the last tensor.
  std::shared_ptr<CpuArray> keep(new CpuArray(a), [](CpuArray* p) {
    nb::gil_scoped_acquire gil;
    delete p;
  });
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = std::make_shared<Storage>(a.data(), nbytes, kCPU,
                                            [keep](void*, size_t) mutable { keep.reset(); });
  impl->shape = shape;
  impl->strides = strides;
  impl->dtype = dtype;
  return Tensor(std::move(impl));
}

nb::object to_numpy(const Tensor& t) {
  if (t.requires_grad())
    throw nb::builtin_exception(nb::exception_type::runtime_error,
                                "numpy: the tensor requires grad: use t.detach().numpy()");
  RG_CHECK(t.device() == kCPU, "numpy: the tensor is on ", t.device(), ", not the cpu");
  nb::dlpack::dtype dtype = dlpack_dtype(t.dtype());
  std::vector<size_t> shape(t.shape().begin(), t.shape().end());
  nb::capsule owner(new Tensor(t), [](void* p) noexcept { delete static_cast<Tensor*>(p); });
  nb::ndarray<nb::numpy> array(t.data_ptr(), shape.size(), shape.data(), owner, t.strides().data(),
                               dtype);
  return array.cast();
}

}  // namespace

void bind_numpy(nb::module_& m) {
  m.def("from_numpy", &from_numpy, nb::arg("array"));
  nb::object tensor_class = m.attr("Tensor");
  tensor_class.attr("numpy") =
      nb::cpp_function(&to_numpy, nb::scope(tensor_class), nb::name("numpy"), nb::is_method());
}

}  // namespace rg::python
