// nccl backend (see nccl_group.h). Compiled only with CUDA.
//
// Messages: ncclSend/ncclRecv on the group's own non-blocking stream (from a pool, below). Messages
// posted between begin_batch and end_batch form one NCCL group (the ring pairs each receive with
// its send, which NCCL needs to avoid deadlock); completion is an event recorded after the group.
// Streams hand the messages over by events, never by host waits (dist/stream_messages.h):
// the collectives run with NCCL's stream current (dist/stream_work.h: it waits for the event
// recorded when the collective was issued, and the ring's reductions run on it);
// wait_message makes the consuming stream wait for the message's event; at the end of each
// collective the messages go to a watchdog thread (dist/stream_watchdog.h) that polls their
// events with the timeout and aborts the communicator naming a late peer. A user's send and
// nccl_allreduce first make NCCL's stream wait for the calling thread's stream;
// nccl_allreduce (ncclAllReduce) completes as an event too: its wait() is a stream wait,
// never a host one. Calls into the communicator hold nccl_mu_, so that the watchdog may
// abort it from its thread.
// The communicator is non-blocking, so init and every wait can time out: past the group's
// timeout the communicator is aborted and the error names the peer waited for.
#include "dist/nccl_group.h"

#include <cuda_runtime.h>
#include <nccl.h>

#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "dist/dist_error.h"
#include "dist/stream_messages.h"
#include "dist/stream_watchdog.h"
#include "dist/stream_work.h"
#include "kernels/cuda/stream.h"

namespace rg::dist {
namespace {

#define RG_NCCL(call, what)                                                \
  do {                                                                     \
    ncclResult_t r_ = (call);                                              \
    RG_CHECK(r_ == ncclSuccess || r_ == ncclInProgress, what, ": ", #call, \
             " failed: ", ncclGetErrorString(r_));                         \
  } while (0)
#define RG_CUDA(call, what)                                                              \
  do {                                                                                   \
    cudaError_t e_ = (call);                                                             \
    RG_CHECK(e_ == cudaSuccess, what, ": ", #call, " failed: ", cudaGetErrorString(e_)); \
  } while (0)

// The groups' streams outlive their groups. Every tensor a group touches records its stream
// (record_stream), and freeing such a tensor records an event on that stream: the group's own
// scratch buffers are freed after the group closes its transport, a caller's tensor maybe much
// later, and an event recorded on a destroyed stream crashed inside libcuda (seen on an H200, at
// the end of a two-process test). So a group takes a stream from this pool and gives it back,
// drained, instead of destroying it: as many streams as groups ever lived at once.
std::mutex g_stream_pool_mutex;
std::vector<std::pair<int, cudaStream_t>> g_stream_pool;  // (device index, stream)

cudaStream_t acquire_stream(int device, const std::string& me) {
  {
    std::lock_guard lock(g_stream_pool_mutex);
    for (auto it = g_stream_pool.begin(); it != g_stream_pool.end(); ++it) {
      if (it->first != device) continue;
      cudaStream_t s = it->second;
      g_stream_pool.erase(it);
      return s;
    }
  }
  cudaStream_t s = nullptr;
  RG_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), me);
  return s;
}

void retire_stream(int device, cudaStream_t s) {
  cudaStreamSynchronize(s);
  std::lock_guard lock(g_stream_pool_mutex);
  g_stream_pool.emplace_back(device, s);
}

ncclDataType_t nccl_dtype(DType dtype) {
  switch (dtype) {
    case DType::f32:
      return ncclFloat32;
    case DType::f64:
      return ncclFloat64;
    case DType::bf16:
      return ncclBfloat16;
    case DType::i32:
      return ncclInt32;
    case DType::i64:
      return ncclInt64;
    default:
      RG_FAIL("nccl: unsupported dtype ", dtype);
  }
}

class NcclTransport;

// The peer of a late message from NCCL's own all-reduce: NCCL does not say which rank it
// waits for.
constexpr int kAnyPeer = -1;

class NcclWork : public Work {
 public:
  explicit NcclWork(NcclTransport* transport) : transport_(transport) {}
  bool wait(Milliseconds timeout) override;
  bool is_completed() override { return done_ && done_->query(); }
  void record(const StreamMessages& messages) { done_ = messages.completion(); }
  const std::shared_ptr<gpu::Event>& done() const { return done_; }

 private:
  NcclTransport* transport_;
  std::shared_ptr<gpu::Event> done_;  // recorded on NCCL's stream after the message
};

class NcclTransport : public Transport {
 public:
  NcclTransport(std::shared_ptr<Store> store, int rank, int size, int device_index,
                const Options& options, const std::string& prefix)
      : Transport(rank, size, options.timeout),
        store_(std::move(store)),
        device_(DeviceType::cuda, device_index) {
    const std::string me = str("rank ", rank, ": nccl");
    RG_CUDA(cudaSetDevice(device_index), me);
    ncclUniqueId id;
    const std::string key = prefix + "/unique_id";
    if (rank == 0) {
      RG_NCCL(ncclGetUniqueId(&id), me);
      store_->set(key, std::string(reinterpret_cast<const char*>(&id), sizeof(id)));
    } else {
      std::string bytes = store_->get(key, options.timeout);
      RG_CHECK(bytes.size() == sizeof(id), me, ": malformed unique id in the store");
      std::memcpy(&id, bytes.data(), sizeof(id));
    }
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 0;
    RG_NCCL(ncclCommInitRankConfig(&comm_, size, id, rank, &config), me);
    settle(str(me, ": communicator init (waiting for all ", size, " ranks to join)"));
    stream_ = acquire_stream(device_.index, me);
    messages_ = std::make_unique<StreamMessages>(gpu::Stream{device_, stream_});
    watchdog_ = std::make_unique<StreamWatchdog>(
        [this](const StreamMessages::Late& late, const std::string& error) {
          lose_late(late, error);
        });
  }

  ~NcclTransport() override { close(false); }

  // The group has stopped its collectives. After a failure the stream may still hold an
  // aborted NCCL kernel: it is neither waited for (this must not hang on a dead peer) nor
  // reused; it stays allocated.
  void close(bool failed) override {
    watchdog_.reset();  // its thread stops before the communicator goes
    failed = failed || !failure_.empty();
    if (comm_) {
      if (failed)
        ncclCommAbort(comm_);
      else
        ncclCommDestroy(comm_);
      comm_ = nullptr;
    }
    if (stream_ && !failed) retire_stream(device_.index, stream_);
    stream_ = nullptr;
  }

  const char* name() const override { return "nccl"; }
  TransportCapabilities capabilities() const override {
    TransportCapabilities can;
    can.device_streams = true;
    return can;
  }
  bool supports_device(Device d) const override { return d == device_; }
  Device default_device() const override { return device_; }
  gpu::Stream comm_stream() const override { return gpu::Stream{device_, stream_}; }
  std::string link(int peer) const override {
    return peer == rank() ? Transport::link(peer) : "nccl";
  }

  std::shared_ptr<Work> send_message(const Tensor& t, int dst, const Envelope&) override {
    messages_->wait_for_producers();
    used_on_nccl_stream(t);
    return post([&] { return ncclSend(t.data_ptr(), t.nbytes(), ncclUint8, dst, comm_, stream_); });
  }
  std::shared_ptr<Work> recv_message(const Tensor& t, int src, const Envelope&) override {
    used_on_nccl_stream(t);
    return post([&] { return ncclRecv(t.data_ptr(), t.nbytes(), ncclUint8, src, comm_, stream_); });
  }

  void begin_batch() override {
    RG_NCCL(ncclGroupStart(), "nccl");
    in_batch_ = true;
  }
  void end_batch() override {
    in_batch_ = false;
    RG_NCCL(ncclGroupEnd(), "nccl");
    settle("nccl group");
    for (auto& work : batch_) work->record(*messages_);
    batch_.clear();
  }

  // The stream that consumes the message waits for it on the device; the watchdog watches
  // it from the end of the collective (finish_collective).
  void wait_message(Work& work, int peer, const Envelope& env) override {
    check_async("nccl");
    messages_->hand_back(static_cast<NcclWork&>(work).done(), peer, env);
  }

  // No host wait: the watchdog polls the collective's messages with the timeout.
  void finish_collective() override {
    watchdog_->watch(messages_->take(), Clock::now() + timeout());
  }

  void abort(const Failure&, const std::string& message) override {
    std::lock_guard lock(nccl_mu_);
    if (failure_.empty()) failure_ = message;
    if (comm_) ncclCommAbort(comm_);
    comm_ = nullptr;
  }

  // The watchdog found a message not done by its deadline, or its query failed: the
  // communicator is aborted (its kernels end), and every later call fails naming the peer.
  void lose_late(const StreamMessages::Late& late, const std::string& error) {
    const Failure f{FailureKind::timeout, late.peer, describe(late.env), late.env.seq};
    const std::string whom =
        late.peer == kAnyPeer ? "the other ranks (ncclAllReduce)" : str("rank ", late.peer);
    // With an error (the communicator's, or a sticky device error that made the event's
    // query fail), this rank names itself and the collective it failed in.
    const std::string message =
        error.empty() ? str("rank ", rank(), ": ", describe(late.env), ": timed out after ",
                            timeout().count() / 1000.0, " s waiting for ", whom)
                      : str("rank ", rank(), ": ", describe(late.env), ": ", error);
    abort(f, message);
  }

  // Raises the communicator's asynchronous error, if any.
  void check_async(const char* what) {
    std::lock_guard lock(nccl_mu_);
    RG_CHECK(comm_, failure_);
    ncclResult_t state;
    RG_NCCL(ncclCommGetAsyncError(comm_, &state), what);
    RG_CHECK(state == ncclSuccess || state == ncclInProgress, "rank ", rank(), ": ", what, ": ",
             ncclGetErrorString(state));
  }

  // ncclAllReduce in place on NCCL's stream, stream-ordered like the ring's collectives
  // (dist/stream_work.h): no host wait. Its Work's wait() makes the caller's current stream
  // wait for the completion event; the watchdog polls that event with the group's timeout.
  std::shared_ptr<Work> native_allreduce(const Tensor& t, CombineOp op) {
    RG_CHECK(supports_device(t.device()) && t.is_contiguous(),
             "nccl_allreduce: needs a contiguous tensor on ", device_.str());
    RG_CHECK(!in_batch_, "nccl_allreduce: called between begin_batch and end_batch");
    ncclRedOp_t nccl_op = op == CombineOp::max ? ncclMax : op == CombineOp::avg ? ncclAvg : ncclSum;
    messages_->wait_for_producers();  // ordered after the kernels that produced t
    used_on_nccl_stream(t);
    std::shared_ptr<NcclWork> posted = post([&] {
      return ncclAllReduce(t.data_ptr(), t.data_ptr(), t.numel(), nccl_dtype(t.dtype()), nccl_op,
                           comm_, stream_);
    });
    Envelope env;  // for the watchdog's message: "allreduce #n (sum of ...)"
    env.kind = Collective::allreduce;
    env.op = op;
    env.dtype = t.dtype();
    env.tag = kCollectiveTag;
    env.seq = ++native_seq_;
    env.count = t.numel();
    watchdog_->watch({{posted->done(), {kAnyPeer, env}}}, Clock::now() + timeout());
    auto work = std::make_shared<StreamWork>(device_);
    work->set_done(posted->done());
    work->finish();  // queued: wait() only orders the waiter's stream
    return work;
  }

 private:
  // t was allocated on another stream: its block must outlive NCCL's use of it even if the
  // caller drops it before the work completes (PyTorch's record_stream).
  void used_on_nccl_stream(const Tensor& t) {
    gpu::record_stream(t, gpu::Stream{device_, stream_});
  }

  template <typename Call>
  std::shared_ptr<NcclWork> post(Call call) {
    RG_CUDA(cudaSetDevice(device_.index), "nccl");
    auto work = std::make_shared<NcclWork>(this);
    {
      std::lock_guard lock(nccl_mu_);
      RG_CHECK(comm_, failure_);
      RG_NCCL(call(), "nccl");
    }
    if (in_batch_) {
      batch_.push_back(work);
    } else {
      settle("nccl");
      work->record(*messages_);
    }
    return work;
  }

  // Waits for a non-blocking NCCL call to be enqueued (or fails after the timeout).
  void settle(const std::string& what) {
    auto deadline = Clock::now() + timeout();
    for (;;) {
      ncclResult_t state;
      {
        std::lock_guard lock(nccl_mu_);
        RG_CHECK(comm_, failure_);
        RG_NCCL(ncclCommGetAsyncError(comm_, &state), what);
      }
      if (state == ncclSuccess) return;
      if (state != ncclInProgress) lose(str(what, ": ", ncclGetErrorString(state)));
      if (Clock::now() > deadline)
        lose(str(what, ": timed out after ", timeout().count() / 1000.0, " s"));
      std::this_thread::yield();
    }
  }

  // The communicator is gone: abort it, remember why (later messages fail with it), throw.
  [[noreturn]] void lose(const std::string& why) {
    {
      std::lock_guard lock(nccl_mu_);
      if (comm_) ncclCommAbort(comm_);
      comm_ = nullptr;
      if (failure_.empty()) failure_ = str("rank ", rank(), ": ", why);
    }
    RG_FAIL(why);
  }

  std::shared_ptr<Store> store_;
  std::string failure_;  // why the communicator was aborted
  Device device_;
  ncclComm_t comm_ = nullptr;
  cudaStream_t stream_ = nullptr;
  std::unique_ptr<StreamMessages> messages_;  // over stream_
  std::unique_ptr<StreamWatchdog> watchdog_;  // polls finished collectives' messages
  std::mutex nccl_mu_;                        // held by every call into comm_
  bool in_batch_ = false;
  std::vector<std::shared_ptr<NcclWork>> batch_;
  uint64_t native_seq_ = 0;  // nccl_allreduce calls so far, for the watchdog's message
};

bool NcclWork::wait(Milliseconds timeout) {
  RG_CHECK(done_, "nccl: waiting for a message whose batch has not ended");
  auto deadline = Clock::now() + timeout;
  for (;;) {
    if (done_->query()) return true;
    transport_->check_async("nccl");
    if (Clock::now() >= deadline) return false;
    std::this_thread::yield();
  }
}

}  // namespace

bool nccl_available() {
  int count = 0;
  return cudaGetDeviceCount(&count) == cudaSuccess && count > 0;
}

std::shared_ptr<ProcessGroup> make_nccl_group(std::shared_ptr<Store> store, int rank, int size,
                                              int device_index, Options options,
                                              const std::string& prefix) {
  auto transport =
      std::make_unique<NcclTransport>(std::move(store), rank, size, device_index, options, prefix);
  return std::make_shared<ProcessGroup>(rank, size, std::move(options), std::move(transport));
}

std::shared_ptr<Work> nccl_allreduce(ProcessGroup& pg, const Tensor& tensor, CombineOp op) {
  auto* nccl = dynamic_cast<NcclTransport*>(&pg.transport());
  RG_CHECK(nccl, "nccl_allreduce: the group uses the ", pg.backend_name(), " backend, not nccl");
  return nccl->native_allreduce(tensor, op);
}

}  // namespace rg::dist
