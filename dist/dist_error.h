// Failures as data: rg::dist::DistError, the error dist/ raises when a rank fails because of
// another one (a timeout, a peer that has gone, a mismatch, an abort), and the failure record
// a rank writes for rgrun (RG_ERROR_FILE, like torchrun's error file).
//
// The message is for people and may be reworded freely; rgrun reads only the record's fields
// (kind, blamed rank, operation, sequence number), never the text. RG_TEST_REWORD_ERRORS=1 (a
// test hook) rewords every DistError message, and the fault tests run with it too.
#pragma once
#include <cstdint>
#include <exception>
#include <string>
#include <utility>

#include "core/error.h"

namespace rg::dist {

enum class FailureKind : uint8_t { timeout, peer_gone, mismatch, aborted, local };
const char* failure_kind_name(FailureKind kind);  // "timeout", "peer_gone", ...

// What a failure is, besides its message. `blamed_rank`: the rank at fault (for a timeout, the
// peer waited for, or the rank that peer said it waits for in turn; for an abort passed on by
// a peer, the rank the original failure blamed, or that peer), -1 for none (a mismatch blames
// neither side). `operation`: e.g. "allreduce #3 (sum of 1000 float32)".
struct Failure {
  FailureKind kind = FailureKind::local;
  int blamed_rank = -1;
  std::string operation;
  uint64_t seq = 0;  // the collective's number on the group (0: none)
};

class DistError : public Error {
 public:
  DistError(Failure failure, const std::string& message);
  const Failure& failure() const { return failure_; }
  FailureKind kind() const { return failure_.kind; }
  int blamed_rank() const { return failure_.blamed_rank; }
  const std::string& operation() const { return failure_.operation; }
  uint64_t seq() const { return failure_.seq; }

 private:
  Failure failure_;
};

// The message as DistError words it: unchanged, or reworded under RG_TEST_REWORD_ERRORS=1
// (idempotent, so a message may pass through it again).
std::string dist_message(const std::string& message);

// A failure as one rank tells its peers (the kAbort frame of dist/message_pump.h): the
// rank at fault (`f`'s blamed rank, or `from`, the sender, when it blames none), the operation
// and sequence number, then the message. parse_abort gives the receiver's failure (kind
// aborted, blaming that rank) and the message; a payload too short for the fields is all
// message, blaming `from`.
std::string abort_payload(const Failure& f, int from, const std::string& message);
std::pair<Failure, std::string> parse_abort(const std::string& payload, int from);

// Writes this rank's failure record to RG_ERROR_FILE (set by rgrun), atomically: one JSON
// object {"kind", "blamed_rank", "operation", "seq", "message", "rank", "time"}; a DistError
// gives its fields, any other exception is kind "local" blaming no rank. Does nothing without
// RG_ERROR_FILE; never throws. Call it where the program reports its fatal error.
void record_failure(const std::exception& error);

}  // namespace rg::dist
