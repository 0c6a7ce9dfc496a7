// where: out = cond ? a : b; cond (bool, or any dtype read as != 0), a, b broadcast to out's
// shape; a, b and out share a dtype. Elementwise engine (elementwise.cuh).
#include "kernels/cuda/elementwise.cuh"

namespace rg::RG_BACKEND {
namespace {

template <typename T, typename C>
struct WhereFn {
  RG_HD T operator()(C c, T a, T b) const { return convert<bool>(c) ? a : b; }
};

void run_where(const Tensor& out, const Tensor& cond, const Tensor& a, const Tensor& b) {
  RG_DEBUG_ASSERT(a.dtype() == out.dtype() && b.dtype() == out.dtype(), "where: a (", a.dtype(),
                  ") and b (", b.dtype(), ") must have out's dtype ", out.dtype());
  dispatch_dtype<DTypes::all, bf16>(out.dtype(), "where", [&]<typename T>(TypeTag<T>) {
    dispatch_dtype<DTypes::all, bf16>(cond.dtype(), "where", [&]<typename C>(TypeTag<C>) {
      elementwise<T, C, T, T>("where", WhereFn<T, C>{}, out, {cond, a, b});
    });
  });
}

}  // namespace

void register_where_kernels(KernelTable& k) { k.where = run_where; }
}  // namespace rg::RG_BACKEND
