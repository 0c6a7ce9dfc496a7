// CollectiveContext: what an algorithm runs with. The transport, the group's options, which
// ranks share a host, the scratch memory the collectives reuse from one to the next, and the
// state the single-copy path keeps between collectives, with its counters. The CollectiveScheduler
// owns one and hands it to each collective it runs; only the thread running a collective touches
// it.
#pragma once
#include <atomic>
#include <cstdint>
#include <vector>

#include "dist/options.h"
#include "dist/topology.h"
#include "dist/transport.h"

namespace rg::dist {

// Whether the ranks may read each other's memory (dist/single_copy_allreduce.cpp): tested
// once by the first single-copy all-reduce, agreed by all ranks.
enum class PeerReads : uint8_t { untested, agreed, refused };

class CollectiveContext {
 public:
  CollectiveContext(Transport& transport, const Options& options);

  Transport& transport() const { return transport_; }
  const TransportCapabilities& capabilities() const { return capabilities_; }
  const Options& options() const { return options_; }
  int rank() const { return transport_.rank(); }
  int size() const { return transport_.size(); }
  // Which ranks share this rank's host (from transport().host_of_ranks(), fixed).
  const HostLayout& hosts() const { return hosts_; }

  // Scratch memory by slot, reused (fresh pages cost a page fault each); valid until the next
  // call with the same slot.
  Tensor scratch(int64_t slot, int64_t numel, DType dtype, Device device);
  // The same memory as a byte buffer of at least `nbytes` (no new tensor: the lean path).
  const Tensor& scratch_bytes(int64_t slot, size_t nbytes, Device device);

  // What the ranks agreed about reading each other's memory (set once, by the first
  // single-copy all-reduce).
  PeerReads peer_reads() const { return peer_reads_; }
  void set_peer_reads(PeerReads verdict) { peer_reads_ = verdict; }
  // Counted by the single-copy path: all-reduces it completed, and peers' buffers it read
  // with plain loads (the others were read with process_vm_readv). Read from any thread.
  void count_single_copy() { single_copy_done_.fetch_add(1, std::memory_order_relaxed); }
  void count_peer_loads() { peer_loads_.fetch_add(1, std::memory_order_relaxed); }
  uint64_t single_copy_collectives() const {
    return single_copy_done_.load(std::memory_order_relaxed);
  }
  uint64_t peer_buffers_loaded() const { return peer_loads_.load(std::memory_order_relaxed); }

 private:
  Transport& transport_;
  TransportCapabilities capabilities_;
  const Options& options_;
  HostLayout hosts_;
  std::vector<Tensor> scratch_;  // raw byte buffers, by slot
  PeerReads peer_reads_ = PeerReads::untested;
  std::atomic<uint64_t> single_copy_done_{0};
  std::atomic<uint64_t> peer_loads_{0};
};

}  // namespace rg::dist
