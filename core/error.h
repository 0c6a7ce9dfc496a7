// The one error type of ringgrad, and RG_CHECK, the one way to raise it.
// Messages name the op and the offending shapes/values, e.g.
//   matmul: shapes [2,3] and [4,5] cannot be multiplied (3 != 4)
#pragma once
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>

namespace rg {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message) : std::runtime_error(message) {}
};

// Concatenates anything printable with operator<< into one string.
template <typename... Args>
std::string str(Args&&... args) {
  std::ostringstream out;
  (out << ... << std::forward<Args>(args));
  return out.str();
}

}  // namespace rg

// RG_CHECK(cond, "op: message ", value, ...) throws rg::Error when cond is false.
#define RG_CHECK(cond, ...)                                 \
  do {                                                      \
    if (!(cond)) throw ::rg::Error(::rg::str(__VA_ARGS__)); \
  } while (0)

#define RG_FAIL(...) throw ::rg::Error(::rg::str(__VA_ARGS__))

// RG_DEBUG_ASSERT(cond, "kernel: message ", value, ...): a kernel's check of its contract
// (core/op_table.h: the op layer has validated shapes and dtypes). Throws like RG_CHECK in
// debug builds; in release builds (NDEBUG) the condition is compiled but never evaluated.
#ifdef NDEBUG
#define RG_DEBUG_ASSERT(cond, ...)                                   \
  do {                                                               \
    if (false && !(cond)) throw ::rg::Error(::rg::str(__VA_ARGS__)); \
  } while (0)
#else
#define RG_DEBUG_ASSERT(cond, ...) RG_CHECK(cond, __VA_ARGS__)
#endif
