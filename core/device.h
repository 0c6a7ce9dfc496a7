// Where a tensor's memory lives: the host (cpu), the CPU interpreter of the CUDA
// backend (sim: host memory, kernels run by the interpreter), or a CUDA GPU.
#pragma once
#include <ostream>
#include <string>

namespace rg {

enum class DeviceType : uint8_t { cpu = 0, sim = 1, cuda = 2 };
inline constexpr int kNumDeviceTypes = 3;
// Device indices the gpu runtime keeps per-device state for (streams, captures, error slots).
inline constexpr int kMaxDeviceIndex = 16;

struct Device {
  DeviceType type = DeviceType::cpu;
  int index = 0;
  Device() = default;
  Device(DeviceType t, int i = 0) : type(t), index(i) {}
  Device(const char* spec) : Device(parse(spec)) {}  // "cpu", "sim", "cuda", "cuda:1"
  Device(const std::string& spec) : Device(parse(spec)) {}
  static Device parse(const std::string& spec);
  bool is_cpu() const { return type == DeviceType::cpu; }
  bool is_cuda() const { return type == DeviceType::cuda; }
  bool is_sim() const { return type == DeviceType::sim; }
  // Host-addressable memory (cpu and sim).
  bool is_host_memory() const { return type != DeviceType::cuda; }
  std::string str() const;
  bool operator==(const Device&) const = default;
};

inline const Device kCPU{DeviceType::cpu, 0};
inline std::ostream& operator<<(std::ostream& os, const Device& d) { return os << d.str(); }

}  // namespace rg
