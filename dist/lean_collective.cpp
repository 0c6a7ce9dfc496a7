// The lean path of small collectives on the host backends: an all-reduce of at most
// Options::direct_bytes of f32/f64, or a barrier, issued while no other collective is queued
// or running, takes no trip through the queue and the communication thread.
//
//   issue (ProcessGroup::allreduce/barrier -> CollectiveScheduler::issue_lean): claims the group
//   (running_), numbers the
//     collective and writes its frame into every peer's shared-memory ring at once
//     (send_exchange), then returns its LeanWork;
//   wait(): receives the peers' frames straight out of their rings into scratch and reduces
//     them in rank order on the waiting thread (receive_and_reduce), then frees the group.
//
// Sending at issue keeps the promise of an asynchronous collective: a peer that waits for
// this one needs nothing but this rank's frame, which left before allreduce() returned.
// Whatever else comes first hands the collective over to the communication thread, first
// in its queue: a timed wait or is_completed() (the caller may poll instead of waiting),
// another collective issued behind it, a frame that could not go out whole, the group's
// shutdown. The arithmetic is the direct exchange's (direct_exchange.cpp): inputs folded in
// rank order with the op table's add and maximum, so every rank ends with the same bits.
#include <cstring>

#include "dist/buffer_math.h"
#include "dist/collective_scheduler.h"
#include "dist/combine_bytes.h"

namespace rg::dist {

class LeanWork : public PromiseWork {
 public:
  LeanWork(CollectiveScheduler& group, Tensor tensor, CombineOp op, const Envelope& env)
      : tensor(std::move(tensor)), op(op), env(env), group_(group) {}

  // The next collective in this finished work that no one else holds.
  void reuse(Tensor next, CombineOp next_op, const Envelope& next_env) {
    tensor = std::move(next);
    op = next_op;
    env = next_env;
    rearm();
  }

  // Once finished, a work no longer touches its group (which may be gone by then).
  void wait() override {
    if (PromiseWork::is_completed()) return rethrow_error();
    if (group_.complete_lean(this)) return;  // finished here (it throws a failure)
    group_.try_run_inline(this);  // handed over: run the queue up to it here if none runs
    Work::wait();
  }
  bool wait(Milliseconds timeout) override {
    if (!PromiseWork::is_completed()) group_.hand_over_lean(this);
    return PromiseWork::wait(timeout);
  }
  bool is_completed() override {
    if (PromiseWork::is_completed()) return true;
    group_.hand_over_lean(this);
    return false;
  }

  // Set at issue, read by receive_and_reduce, which drops the tensor when done.
  Tensor tensor;
  CombineOp op;
  Envelope env;

 private:
  CollectiveScheduler& group_;
};

bool CollectiveScheduler::lean_eligible(const Tensor& t) const {
  return transport_.size() > 1 && context_.capabilities().eager_exchange &&
         t.device().is_host_memory() && t.nbytes() <= options_.direct_bytes &&
         (t.numel() == 0 || combines_bytes(t.dtype()));
}

std::shared_ptr<Work> CollectiveScheduler::issue_lean(Collective kind, const Tensor& t,
                                                      CombineOp op) {
  if (!lean_eligible(t)) return nullptr;
  Envelope env{kind, op, t.dtype(), kCollectiveTag, -1, 0, t.numel()};
  {
    std::lock_guard lock(mu_);
    if (running_ || stopping_ || !queue_.empty() || !failure_.empty()) return nullptr;
    running_ = true;
    env.seq = next_seq_++;
    count_issued_locked(kind);
    lean_issued_.store(lean_issued_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  }
  std::shared_ptr<LeanWork> work = recycled_lean(t, op, env);
  bool whole = false;
  try {
    whole = transport_.send_exchange(t, env);
  } catch (const std::exception& e) {
    fail(e.what());
    {
      std::lock_guard lock(mu_);
      running_ = false;
    }
    cv_.notify_all();  // another thread may have queued a collective meanwhile
    work->finish(std::current_exception());
    return work;
  }
  // Handed over at once if a progress loop must push the rest, or if another thread queued
  // a collective meanwhile (it must not wait for a waiter this one may never have).
  bool handed = false;
  {
    std::lock_guard lock(mu_);
    lean_ = work;
    if (!whole || !queue_.empty()) handed = hand_over_lean_locked();
  }
  if (handed) cv_.notify_all();
  return work;
}

// The group's spare work if no one else holds it any more (its last user's accesses happen
// before: they dropped their references with release, seen here with the acquire fence),
// else a new one, kept as the spare. A loop of barriers or loss all-reduces then allocates
// nothing: no control block, mutex or condition variable to build and destroy per call.
// Only the thread that claimed the group (running_) gets here.
std::shared_ptr<LeanWork> CollectiveScheduler::recycled_lean(const Tensor& t, CombineOp op,
                                                             const Envelope& env) {
  if (spare_lean_ && spare_lean_.use_count() == 1) {
    std::atomic_thread_fence(std::memory_order_acquire);
    spare_lean_->reuse(t, op, env);
  } else {
    spare_lean_ = std::make_shared<LeanWork>(*this, t, op, env);
  }
  return spare_lean_;
}

bool CollectiveScheduler::complete_lean(const PromiseWork* work) {
  std::shared_ptr<LeanWork> mine;
  std::string broken;
  {
    std::lock_guard lock(mu_);
    if (!lean_ || lean_.get() != work) return false;
    mine = std::move(lean_);  // running_ stays set: this thread runs it
    broken = failure_;
  }
  // run_item's steps, written out: through it (a Task and a second reference to the work)
  // this path took 0.04 us more per collective.
  std::exception_ptr error;
  try {
    RG_CHECK(broken.empty(), broken);
    receive_and_reduce(*mine);
  } catch (const std::exception& e) {
    fail(e.what());
    error = std::current_exception();
  }
  bool more = false;
  {
    std::lock_guard lock(mu_);
    running_ = false;
    more = !queue_.empty();
  }
  if (more) cv_.notify_all();
  mine->finish(error);  // last, as in run_item
  if (error) std::rethrow_exception(error);
  return true;
}

bool CollectiveScheduler::hand_over_lean_locked(const PromiseWork* work) {
  if (!lean_ || (work && lean_.get() != work)) return false;
  std::shared_ptr<LeanWork> pending = std::move(lean_);
  queue_.emplace_front([this, pending](CollectiveContext&) { receive_and_reduce(*pending); },
                       pending);
  running_ = false;
  return true;
}

void CollectiveScheduler::hand_over_lean(const PromiseWork* work) {
  bool handed = false;
  {
    std::lock_guard lock(mu_);
    handed = hand_over_lean_locked(work);
  }
  if (handed) cv_.notify_all();
}

// Inputs land in scratch slot 0, peer q's at slice q; this rank's own copy goes to slice r,
// then the result is input 0, (op) input 1, (op) input 2 ... into the caller's tensor.
void CollectiveScheduler::receive_and_reduce(LeanWork& work) {
  struct DropTensor {  // the caller's tensor is not kept alive by the spare work
    LeanWork& work;
    ~DropTensor() { work.tensor = Tensor(); }
  } drop{work};
  const Tensor& t = work.tensor;
  const int64_t count = t.numel();
  const size_t bytes = t.nbytes();
  const Tensor& inputs = context_.scratch_bytes(0, transport_.size() * bytes, t.device());
  transport_.receive_exchange(inputs, bytes, work.env);
  if (count == 0) return;
  char* in = static_cast<char*>(inputs.data_ptr());
  char* out = static_cast<char*>(t.data_ptr());
  std::memcpy(in + transport_.rank() * bytes, out, bytes);
  std::memcpy(out, in, bytes);
  for (int q = 1; q < transport_.size(); ++q)
    combine_bytes(out, in + q * bytes, count, t.dtype(), work.op);
  if (work.op == CombineOp::avg) divide_by(t, transport_.size());
}

}  // namespace rg::dist
