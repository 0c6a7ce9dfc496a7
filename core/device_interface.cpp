#include "core/device_interface.h"

#include <array>
#include <atomic>
#include <mutex>

#include "core/error.h"
#include "core/storage.h"

namespace rg {

void register_cpu_device();  // core/cpu_allocator.cpp

namespace {
std::array<DeviceInterface, kNumDeviceTypes>& registry() {
  static std::array<DeviceInterface, kNumDeviceTypes> r;
  return r;
}
// Constant-initialised, so a loader installed by a static initialiser is never overwritten.
std::atomic<void (*)()> g_backend_loader{nullptr};
}  // namespace

void set_backend_loader(void (*loader)()) { g_backend_loader.store(loader); }

void load_backends() {
  static std::once_flag cpu_once;
  std::call_once(cpu_once, register_cpu_device);
  if (auto loader = g_backend_loader.load()) loader();
}

Device Device::parse(const std::string& spec) {
  std::string kind = spec;
  int index = 0;
  if (auto colon = spec.find(':'); colon != std::string::npos) {
    kind = spec.substr(0, colon);
    try {
      index = std::stoi(spec.substr(colon + 1));
    } catch (...) {
      RG_FAIL("Device: bad device index in '", spec, "'");
    }
  }
  if (kind == "cpu") return Device(DeviceType::cpu, index);
  if (kind == "sim") return Device(DeviceType::sim, index);
  if (kind == "cuda") return Device(DeviceType::cuda, index);
  RG_FAIL("Device: unknown device '", spec, "' (expected cpu, sim, cuda or cuda:N)");
}

std::string Device::str() const {
  const char* names[] = {"cpu", "sim", "cuda"};
  std::string s = names[static_cast<int>(type)];
  if (type == DeviceType::cuda) {
    s.push_back(':');
    s.append(std::to_string(index));
  }
  return s;
}

void register_device(DeviceType type, const DeviceInterface& interface) {
  registry()[static_cast<int>(type)] = interface;
}

bool device_available(DeviceType type) {
  load_backends();
  const auto& d = registry()[static_cast<int>(type)];
  return d.allocate != nullptr && (!d.device_count || d.device_count() > 0);
}

const DeviceInterface& device_interface(DeviceType type) {
  load_backends();
  const auto& d = registry()[static_cast<int>(type)];
  if (d.allocate == nullptr) {
    RG_CHECK(type != DeviceType::cuda || g_backend_loader.load() == nullptr, "device ",
             Device(type).str(),
             ": this ringgrad was built without the cuda backend (configure with -Dcuda=enabled)");
    RG_CHECK(type != DeviceType::sim || g_backend_loader.load() == nullptr, "device ",
             Device(type).str(),
             ": this ringgrad was built without the sim device (configure with -Dsim=true; "
             "pip install . -Csetup-args=-Dsim=true)");
    RG_FAIL("device ", Device(type).str(),
            ": no backend registered for it (the kernels layer "
            "registers sim and cuda; a program linked with core alone has only cpu)");
  }
  RG_CHECK(!d.device_count || d.device_count() > 0, "device ", Device(type).str(),
           ": the backend is built but finds no device",
           d.why_no_device ? str(": ", d.why_no_device()) : std::string());
  return d;
}

std::shared_ptr<Storage> allocate_storage(size_t nbytes, Device device) {
  const auto& d = device_interface(device.type);
  void* p = d.allocate(nbytes, device.index);
  auto dealloc = d.deallocate;
  int index = device.index;
  try {
    auto storage = std::make_shared<Storage>(
        p, nbytes, device, [dealloc, index](void* ptr, size_t n) { dealloc(ptr, n, index); });
    account_allocation(*storage, d.block_bytes ? d.block_bytes(nbytes) : nbytes);
    return storage;
  } catch (...) {  // out of memory for the bookkeeping: give the block back
    dealloc(p, nbytes, index);
    throw;
  }
}

std::shared_ptr<Storage> borrow_storage(void* data, size_t nbytes, Device device) {
  return std::make_shared<Storage>(data, nbytes, device, nullptr);
}

AllocatorStats memory_stats(Device device) {
  const auto& d = device_interface(device.type);
  AllocatorStats stats = d.stats ? d.stats(device.index) : AllocatorStats{};
  stats.categories = memory_category_stats(device);
  return stats;
}
void empty_cache(Device device) {
  const auto& d = device_interface(device.type);
  if (d.empty_cache) d.empty_cache(device.index);
}
void synchronize(Device device) {
  const auto& d = device_interface(device.type);
  if (d.synchronize) d.synchronize(device.index);
}

}  // namespace rg
