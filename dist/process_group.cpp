// ProcessGroup base: argument checks, envelopes, counters, and the communication thread that
// runs the collectives one after another in issue order.
#include "dist/process_group.h"

#include <pthread.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "core/parallel.h"
#include "core/shareable_host_memory.h"
#include "dist/broadcast.h"
#include "dist/buffer_math.h"
#include "dist/dist_error.h"
#include "dist/ring_allreduce.h"
#include "dist/store_wire.h"

namespace rg::dist {

const char* combine_op_name(CombineOp op) {
  switch (op) {
    case CombineOp::sum:
      return "sum";
    case CombineOp::avg:
      return "avg";
    case CombineOp::max:
      return "max";
  }
  return "?";
}

const char* collective_name(Collective kind) {
  switch (kind) {
#define RG_COLLECTIVE_NAME(name) \
  case Collective::name:         \
    return #name;
    RG_COLLECTIVES(RG_COLLECTIVE_NAME)
#undef RG_COLLECTIVE_NAME
  }
  return "?";
}

// RG_DIST_TIMEOUT: finite seconds above 0 and at most the store's longest wait (30 days), so
// that "inf" or "1e100" cannot overflow a deadline into one already passed.
Milliseconds default_timeout() {
  if (const char* s = std::getenv("RG_DIST_TIMEOUT"); s && *s) {
    constexpr double kMaxSeconds = double(store_wire::kMaxWait.count()) / 1000;
    char* end = nullptr;
    const double seconds = std::strtod(s, &end);
    RG_CHECK(
        end != s && *end == '\0' && std::isfinite(seconds) && seconds > 0 && seconds <= kMaxSeconds,
        "RG_DIST_TIMEOUT='", s, "': expected a finite number of seconds above 0 and at most ",
        int64_t(kMaxSeconds), " (30 days)");
    return Milliseconds(std::max<int64_t>(1, static_cast<int64_t>(seconds * 1000)));
  }
  return Milliseconds(300'000);
}

namespace {
// A whole number of bytes from 0 to 1 GiB in environment variable `name`, else `fallback`.
size_t bytes_from_env(const char* name, size_t fallback) {
  const char* s = std::getenv(name);
  if (!s || !*s) return fallback;
  char* end = nullptr;
  const long long bytes = std::strtoll(s, &end, 10);
  RG_CHECK(end != s && *end == '\0' && bytes >= 0 && bytes <= (int64_t(1) << 30), name,
           ": expected a whole number of bytes from 0 to 1 GiB, got '", s, "'");
  return static_cast<size_t>(bytes);
}
}  // namespace

size_t default_direct_bytes() { return bytes_from_env("RG_DIST_DIRECT_BYTES", 32 << 10); }
size_t default_single_copy_bytes() { return bytes_from_env("RG_DIST_SINGLE_COPY_BYTES", 32 << 10); }
size_t default_single_copy_read_bytes() {
  return bytes_from_env("RG_DIST_SINGLE_COPY_READ_BYTES", 2 << 20);
}

std::string ProcessGroup::peer_link(int peer) const {
  RG_CHECK(peer >= 0 && peer < size_, "peer_link: rank ", peer, " outside world of size ", size_);
  return peer == rank_ ? "self" : "memory";
}

std::string ProcessGroup::describe_links() const {
  std::string out;
  for (int q = 0; q < size_; ++q) out += str(q == 0 ? "" : ", ", q, " ", peer_link(q));
  return out;
}

std::string describe(const Envelope& env) {
  if (env.kind == Collective::p2p)
    return str("send/recv with tag ", env.tag, " (", env.count, " ", dtype_name(env.dtype), ")");
  std::string what = str(collective_name(env.kind), " #", env.seq, " (");
  if (env.kind == Collective::allreduce || env.kind == Collective::reduce_scatter)
    what += str(combine_op_name(env.op), " of ");
  what += str(env.count, " ", dtype_name(env.dtype));
  if (env.kind == Collective::broadcast) what += str(" from root ", env.root);
  return what + ")";
}

// ---- Work

void Work::wait() {
  while (!wait(Milliseconds(3'600'000))) {
  }
}

bool PromiseWork::wait(Milliseconds timeout) {
  std::unique_lock lock(mu_);
  if (!cv_.wait_for(lock, timeout, [&] { return done_.load(); })) return false;
  if (error_) std::rethrow_exception(error_);
  return true;
}

bool PromiseWork::is_completed() { return done_.load(std::memory_order_acquire); }

// No lock: the caller is the work's only holder, and the last waiter's accesses happen before
// (recycled_lean's acquire fence).
void PromiseWork::rearm() {
  done_.store(false, std::memory_order_relaxed);
  error_ = nullptr;
}

void PromiseWork::rethrow_error() {
  std::lock_guard lock(mu_);
  if (error_) std::rethrow_exception(error_);
}

void PromiseWork::finish(std::exception_ptr error) {
  {
    std::lock_guard lock(mu_);
    done_ = true;
    error_ = std::move(error);
  }
  cv_.notify_all();
}

// ---- ProcessGroup

ProcessGroup::ProcessGroup(int rank, int size, Options options)
    : rank_(rank), size_(size), options_(options) {
  RG_CHECK(size >= 1 && rank >= 0 && rank < size, "ProcessGroup: rank ", rank,
           " is outside a world of size ", size);
  RG_CHECK(options.timeout.count() > 0, "ProcessGroup: timeout must be positive");
  RG_CHECK(options.chunk_bytes >= 64, "ProcessGroup: chunk_bytes must be at least 64");
  comm_thread_ = std::thread([this] { comm_loop(); });
  // Named and scheduled from here, so both hold once the constructor returns.
  pthread_t comm = comm_thread_.native_handle();
  pthread_setname_np(comm, "rg-comm");  // named for gdb, top and the tests
  // SCHED_BATCH: waking this thread (every collective is queued for it) does not preempt
  // the thread that runs: the caller that waits at once goes on to run the collective
  // itself (CollectiveWork) instead of losing its core to this thread and then waiting
  // for it. An 8-byte all-reduce over 2 processes on 2 cores: ~20 us -> ~2 us. Best
  // effort: without it (another OS) only the hand-off costs more.
  sched_param param{};
  pthread_setschedparam(comm, SCHED_BATCH, &param);
}

ProcessGroup::~ProcessGroup() { shutdown(); }

void ProcessGroup::shutdown() {
  {
    std::lock_guard lock(mu_);
    if (stopping_) return;
    hand_over_lean_locked();  // fails with the queued ones
    stopping_ = true;
  }
  cv_.notify_all();
  if (comm_thread_.joinable()) comm_thread_.join();
}

std::string ProcessGroup::failure() const {
  std::lock_guard lock(mu_);
  return failure_;
}

void ProcessGroup::set_failure(const std::string& message, std::exception_ptr error) {
  std::lock_guard lock(mu_);
  if (!failure_.empty()) return;
  failure_ = message;
  failure_error_ = error;
}

void ProcessGroup::comm_loop() {
  set_thread_num_threads_cap(1);  // see core/parallel.h
  for (;;) {
    Item item;
    {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [&] { return stopping_ || (!queue_.empty() && !running_); });
      if (queue_.empty()) return;
      item = std::move(queue_.front());
      queue_.pop_front();
      if (stopping_) {
        lock.unlock();
        item.second->finish(std::make_exception_ptr(
            Error(str("rank ", rank_, ": process group destroyed before the collective ran"))));
        continue;
      }
      running_ = true;
    }
    run_item(item);
  }
}

void ProcessGroup::run_item(Item& item) {
  std::exception_ptr error;
  const std::string broken = failure();
  if (!broken.empty()) {
    std::lock_guard lock(mu_);
    error = failure_error_ ? failure_error_ : std::make_exception_ptr(Error(broken));
  } else {
    try {
      item.first();
      finish_collective();
    } catch (const std::exception& e) {
      set_failure(e.what(), std::current_exception());
      error = std::current_exception();
    }
  }
  bool more = false;
  {
    std::lock_guard lock(mu_);
    running_ = false;
    more = !queue_.empty();
  }
  if (more) cv_.notify_all();  // the communication thread takes the next one
  item.second->finish(error);  // last: whoever sees it finished finds the group free
}

// Runs the queue up to and including `work` on the calling thread, if nothing runs.
bool ProcessGroup::try_run_inline(const PromiseWork* work) {
  for (;;) {
    Item item;
    {
      std::lock_guard lock(mu_);
      auto queued = std::find_if(queue_.begin(), queue_.end(),
                                 [&](const Item& i) { return i.second.get() == work; });
      if (running_ || stopping_ || queued == queue_.end()) return false;
      item = std::move(queue_.front());
      queue_.pop_front();
      running_ = true;
    }
    const int previous_cap = set_thread_num_threads_cap(1);  // as on the communication thread
    run_item(item);
    set_thread_num_threads_cap(previous_cap);
    if (item.second.get() == work) return true;
  }
}

// The work of a collective on a host backend. An untimed wait() that finds it queued, with
// nothing running, runs it (and whatever is queued before it) on the waiting thread (the
// common "pg.allreduce(t)->wait()"): two thread hand-offs less, each a futex wake that costs
// microseconds, and tens of them on a loaded host. Timed waits (the DDP buckets) leave it to the
// communication thread. Collectives still run one at a time, in the order issued.
class CollectiveWork : public PromiseWork {
 public:
  explicit CollectiveWork(ProcessGroup& group) : group_(group) {}
  using PromiseWork::wait;
  void wait() override {
    if (!PromiseWork::is_completed()) group_.try_run_inline(this);
    Work::wait();  // at once if it ran here
  }

 private:
  ProcessGroup& group_;
};

std::shared_ptr<Work> ProcessGroup::enqueue(Collective kind, Task task) {
  // NCCL collectives stay on the communication thread (its CUDA device and streams).
  std::shared_ptr<PromiseWork> work = default_device().is_host_memory()
                                          ? std::make_shared<CollectiveWork>(*this)
                                          : std::make_shared<PromiseWork>();
  {
    std::lock_guard lock(mu_);
    count_issued_locked(kind);
    RG_CHECK(!stopping_, "rank ", rank_, ": ", collective_name(kind),
             " on a process group that is shutting down");
    hand_over_lean_locked();  // a pending lean collective runs first
    queue_.emplace_back(std::move(task), work);
  }
  cv_.notify_all();
  return work;
}

// Every count is changed under mu_, so a load and a store do (no locked add per collective).
void ProcessGroup::count_issued_locked(Collective kind) {
  std::atomic<uint64_t>& count = issued_[static_cast<int>(kind)];
  count.store(count.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
}

uint64_t ProcessGroup::collectives_issued() const {
  uint64_t total = 0;
  for (int k = 1; k < kNumCollectives; ++k) total += issued_[k].load(std::memory_order_relaxed);
  return total;
}

uint64_t ProcessGroup::collectives_issued(Collective kind) const {
  return issued_[static_cast<int>(kind)].load(std::memory_order_relaxed);
}

void ProcessGroup::check_tensor(const Tensor& t, const char* what) const {
  RG_CHECK(t.defined(), what, ": undefined tensor");
  RG_CHECK(t.numel() == 0 || t.is_contiguous(), what, ": tensor of shape ", shape_str(t.shape()),
           " must be contiguous");
  RG_CHECK(supports_device(t.device()), what, ": the ", backend_name(),
           " backend cannot use tensors on ", t.device().str());
}

Envelope ProcessGroup::next_envelope(Collective kind, const Tensor& t, int64_t count) {
  Envelope env;
  env.kind = kind;
  env.dtype = t.dtype();
  env.tag = kCollectiveTag;
  env.count = count;
  std::lock_guard lock(mu_);
  env.seq = next_seq_++;
  return env;
}

std::shared_ptr<Work> ProcessGroup::send(const Tensor& tensor, int dst, int tag) {
  check_tensor(tensor, "send");
  RG_CHECK(dst >= 0 && dst < size_ && dst != rank_, "send: rank ", rank_, " cannot send to rank ",
           dst, " (world size ", size_, ")");
  RG_CHECK(tag >= 0, "send: tags must be >= 0, got ", tag);
  Envelope env{Collective::p2p, CombineOp::sum, tensor.dtype(), tag, -1, 0, tensor.numel()};
  return send_message(tensor, dst, env);
}

std::shared_ptr<Work> ProcessGroup::recv(const Tensor& tensor, int src, int tag) {
  check_tensor(tensor, "recv");
  RG_CHECK(src >= 0 && src < size_ && src != rank_, "recv: rank ", rank_,
           " cannot receive from rank ", src, " (world size ", size_, ")");
  RG_CHECK(tag >= 0, "recv: tags must be >= 0, got ", tag);
  Envelope env{Collective::p2p, CombineOp::sum, tensor.dtype(), tag, -1, 0, tensor.numel()};
  return recv_message(tensor, src, env);
}

std::shared_ptr<Work> ProcessGroup::recv_combine_message(const Tensor& into, int, const Envelope&,
                                                         CombineOp) {
  RG_FAIL("recv_combine_message: the ", backend_name(), " backend does not fold ",
          dtype_name(into.dtype()), " on receipt (ask combines_on_receive first)");
}

void ProcessGroup::exchange_with_all(const Tensor& mine, const Tensor& inputs,
                                     const Envelope& env) {
  const int n = size_, r = rank_;
  const int64_t count = mine.numel();
  std::vector<std::shared_ptr<Work>> recvs(n), sends(n);
  begin_batch();
  for (int step = 1; step < n; ++step) {  // peers in the order r+1, r+2, ...: no hot spot
    const int to = (r + step) % n, from = (r + n - step) % n;
    recvs[from] = recv_message(flat_slice(inputs, from * count, count), from, env);
    sends[to] = send_message(mine, to, env);
  }
  end_batch();
  for (int q = 0; q < n; ++q)
    if (q != r) wait_message(*recvs[q], q, env);
  for (int q = 0; q < n; ++q)
    if (q != r) wait_message(*sends[q], q, env);
}

bool ProcessGroup::send_exchange(const Tensor&, const Envelope&) {
  RG_FAIL("send_exchange: the ", backend_name(), " backend does not exchange eagerly");
}

void ProcessGroup::receive_exchange(const Tensor&, size_t, const Envelope&) {
  RG_FAIL("receive_exchange: the ", backend_name(), " backend does not exchange eagerly");
}

void ProcessGroup::wait_message(Work& work, int peer, const Envelope& env) {
  if (!work.wait(options_.timeout))
    throw DistError({FailureKind::timeout, peer, describe(env), env.seq},
                    str("rank ", rank_, ": ", describe(env), ": timed out after ",
                        options_.timeout.count(), " ms waiting for rank ", peer));
}

const Tensor& ProcessGroup::scratch_bytes(int64_t slot, size_t nbytes, Device device) {
  if (static_cast<int64_t>(scratch_.size()) <= slot) scratch_.resize(slot + 1);
  Tensor& bytes = scratch_[slot];
  const auto need = static_cast<int64_t>(nbytes);
  if (!bytes.defined() || bytes.device() != device || bytes.numel() < need) {
    ShareableAllocations shared;  // the collectives' buffers: peers of this host may map them
    bytes = empty({std::max<int64_t>(need, 1)}, DType::b8, device);
  }
  return bytes;
}

Tensor ProcessGroup::scratch(int64_t slot, int64_t numel, DType dtype, Device device) {
  const Tensor& bytes = scratch_bytes(slot, numel * itemsize(dtype), device);
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = bytes.storage();
  impl->shape = {numel};
  impl->strides = {1};
  impl->dtype = dtype;
  return Tensor(std::move(impl));
}

namespace {
void check_reduction(const char* what, DType dtype, CombineOp op) {
  bool floating = dtype == DType::f32 || dtype == DType::f64 || dtype == DType::bf16;
  bool integer = dtype == DType::i32 || dtype == DType::i64;
  RG_CHECK(floating || (integer && op != CombineOp::avg), what, ": ", combine_op_name(op), " of ",
           dtype_name(dtype), " is not supported (f32, f64, bf16; i32/i64 for sum, max)");
}
}  // namespace

std::shared_ptr<Work> ProcessGroup::allreduce(const Tensor& tensor, CombineOp op) {
  check_tensor(tensor, "allreduce");
  check_reduction("allreduce", tensor.dtype(), op);
  if (auto lean = issue_lean(Collective::allreduce, tensor, op)) return lean;
  Envelope env = next_envelope(Collective::allreduce, tensor, tensor.numel());
  env.op = op;
  return enqueue(Collective::allreduce,
                 [this, tensor, op, env] { allreduce_by_size(*this, tensor, op, env); });
}

std::shared_ptr<Work> ProcessGroup::broadcast(const Tensor& tensor, int root) {
  check_tensor(tensor, "broadcast");
  RG_CHECK(root >= 0 && root < size_, "broadcast: root ", root, " outside world of size ", size_);
  Envelope env = next_envelope(Collective::broadcast, tensor, tensor.numel());
  env.root = root;
  return enqueue(Collective::broadcast,
                 [this, tensor, root, env] { chain_broadcast(*this, tensor, root, env); });
}

std::shared_ptr<Work> ProcessGroup::allgather(const Tensor& out, const Tensor& in) {
  check_tensor(out, "allgather");
  check_tensor(in, "allgather");
  RG_CHECK(out.dtype() == in.dtype() && out.device() == in.device(), "allgather: out is ",
           out.dtype(), " on ", out.device().str(), ", in is ", in.dtype(), " on ",
           in.device().str());
  RG_CHECK(out.numel() == in.numel() * size_, "allgather: out has ", out.numel(),
           " elements, expected world size ", size_, " x ", in.numel());
  Envelope env = next_envelope(Collective::allgather, in, in.numel());
  return enqueue(Collective::allgather,
                 [this, out, in, env] { ring_allgather(*this, out, in, env); });
}

std::shared_ptr<Work> ProcessGroup::reduce_scatter(const Tensor& out, const Tensor& in,
                                                   CombineOp op) {
  check_tensor(out, "reduce_scatter");
  check_tensor(in, "reduce_scatter");
  check_reduction("reduce_scatter", in.dtype(), op);
  RG_CHECK(out.dtype() == in.dtype() && out.device() == in.device(), "reduce_scatter: out is ",
           out.dtype(), " on ", out.device().str(), ", in is ", in.dtype(), " on ",
           in.device().str());
  RG_CHECK(in.numel() == out.numel() * size_, "reduce_scatter: in has ", in.numel(),
           " elements, expected world size ", size_, " x ", out.numel());
  Envelope env = next_envelope(Collective::reduce_scatter, out, out.numel());
  env.op = op;
  return enqueue(Collective::reduce_scatter,
                 [this, out, in, op, env] { ring_reduce_scatter(*this, out, in, op, env); });
}

std::shared_ptr<Work> ProcessGroup::barrier() {
  std::call_once(barrier_token_made_,
                 [this] { barrier_token_ = empty({0}, DType::i32, default_device()); });
  if (auto lean = issue_lean(Collective::barrier, barrier_token_, CombineOp::sum)) return lean;
  Tensor token = barrier_token_;
  Envelope env = next_envelope(Collective::barrier, token, 0);
  return enqueue(Collective::barrier, [this, token, env] {
    // An all-reduce waits for a message from every rank (directly, or along the ring), so
    // no rank can finish it before every rank has started it.
    allreduce_by_size(*this, token, CombineOp::sum, env);
  });
}

}  // namespace rg::dist
