// ProcessGroup: the ranks of one data-parallel job and the operations between them, with
// PyTorch's names. It is the public face over three parts (docs/architecture.md draws them):
// a Transport moves messages (dist/transport.h: one per backend), algorithms written once
// over it do the collectives (ring_allreduce.h, direct_exchange.h, broadcast.h,
// single_copy_allreduce.h), and a CollectiveScheduler runs them one at a time in the order
// they were issued (dist/collective_scheduler.h), so every rank must issue the same
// collectives in the same order (as with NCCL). Each call returns at once with a Work handle.
//
// Contract of the collectives: tensors are contiguous and stay alive and untouched until the
// Work completes; they are updated in place. Any length works, including 0. dtypes: f32, f64,
// bf16 (accumulated in f32) for every op; i32/i64 for sum and max. A failure (a rank that
// dies, stops answering, or calls a different collective) fails the whole group: every
// later operation throws the first error, which names the rank and the operation.
#pragma once
#include <memory>
#include <mutex>
#include <string>

#include "core/tensor.h"
#include "dist/collective_scheduler.h"
#include "dist/options.h"
#include "dist/transport.h"
#include "dist/work.h"

namespace rg::dist {

class ProcessGroup {
 public:
  ProcessGroup(int rank, int size, Options options, std::unique_ptr<Transport> transport);
  ~ProcessGroup();
  ProcessGroup(const ProcessGroup&) = delete;
  ProcessGroup& operator=(const ProcessGroup&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }
  const Options& options() const { return options_; }
  const char* backend_name() const { return transport_->name(); }
  Transport& transport() const { return *transport_; }

  // ---- point-to-point (user level): messages with equal (peer, tag) arrive in order.
  std::shared_ptr<Work> send(const Tensor& tensor, int dst, int tag = 0);
  std::shared_ptr<Work> recv(const Tensor& tensor, int src, int tag = 0);

  // ---- collectives (asynchronous, in place)
  std::shared_ptr<Work> allreduce(const Tensor& tensor, CombineOp op = CombineOp::sum);
  std::shared_ptr<Work> broadcast(const Tensor& tensor, int root);
  // out holds size() * in.numel() elements: rank r's `in` lands at out[r * in.numel()].
  // `in` may be that very slice of `out` (in place).
  std::shared_ptr<Work> allgather(const Tensor& out, const Tensor& in);
  // in holds size() * out.numel() elements; rank r gets the reduction of slice r. `out` may
  // be a slice of `in` (the ring reduces a copy of `in`).
  std::shared_ptr<Work> reduce_scatter(const Tensor& out, const Tensor& in,
                                       CombineOp op = CombineOp::sum);
  std::shared_ptr<Work> barrier();

  // Fails the group: pending and later operations throw, and the other ranks are told
  // (they fail naming this rank and `reason`) instead of waiting for the timeout.
  void abort(const std::string& reason);

  // Whether tensors on `device` can be used; where the group's own small buffers live.
  bool supports_device(Device device) const { return transport_->supports_device(device); }
  Device default_device() const { return transport_->default_device(); }
  // How this rank reaches `peer`: "self", "memory" (threads of one process), "shm" (shared-
  // memory rings: same host), "tcp" (sockets: another host), "nccl", "mpi".
  std::string peer_link(int peer) const;
  // "0 self, 1 shm, 2 tcp, ...": every peer's link, for logs and benches.
  std::string describe_links() const;

  // ---- statistics
  // Collectives issued on this group so far (counted when called, whatever their outcome).
  uint64_t collectives_issued() const { return scheduler_.collectives_issued(); }
  uint64_t collectives_issued(Collective kind) const { return scheduler_.collectives_issued(kind); }
  // Of those, the ones that took the lean path (dist/lean_collective.cpp).
  uint64_t lean_collectives_issued() const { return scheduler_.lean_collectives_issued(); }
  // What the single-copy path (dist/single_copy_allreduce.cpp) has done on this group, for
  // tests and benchmarks.
  struct SingleCopyCounters {
    uint64_t collectives = 0;  // all-reduces it completed
    // Peers' buffers those all-reduces read with plain loads (one per peer per all-reduce): a
    // peer in this process, or whose buffer lies in its shareable arena, mapped here
    // (core/shareable_host_memory.h). The others were read with process_vm_readv.
    uint64_t peer_buffers_loaded = 0;
    // What the ranks agreed about reading each other's memory (set by the first one).
    PeerReads peer_reads = PeerReads::untested;
  };
  SingleCopyCounters single_copy_counters() const {
    const CollectiveContext& ctx = scheduler_.context();
    return {ctx.single_copy_collectives(), ctx.peer_buffers_loaded(), ctx.peer_reads()};
  }

 private:
  void check_tensor(const Tensor& t, const char* what) const;

  int rank_;
  int size_;
  Options options_;
  std::unique_ptr<Transport> transport_;
  CollectiveScheduler scheduler_;  // after transport_: stopped before it goes
  Tensor barrier_token_;           // the barrier's empty buffer
  std::once_flag barrier_token_made_;
};

}  // namespace rg::dist
