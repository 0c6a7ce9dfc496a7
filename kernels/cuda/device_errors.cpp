// See device_errors.h. Per device: a ring of kSlots device slots allocated once (never
// freed, like the cuBLAS workspace) and, on the host, the message of each pending slot.
#include "kernels/cuda/device_errors.h"

#include <atomic>
#include <mutex>
#include <vector>

#include "core/device_interface.h"
#include "core/error.h"
#include "core/memory_accounting.h"

namespace rg::gpu {

namespace {

constexpr int kSlots = 256;

struct Pending {
  int slot;
  std::string before, after;
};

struct Ring {
  std::mutex mutex;
  int64_t* slots = nullptr;  // device memory, kSlots * 2
  std::vector<Pending> pending;
  int next = 0;
};

std::atomic<uint64_t> g_syncs[kNumDeviceTypes][kMaxDeviceIndex];
thread_local bool tls_checking = false;  // the check's own copy is not checked again

Ring& ring(Device d) {
  RG_CHECK(d.index >= 0 && d.index < kMaxDeviceIndex, "device errors: device index ", d.index,
           " out of range");
  static Ring* rings = new Ring[kNumDeviceTypes * kMaxDeviceIndex];  // never destroyed
  return rings[int(d.type) * kMaxDeviceIndex + d.index];
}

// Copies without counting or checking: the ring's own traffic is part of the sync that
// triggered it.
void raw_copy(void* dst, Device dst_device, const void* src, Device src_device, size_t n) {
  tls_checking = true;
  try {
    device_interface(dst_device.is_cpu() ? src_device.type : dst_device.type)
        .copy(dst, dst_device, src, src_device, n);
  } catch (...) {
    tls_checking = false;
    throw;
  }
  tls_checking = false;
}

void zero_slots(Device d, int64_t* slots) {
  static const std::vector<int64_t> zeros(kSlots * 2, 0);
  raw_copy(slots, d, zeros.data(), kCPU, zeros.size() * sizeof(int64_t));
}

// Throws the first failed pending slot's message; the ring is clear either way.
void check_locked(Device d, Ring& r) {
  if (r.pending.empty()) return;
  std::vector<int64_t> host(kSlots * 2);
  raw_copy(host.data(), kCPU, r.slots, d, host.size() * sizeof(int64_t));
  std::vector<Pending> pending = std::move(r.pending);
  r.pending.clear();
  r.next = 0;
  for (const Pending& p : pending) {
    if (host[2 * p.slot] == 0) continue;
    zero_slots(d, r.slots);
    RG_FAIL(p.before, host[2 * p.slot + 1], p.after);
  }
}

}  // namespace

int64_t* claim_error_slot(Device d, std::string before, std::string after) {
  Ring& r = ring(d);
  std::lock_guard<std::mutex> lock(r.mutex);
  if (!r.slots) {
    const size_t bytes = kSlots * 2 * sizeof(int64_t);
    r.slots = static_cast<int64_t*>(device_interface(d.type).allocate(bytes, d.index));
    account_process_block(d, device_interface(d.type).block_bytes(bytes));
    zero_slots(d, r.slots);
  }
  if (r.next == kSlots) check_locked(d, r);  // every slot pending: wait for them now
  const int slot = r.next++;
  r.pending.push_back({slot, std::move(before), std::move(after)});
  return r.slots + 2 * slot;
}

void check_device_errors(Device d) {
  if (tls_checking || d.type == DeviceType::cpu) return;
  Ring& r = ring(d);
  std::lock_guard<std::mutex> lock(r.mutex);
  check_locked(d, r);
}

uint64_t host_syncs(Device d) { return g_syncs[int(d.type)][d.index % kMaxDeviceIndex].load(); }

void count_host_sync(Device d) {
  if (!tls_checking) g_syncs[int(d.type)][d.index % kMaxDeviceIndex]++;
}

}  // namespace rg::gpu
