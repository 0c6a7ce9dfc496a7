// Wire protocol of the rendezvous store, shared by its client (store.cpp) and server
// (store_server.cpp). Integers travel in the host's byte order (all ranks of a job run the
// same build on the same architecture).
//
// Connection: the client opens with a hello
//     magic u32 | token length u32 | job token
// and the server answers with a verdict
//     accepted u8 (1 yes, 0 no) | reason length u32 | reason
// closing a refused connection. Then request/reply round trips:
//     request: command u8 | key length u32 | key | value length u64 | value | argument i64
//     reply:   status u8 (Status) | length u64 | value, or the error text for kFailed
// The server checks every length against the limits below before allocating anything, and
// closes the connection of a client that breaks the protocol (or is too slow with its hello).
#pragma once
#include <cstddef>
#include <cstdint>

#include "dist/work.h"

namespace rg::dist::store_wire {

inline constexpr uint32_t kHelloMagic = 0x52475332;  // "RGS2"

enum Command : uint8_t {
  kSet = 1,      // key = value
  kGet = 2,      // waits up to `argument` ms for key, then returns its value
  kAdd = 3,      // adds `argument` to the integer at key (missing: 0), returns the sum
  kCheck = 4,    // whether key exists
  kWaitAny = 5,  // value = keys joined by '\n'; waits up to `argument` ms for any of them and
                 // returns "index\nvalue" of the first that exists
};

enum Status : uint8_t { kMissing = 0, kOk = 1, kFailed = 2 };

inline constexpr uint32_t kMaxKeyBytes = 4096;
inline constexpr uint64_t kMaxValueBytes = 1 << 20;
inline constexpr uint64_t kMaxReplyBytes = kMaxValueBytes + 32;
inline constexpr uint32_t kMaxReasonBytes = 4096;
// All values together; a SET past it fails (the store is for rendezvous, not bulk data).
inline constexpr uint64_t kMaxStoredBytes = 64 << 20;
// What a connection may cost the server before its hello proves it a member of the job: the
// whole hello must arrive within kHelloTimeout, and at most kMaxPendingHellos connections wait
// for theirs at once (past that, the oldest of them is closed). A connection whose
// hello carried the job's token is served; at most kMaxServedConnections at once.
inline constexpr Milliseconds kHelloTimeout{1000};
inline constexpr size_t kMaxPendingHellos = 64;
inline constexpr size_t kMaxServedConnections = 4096;
// Longest wait a request may ask for; longer ones are clamped (no chrono overflow).
inline constexpr Milliseconds kMaxWait{int64_t(30) * 24 * 3600 * 1000};

inline Milliseconds clamp_wait(int64_t ms) {
  return Milliseconds(ms < 0 ? 0 : ms > kMaxWait.count() ? kMaxWait.count() : ms);
}

}  // namespace rg::dist::store_wire
