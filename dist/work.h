// What every layer of dist/ speaks: the reduction ops, the kinds of collective, the Envelope
// that travels with each message, and Work, the handle of an asynchronous operation.
#pragma once
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <mutex>
#include <string>

#include "core/tensor.h"

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

// User p2p messages use tags >= 0, the collectives' messages this one.
inline constexpr int kCollectiveTag = -1;

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

}  // namespace rg::dist
