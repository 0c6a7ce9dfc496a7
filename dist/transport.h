// Transport: how one rank's messages reach its peers. It is the only part of dist/ a backend
// writes (dist/message_transport.cpp for threads and tcp, dist/nccl_group.cpp for nccl); the
// collectives are algorithms over it (ring_allreduce, direct_exchange, broadcast,
// single_copy_allreduce), run one at a time by the CollectiveScheduler, behind the
// ProcessGroup users call. docs/adding-a-transport.md walks through writing one.
//
// Contract: send_message/recv_message post a message and return at once; messages between one
// pair of ranks with equal tags arrive in the order posted. `env` travels with each message
// and must equal the receiver's, else both fail naming the mismatch. Only the thread that
// runs the collectives (or a user's send/recv) calls these, one collective at a time.
#pragma once
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "dist/dist_error.h"
#include "dist/work.h"
#include "kernels/cuda/stream.h"

namespace rg::dist {

// What a transport can do beyond plain messages; the algorithms and the scheduler ask these
// instead of which backend they run on. Fixed once the transport is made, equal on every rank
// of a group.
struct TransportCapabilities {
  // Every peer runs on this host, and the single-copy all-reduce may reach its memory
  // (dist/single_copy_allreduce.cpp).
  bool shared_memory = false;
  // send_exchange/receive_exchange work: the lean path of small collectives sends when issued
  // and receives when waited for (dist/lean_collective.cpp).
  bool eager_exchange = false;
  // recv_combine_message folds host-memory payloads whose dtype combines_bytes() handles
  // into the destination as they arrive (the ring all-reduce then needs no scratch copy).
  bool combines_on_receive = false;
  // Messages are handed to device streams: wait_message only orders the consumer's stream;
  // collectives run on comm_stream() and complete as an event on it (dist/stream_work.h),
  // and finish_collective hands their messages to a watchdog instead of waiting (nccl).
  bool device_streams = false;
};

// Payload bytes one rank has sent, by the tier of link they crossed (headers not counted).
struct LinkTierBytes {
  uint64_t within_host = 0;  // shared-memory rings, or memory of one process (threads)
  uint64_t network = 0;      // sockets, MPI or NCCL to another host
};

class Transport {
 public:
  Transport(int rank, int size, Milliseconds timeout);
  virtual ~Transport() = default;
  Transport(const Transport&) = delete;
  Transport& operator=(const Transport&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }
  Milliseconds timeout() const { return timeout_; }

  virtual const char* name() const = 0;  // the backend: "threads", "tcp", "nccl", "mpi"
  virtual TransportCapabilities capabilities() const = 0;
  // Whether tensors on `device` can be sent; where the group's own small buffers live.
  virtual bool supports_device(Device device) const = 0;
  virtual Device default_device() const { return kCPU; }
  // device_streams: the stream the collectives run on (their kernels, copies and messages);
  // by default the communication stream of default_device().
  virtual gpu::Stream comm_stream() const { return gpu::comm_stream(default_device()); }
  // How this rank reaches `peer` (0 <= peer < size): "self", "memory" (threads of one
  // process), "shm" (shared-memory rings: same host), "tcp" (sockets), "nccl", "mpi".
  virtual std::string link(int peer) const;
  // The host each rank runs on: element q is rank q's host, hosts numbered in the order of
  // their lowest rank (rank 0's host is 0). Equal on every rank. Empty where the transport
  // does not know (it never called set_host_map); the algorithms then treat the ranks as one
  // flat group.
  const std::vector<int>& host_of_ranks() const { return host_of_; }
  // Payload bytes this rank has sent so far, by link tier (zero where not counted).
  LinkTierBytes bytes_sent() const {
    return {within_host_.load(std::memory_order_relaxed), network_.load(std::memory_order_relaxed)};
  }

  // ---- messages
  virtual std::shared_ptr<Work> send_message(const Tensor& tensor, int dst,
                                             const Envelope& env) = 0;
  virtual std::shared_ptr<Work> recv_message(const Tensor& tensor, int src,
                                             const Envelope& env) = 0;
  // A receive that folds the payload into `into` (into = into (op) payload) as it arrives;
  // only where capabilities().combines_on_receive and combines_bytes(into.dtype()).
  virtual std::shared_ptr<Work> recv_combine_message(const Tensor& into, int src,
                                                     const Envelope& env, CombineOp op);
  // Waits for a message op of a collective; past timeout() it throws a DistError naming the
  // peer that did not answer. Device transports order the consuming stream instead.
  virtual void wait_message(Work& work, int peer, const Envelope& env);
  // Messages posted between begin_batch and end_batch may be started together (NCCL groups).
  virtual void begin_batch() {}
  virtual void end_batch() {}

  // ---- the direct exchange of small collectives, in one call or in two halves. The
  // scheduler's algorithms (direct_exchange.cpp, the single-copy path's message rounds) call
  // exchange_with_all, which returns when every peer's message is in. The lean path
  // (lean_collective.cpp) splits it where capabilities().eager_exchange: send_exchange when
  // the collective is issued, receive_exchange when its Work is waited for, so a small
  // all-reduce costs its caller no thread hand-off.
  // exchange_with_all: sends `mine` to every peer and receives
  // peer q's into slice q of `inputs` (elements [q * mine.numel(), (q + 1) * mine.numel())),
  // then returns. The default posts a send and a receive per peer, in one batch, and waits;
  // the host transports move the frames straight through their shared-memory rings.
  virtual void exchange_with_all(const Tensor& mine, const Tensor& inputs, const Envelope& env);
  // The same exchange in two halves (capabilities().eager_exchange): sends `mine` to every peer, as
  // whole frames where it can (true: every frame went out; false: some wait for a progress
  // loop to push them). receive_exchange's `inputs` holds N messages of `message_bytes` (a
  // byte buffer will do): peer q's lands at byte q * message_bytes.
  virtual bool send_exchange(const Tensor& mine, const Envelope& env);
  virtual void receive_exchange(const Tensor& inputs, size_t message_bytes, const Envelope& env);

  // ---- the end of a collective and of the transport
  // Called after a collective ran, before its Work completes (device_streams: the messages
  // are only queued; the transport hands them to a watchdog that fails the group naming a
  // late peer, dist/stream_watchdog.h).
  virtual void finish_collective() {}
  // Fails every pending and later message with `message` and tells the peers (they fail
  // naming this rank) instead of leaving them to their timeout.
  virtual void abort(const Failure& failure, const std::string& message) = 0;
  // The group is going away (`failed`: after a failure): release links and devices.
  virtual void close(bool failed) { (void)failed; }

 protected:
  // For the backends: the host map (host_of_ranks), set once at construction.
  void set_host_map(std::vector<int> host_of) { host_of_ = std::move(host_of); }
  // Counts `bytes` of payload sent to `peer` in its tier: by the host map where there is one
  // (a socket to a rank of this host still counts as within the host), else `across_hosts`.
  void count_sent(int peer, size_t bytes, bool across_hosts = false) {
    if (!host_of_.empty()) across_hosts = host_of_[peer] != host_of_[rank_];
    (across_hosts ? network_ : within_host_).fetch_add(bytes, std::memory_order_relaxed);
  }

 private:
  std::vector<int> host_of_;
  std::atomic<uint64_t> within_host_{0}, network_{0};  // payload bytes sent, by link tier
  int rank_;
  int size_;
  Milliseconds timeout_;
};

}  // namespace rg::dist
