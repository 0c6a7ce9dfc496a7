// Element types, their sizes and names, bf16 conversion, and type promotion
// (NumPy/PyTorch rules for bool < integers < floating types).
#pragma once
#include <cstdint>
#include <cstring>
#include <ostream>

namespace rg {

#define RG_DTYPES(X)       \
  X(f32, float, 4)         \
  X(f64, double, 8)        \
  X(bf16, ::rg::bf16_t, 2) \
  X(i32, int32_t, 4)       \
  X(i64, int64_t, 8)       \
  X(b8, bool, 1)

// bfloat16 storage type: the upper 16 bits of an IEEE f32.
struct bf16_t {
  uint16_t bits = 0;
  bf16_t() = default;
  explicit bf16_t(float f) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    if ((u & 0x7fffffffu) > 0x7f800000u) {  // NaN stays NaN
      bits = static_cast<uint16_t>((u >> 16) | 0x40);
    } else {  // round to nearest even
      u += 0x7fffu + ((u >> 16) & 1u);
      bits = static_cast<uint16_t>(u >> 16);
    }
  }
  operator float() const {
    uint32_t u = static_cast<uint32_t>(bits) << 16;
    float f;
    std::memcpy(&f, &u, 4);
    return f;
  }
};

enum class DType : uint8_t {
#define RG_DTYPE_ENUM(name, type, size) name,
  RG_DTYPES(RG_DTYPE_ENUM)
#undef RG_DTYPE_ENUM
};

inline constexpr DType kFloat32 = DType::f32;
inline constexpr DType kFloat64 = DType::f64;
inline constexpr DType kBFloat16 = DType::bf16;
inline constexpr DType kInt32 = DType::i32;
inline constexpr DType kInt64 = DType::i64;
inline constexpr DType kBool = DType::b8;

size_t itemsize(DType t);
const char* dtype_name(DType t);  // "float32", "bfloat16", "int64", "bool", ...
bool is_floating(DType t);
DType promote_types(DType a, DType b);
inline std::ostream& operator<<(std::ostream& os, DType t) { return os << dtype_name(t); }

template <typename T>
struct dtype_of;
#define RG_DTYPE_OF(name, type, size)           \
  template <>                                   \
  struct dtype_of<type> {                       \
    static constexpr DType value = DType::name; \
  };
RG_DTYPES(RG_DTYPE_OF)
#undef RG_DTYPE_OF

}  // namespace rg
