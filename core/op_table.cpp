#include "core/op_table.h"

#include <array>

#include "kernels/builtin.h"

namespace rg {

#define RG_NAME(name) #name,
const char* op_name(UnaryOp op) {
  static const char* names[] = {RG_UNARY_OPS(RG_NAME)};
  return names[static_cast<int>(op)];
}
const char* op_name(BinaryOp op) {
  static const char* names[] = {RG_BINARY_OPS(RG_NAME)};
  return names[static_cast<int>(op)];
}
const char* op_name(ReduceOp op) {
  static const char* names[] = {RG_REDUCE_OPS(RG_NAME)};
  return names[static_cast<int>(op)];
}
#undef RG_NAME

bool is_comparison(BinaryOp op) {
  switch (op) {
    case BinaryOp::eq: case BinaryOp::ne: case BinaryOp::lt:
    case BinaryOp::le: case BinaryOp::gt: case BinaryOp::ge:
      return true;
    default:
      return false;
  }
}

KernelTable& unchecked_kernel_table(DeviceType type) {
  static std::array<KernelTable, kNumDeviceTypes> tables;
  return tables[static_cast<int>(type)];
}

KernelTable& kernel_table(DeviceType type) {
  register_builtin_backends();
  return unchecked_kernel_table(type);
}

}  // namespace rg
