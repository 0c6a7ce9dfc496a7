#include "core/dtype.h"

#include "core/error.h"

namespace rg {

size_t itemsize(DType t) {
  switch (t) {
#define RG_SIZE(name, type, size) \
  case DType::name: return size;
    RG_DTYPES(RG_SIZE)
#undef RG_SIZE
  }
  return 0;
}

const char* dtype_name(DType t) {
  switch (t) {
    case DType::f32: return "float32";
    case DType::f64: return "float64";
    case DType::bf16: return "bfloat16";
    case DType::i32: return "int32";
    case DType::i64: return "int64";
    case DType::b8: return "bool";
  }
  return "?";
}

bool is_floating(DType t) { return t == DType::f32 || t == DType::f64 || t == DType::bf16; }

// Category order bool < integer < floating; within a category the wider type wins,
// and bf16 with f32 gives f32 (as in PyTorch).
DType promote_types(DType a, DType b) {
  if (a == b) return a;
  auto rank = [](DType t) {
    switch (t) {
      case DType::b8: return 0;
      case DType::i32: return 1;
      case DType::i64: return 2;
      case DType::bf16: return 3;
      case DType::f32: return 4;
      case DType::f64: return 5;
    }
    return 0;
  };
  return rank(a) > rank(b) ? a : b;
}

}  // namespace rg
