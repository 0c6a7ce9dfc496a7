// ProcessGroup: the ranks of one data-parallel job and the operations between them.
//
// Every backend provides point-to-point messages (send_message/recv_message); the collectives
// (allreduce, broadcast, allgather, reduce_scatter, barrier) are written once over them
// (dist/ring_allreduce.cpp, dist/broadcast.cpp) and run one at a time in the order they were
// issued (on the group's communication thread, or on the thread that waits for them; small
// ones take a lean path, dist/lean_collective.cpp), so every rank must issue the same
// collectives in the same order (as with NCCL). Each call returns at once with a Work handle.
//
// Contract of the collectives: tensors are contiguous and stay alive and untouched until the
// Work completes; they are updated in place. Any length works, including 0. dtypes: f32, f64,
// bf16 (accumulated in f32) for every op; i32/i64 for sum and max. A failure (a rank that
// dies, stops answering, or calls a different collective) fails the whole group: every
// later operation throws the first error, which names the rank and the operation.
#pragma once
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/tensor.h"
#include "dist/job_token.h"

namespace rg::dist {

enum class CombineOp : uint8_t { sum, avg, max };
const char* combine_op_name(CombineOp op);

// Every kind of operation a message can belong to; `p2p` is a user's send/recv.
#define RG_COLLECTIVES(X) X(p2p) X(allreduce) X(broadcast) X(allgather) X(reduce_scatter) X(barrier)
enum class Collective : uint8_t {
#define RG_COLLECTIVE_ENUM(name) name,
  RG_COLLECTIVES(RG_COLLECTIVE_ENUM)
#undef RG_COLLECTIVE_ENUM
};
inline constexpr int kNumCollectives = 6;
const char* collective_name(Collective kind);

using Clock = std::chrono::steady_clock;
using Milliseconds = std::chrono::milliseconds;

// RG_DIST_TIMEOUT (seconds, may be fractional) when set, else 300 s.
Milliseconds default_timeout();
// RG_DIST_DIRECT_BYTES (a whole number of bytes, 0 turns the direct exchange off) when set,
// else 32 KiB (the crossover measured with bench/allreduce, see docs/dist.md).
size_t default_direct_bytes();
// RG_DIST_SINGLE_COPY_BYTES (a whole number of bytes, 0 turns the single-copy path off) when
// set, else 32 KiB; RG_DIST_SINGLE_COPY_READ_BYTES likewise, else 2 MiB (the crossovers
// measured with bench/allreduce, see docs/dist.md).
size_t default_single_copy_bytes();
size_t default_single_copy_read_bytes();

struct Options {
  // How long any rank waits for another to send or receive before the group fails.
  Milliseconds timeout = default_timeout();
  // Ring pipelining: each segment is cut into chunks of about this many bytes.
  size_t chunk_bytes = 512 << 10;
  // All-reduces of at most this many bytes, and barriers, skip the ring for a direct
  // exchange: one message step instead of 2 (N-1) (dist/ring_allreduce.cpp). 0: never.
  size_t direct_bytes = default_direct_bytes();
  // All-reduces of at least this many bytes between ranks of one host reach the peers'
  // buffers directly, one copy per byte (dist/single_copy_allreduce.cpp), where every
  // buffer lies in its process's shareable arena (core/shareable_host_memory.h: blocks of
  // this size allocated after the group was made) or the ranks are threads. 0: never.
  size_t single_copy_bytes = default_single_copy_bytes();
  // From this many bytes also where some buffer does not (such a buffer is read with
  // process_vm_readv, which costs more per byte, so it pays only for larger buffers).
  size_t single_copy_read_bytes = default_single_copy_read_bytes();
  // false: this rank refuses to have its memory read by its peers (every rank then takes
  // the ring instead of the single-copy path, as when the kernel forbids such reads).
  bool allow_peer_reads = true;
  // Connections between the ranks (tcp backend, store) must present it (see job_token.h).
  std::string job_token = job_token_from_env();
};

// What a message belongs to. It travels with every message, and the receiver compares it
// with its own: a rank that called another collective, or one with another count or dtype,
// is reported instead of silently exchanging garbage.
struct Envelope {
  Collective kind = Collective::p2p;
  CombineOp op = CombineOp::sum;
  DType dtype = DType::f32;
  int32_t tag = 0;
  int32_t root = -1;
  uint64_t seq = 0;   // collective number on the group (0 for p2p)
  int64_t count = 0;  // elements per rank of the collective (of the message for p2p)
  bool operator==(const Envelope&) const = default;
};
std::string describe(const Envelope& env);  // "allreduce #3 (sum of 1000 float32)"

// Whether the ranks may read each other's memory (dist/single_copy_allreduce.cpp): tested
// once by the first single-copy all-reduce, agreed by all ranks.
enum class PeerReads : uint8_t { untested, agreed, refused };

// Handle of an asynchronous operation.
class Work {
 public:
  virtual ~Work() = default;
  // True once finished within `timeout`, false if still running; throws the operation's
  // rg::Error if it failed.
  virtual bool wait(Milliseconds timeout) = 0;
  // Blocks until finished; throws its rg::Error if it failed. Bounded by the group's
  // timeout (a peer that does not answer fails the group), so it never hangs on a dead rank.
  virtual void wait();
  virtual bool is_completed() = 0;
};

// A Work completed by someone else calling finish(); used for collectives.
class PromiseWork : public Work {
 public:
  bool wait(Milliseconds timeout) override;
  bool is_completed() override;
  void finish(std::exception_ptr error = nullptr);

 protected:
  // For a work known to be finished: throws its error, if any.
  void rethrow_error();
  // Unfinished again, for reuse by the only holder of a finished work.
  void rearm();

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::atomic<bool> done_{false};  // set under mu_, read without it by is_completed
  std::exception_ptr error_;
};

class LeanWork;

class ProcessGroup {
 public:
  ProcessGroup(int rank, int size, Options options);
  virtual ~ProcessGroup();
  ProcessGroup(const ProcessGroup&) = delete;
  ProcessGroup& operator=(const ProcessGroup&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }
  const Options& options() const { return options_; }
  virtual const char* backend_name() const = 0;

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

  // Collectives issued on this group so far (counted when called, whatever their outcome).
  uint64_t collectives_issued() const;
  uint64_t collectives_issued(Collective kind) const;
  // Of those, the ones that took the lean path (dist/lean_collective.cpp).
  uint64_t lean_collectives_issued() const { return lean_issued_.load(std::memory_order_relaxed); }
  // All-reduces completed by the single-copy path (dist/single_copy_allreduce.cpp).
  uint64_t single_copy_collectives() const {
    return single_copy_done_.load(std::memory_order_relaxed);
  }
  // Peers' buffers those all-reduces read with plain loads (one per peer per all-reduce): a
  // peer in this process, or whose buffer lies in its shareable arena, mapped here
  // (core/shareable_host_memory.h). The others were read with process_vm_readv.
  uint64_t peer_buffers_loaded() const { return peer_loads_.load(std::memory_order_relaxed); }

  // ---- the message layer the algorithms are written over. `env` travels with the message
  // and must equal the receiver's; user p2p uses tags >= 0, collectives use kCollectiveTag.
  static constexpr int kCollectiveTag = -1;
  virtual std::shared_ptr<Work> send_message(const Tensor& tensor, int dst,
                                             const Envelope& env) = 0;
  virtual std::shared_ptr<Work> recv_message(const Tensor& tensor, int src,
                                             const Envelope& env) = 0;
  // A receive that folds the payload into `into` (into = into (op) payload) as it arrives,
  // where combines_on_receive(into) says the backend can; the others receive into scratch
  // memory and reduce after (the ring all-reduce asks first).
  virtual bool combines_on_receive(const Tensor& into) const {
    (void)into;
    return false;
  }
  virtual std::shared_ptr<Work> recv_combine_message(const Tensor& into, int src,
                                                     const Envelope& env, CombineOp op);
  // The direct exchange of small all-reduces: sends `mine` to every peer and receives peer
  // q's into slice q of `inputs` (elements [q * mine.numel(), (q + 1) * mine.numel())),
  // then returns. The default posts a send and a receive per peer and waits; the host
  // backends move the frames straight through their shared-memory rings where they can.
  virtual void exchange_with_all(const Tensor& mine, const Tensor& inputs, const Envelope& env);
  // The same exchange in two halves, for backends where exchanges_eagerly(): the lean path
  // of small all-reduces and barriers (dist/lean_collective.cpp) sends when the collective is
  // issued and receives when it is waited for. send_exchange returns true if every frame
  // went out whole (false: some wait in the backend for a progress loop to push them).
  // receive_exchange's `inputs` holds N messages of `message_bytes` (mine.nbytes() of the
  // send), in any dtype (a byte buffer too): peer q's lands at byte q * message_bytes.
  virtual bool exchanges_eagerly() const { return false; }
  // Whether every peer runs on this host (a process, or a thread of this one) whose memory
  // process_vm_readv may read: the single-copy all-reduce asks first.
  virtual bool peers_share_host() const { return false; }
  // How this rank reaches `peer`: "self", "memory" (threads of one process), "shm" (shared-
  // memory rings: same host), "tcp" (sockets: another host or node), "nccl".
  virtual std::string peer_link(int peer) const;
  // "0 self, 1 shm, 2 tcp, ...": every peer's link, for logs and benches.
  std::string describe_links() const;
  // What the ranks agreed about reading each other's memory (set once, by the first
  // single-copy all-reduce; dist/single_copy_allreduce.cpp).
  PeerReads peer_reads() const { return peer_reads_; }
  void set_peer_reads(PeerReads verdict) { peer_reads_ = verdict; }
  // Called by each single-copy all-reduce that completes (read by single_copy_collectives()).
  void count_single_copy() { single_copy_done_.fetch_add(1, std::memory_order_relaxed); }
  void count_peer_loads() { peer_loads_.fetch_add(1, std::memory_order_relaxed); }
  virtual bool send_exchange(const Tensor& mine, const Envelope& env);
  virtual void receive_exchange(const Tensor& inputs, size_t message_bytes, const Envelope& env);
  // Waits for a message op of a collective; past options().timeout the group fails with an
  // error naming the peer that did not answer.
  virtual void wait_message(Work& work, int peer, const Envelope& env);
  // Messages posted between begin_batch and end_batch may be started together (NCCL groups).
  virtual void begin_batch() {}
  virtual void end_batch() {}
  // Called after a collective ran, before its Work completes, on the thread that ran it. A
  // backend whose wait_message only hands messages to a device stream (nccl) waits here, on
  // the host, with the timeout, for them to be done, and fails naming a late peer.
  virtual void finish_collective() {}
  // Fails the group: pending and later operations throw, and the other ranks are told
  // (they fail naming this rank and `reason`) instead of waiting for the timeout.
  virtual void abort(const std::string& reason) = 0;
  // Scratch memory of the collectives, reused from one to the next (fresh pages cost a page
  // fault each). Only for the communication thread; valid until the next call.
  Tensor scratch(int64_t slot, int64_t numel, DType dtype, Device device);
  // The same memory as a byte buffer of at least `nbytes` (no new tensor: the lean path).
  const Tensor& scratch_bytes(int64_t slot, size_t nbytes, Device device);
  // Whether tensors on `device` can be sent by this backend.
  virtual bool supports_device(Device device) const = 0;
  // Where the group's own small buffers (the barrier's token) live.
  virtual Device default_device() const { return kCPU; }

 protected:
  // Stops the communication thread after the running collective; queued ones fail.
  // Derived destructors call this first, before their own members go away.
  void shutdown();
  // The message of the group's first failure, or empty.
  std::string failure() const;
  // `error`, when given, is what later collectives throw (keeping its type, e.g. DistError).
  void set_failure(const std::string& message, std::exception_ptr error = nullptr);

 private:
  using Task = std::function<void()>;
  using Item = std::pair<Task, std::shared_ptr<PromiseWork>>;
  friend class CollectiveWork;
  friend class LeanWork;
  std::shared_ptr<Work> enqueue(Collective kind, Task task);
  // The lean path (dist/lean_collective.cpp): a small all-reduce or barrier issued while
  // nothing else is queued or running sends at once and is received by its waiter. Returns
  // null when the collective does not qualify (the caller queues it).
  std::shared_ptr<Work> issue_lean(Collective kind, const Tensor& t, CombineOp op);
  bool lean_eligible(const Tensor& t) const;
  void count_issued_locked(Collective kind);
  // Receives and reduces the pending lean collective on this thread if it is `work` (true;
  // throws its error if it failed).
  bool complete_lean(const PromiseWork* work);
  // Queues the pending lean collective (if it is `work`, or any when null) first in line for
  // the communication thread; with mu_ held. True if it did (the caller notifies).
  bool hand_over_lean_locked(const PromiseWork* work = nullptr);
  void hand_over_lean(const PromiseWork* work);
  void receive_and_reduce(LeanWork& work);
  std::shared_ptr<LeanWork> recycled_lean(const Tensor& t, CombineOp op, const Envelope& env);
  // Runs the item (unless the group failed), frees the group (running_) and then finishes
  // its work with the outcome: a caller that sees the work finished finds the group free
  // (the next small collective can take the lean path).
  void run_item(Item& item);
  // If `work` is queued and no collective runs, runs the queue up to and including it on the
  // calling thread (the caller waits at once: no hand-off to the communication thread and
  // back). True if it ran `work`.
  bool try_run_inline(const PromiseWork* work);
  Envelope next_envelope(Collective kind, const Tensor& t, int64_t count);
  void comm_loop();
  void check_tensor(const Tensor& t, const char* what) const;

  int rank_;
  int size_;
  Options options_;
  std::atomic<uint64_t> issued_[kNumCollectives] = {};
  std::atomic<uint64_t> lean_issued_{0};
  std::atomic<uint64_t> single_copy_done_{0};
  std::atomic<uint64_t> peer_loads_{0};
  PeerReads peer_reads_ = PeerReads::untested;
  uint64_t next_seq_ = 1;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Item> queue_;
  bool stopping_ = false;
  bool running_ = false;            // a collective runs (on the communication thread or inline)
  std::shared_ptr<LeanWork> lean_;  // sent, not yet received (it holds running_)
  std::shared_ptr<LeanWork> spare_lean_;  // the last lean work, reused once no one holds it
  Tensor barrier_token_;                  // the barrier's empty buffer
  std::once_flag barrier_token_made_;
  std::string failure_;
  std::exception_ptr failure_error_;
  std::thread comm_thread_;
  std::vector<Tensor> scratch_;  // raw byte buffers, by slot
};

}  // namespace rg::dist
