// Names of the ops and collectives, envelope descriptions, and the promise-style Work.
#include "dist/work.h"

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

}  // namespace rg::dist
