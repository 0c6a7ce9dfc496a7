// Index checks without a host synchronization, and a count of host synchronizations.
// A kernel that validates indices (cross-entropy targets, embedding ids) gets a slot of its
// device's error ring (DeviceErrorSlot in common.cuh): on a bad index it stores 1 and the
// value there. The launch registers the message it would throw; the host reads the ring at
// the next synchronization the program already makes -- a copy to the host (loss.item()),
// synchronize() -- and throws that rg::Error, naming the op and the value, there. So a
// training step pays no stall for its checks, and a bad index is still an rg::Error (later,
// as on PyTorch's GPUs, but with the op's own message).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/device.h"

namespace rg::gpu {

// A slot (int64 [2], zero) of `device`'s ring for one launch, whose failure reads
// `before` + value + `after`. If every slot is pending, the ring is checked first (a sync).
int64_t* claim_error_slot(Device device, std::string before, std::string after);
// Reads the pending slots after the host has waited for the device; throws the first
// failure's message (in launch order) and clears the ring. Called by the runtimes after a
// copy to the host or a synchronization (not for the ring's own copies).
void check_device_errors(Device device);

// Graph capture (kernels/cuda/graph.h). A launch captured claims its slot as before, but
// the slot then belongs to the graph: no eager launch reuses it, and it is checked after each
// replay -- replay() arms the graph's slots again, pending until the next synchronization.
struct ErrorSlot {
  int slot;
  std::string before, after;
};
// Makes `device`'s ring now (a synchronous copy zeroes it), before a capture would need it.
void prepare_error_slots(Device device);
// The slots claimed while a stream of `device` captured, handed over at the capture's end.
std::vector<ErrorSlot> take_captured_error_slots(Device device);
// Pending again until the next check (each replay); given back to the ring (the graph's end).
void arm_error_slots(Device device, const std::vector<ErrorSlot>& slots);
void release_error_slots(Device device, const std::vector<ErrorSlot>& slots);

// Host synchronizations with `device` so far: copies to the host, stream, event and device
// synchronizations (bench/train_step --device reports them per step).
uint64_t host_syncs(Device device);
void count_host_sync(Device device);

}  // namespace rg::gpu
