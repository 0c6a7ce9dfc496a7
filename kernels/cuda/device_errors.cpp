// See device_errors.h. Per device: a ring of kSlots device slots allocated once (never
// freed, like the cuBLAS workspace) and, on the host, the message of each pending slot; the
// slots that graphs hold are skipped by eager claims.
#include "kernels/cuda/device_errors.h"

#include <algorithm>
#include <atomic>
#include <mutex>
#include <utility>
#include <vector>

#include "core/device_interface.h"
#include "core/error.h"
#include "core/memory_accounting.h"
#include "kernels/cuda/capture_rules.h"
#include "kernels/cuda/stream.h"

namespace rg::gpu {

namespace {

constexpr int kSlots = 256;

using Pending = ErrorSlot;

struct Ring {
  std::mutex mutex;
  int64_t* slots = nullptr;  // device memory, kSlots * 2
  std::vector<Pending> pending;
  int next = 0;                                        // eager claims: 0..next-1 are taken
  std::vector<bool> held = std::vector<bool>(kSlots);  // by a graph
  std::vector<ErrorSlot> captured;                     // claimed by the capture under way
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

void prepare_locked(Device d, Ring& r) {
  if (r.slots) return;
  const size_t bytes = kSlots * 2 * sizeof(int64_t);
  r.slots = static_cast<int64_t*>(device_interface(d.type).allocate(bytes, d.index));
  account_process_block(d, device_interface(d.type).block_bytes(bytes));
  zero_slots(d, r.slots);
}

// The next slot no eager launch and no graph holds, or -1.
int free_slot_locked(Ring& r) {
  while (r.next < kSlots && r.held[r.next]) ++r.next;
  return r.next < kSlots ? r.next++ : -1;
}

// Whether the calling thread's launches on `d` go to a capturing stream.
bool launch_is_captured(Device d) {
  void* capturing = capturing_stream_of(d);
  return capturing && capturing == current_stream(d).handle;
}

}  // namespace

int64_t* claim_error_slot(Device d, std::string before, std::string after) {
  Ring& r = ring(d);
  std::lock_guard<std::mutex> lock(r.mutex);
  prepare_locked(d, r);
  const bool captured = launch_is_captured(d);
  int slot = free_slot_locked(r);
  if (slot < 0) {  // every slot pending: wait for them now (not possible while capturing)
    RG_CHECK(!captured, "device errors: all ", kSlots, " error slots of ", d.str(), ":", d.index,
             " are pending or held by graphs, and a stream captures (no synchronization now)");
    check_locked(d, r);
    slot = free_slot_locked(r);
    RG_CHECK(slot >= 0, "device errors: all ", kSlots, " error slots of ", d.str(), ":", d.index,
             " are held by graphs");
  }
  if (captured) {
    r.held[slot] = true;
    r.captured.push_back({slot, std::move(before), std::move(after)});
  } else {
    r.pending.push_back({slot, std::move(before), std::move(after)});
  }
  return r.slots + 2 * slot;
}

void prepare_error_slots(Device d) {
  Ring& r = ring(d);
  std::lock_guard<std::mutex> lock(r.mutex);
  prepare_locked(d, r);
}

std::vector<ErrorSlot> take_captured_error_slots(Device d) {
  Ring& r = ring(d);
  std::lock_guard<std::mutex> lock(r.mutex);
  return std::exchange(r.captured, {});
}

void arm_error_slots(Device d, const std::vector<ErrorSlot>& slots) {
  if (slots.empty()) return;
  Ring& r = ring(d);
  std::lock_guard<std::mutex> lock(r.mutex);
  for (const ErrorSlot& s : slots) {
    const bool armed = std::any_of(r.pending.begin(), r.pending.end(),
                                   [&](const Pending& p) { return p.slot == s.slot; });
    if (!armed) r.pending.push_back(s);
  }
}

void release_error_slots(Device d, const std::vector<ErrorSlot>& slots) {
  if (slots.empty()) return;
  Ring& r = ring(d);
  std::lock_guard<std::mutex> lock(r.mutex);
  for (const ErrorSlot& s : slots) {
    r.held[s.slot] = false;
    std::erase_if(r.pending, [&](const Pending& p) { return p.slot == s.slot; });
  }
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
