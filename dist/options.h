// Options of a process group, with their defaults from the environment.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

#include "dist/idle_wait.h"
#include "dist/job_token.h"
#include "dist/work.h"

namespace rg::dist {

// RG_DIST_TIMEOUT (seconds, may be fractional) when set, else 300 s.
Milliseconds default_timeout();
// RG_DIST_DIRECT_BYTES (a whole number of bytes, 0 turns the direct exchange off) when set,
// else 32 KiB (the crossover measured with bench/allreduce, see docs/dist.md).
size_t default_direct_bytes();
// RG_DIST_DIRECT_BYTES_ACROSS_HOSTS likewise, else 2 KiB: the direct exchange's limit where the
// ranks run on several hosts (each rank sends the whole buffer to every peer, so it crosses
// the network N-1 times; bench/two_hosts.sh measured the crossover, docs/dist.md).
size_t default_direct_bytes_across_hosts();
// RG_DIST_SINGLE_COPY_BYTES (a whole number of bytes, 0 turns the single-copy path off) when
// set, else 32 KiB; RG_DIST_SINGLE_COPY_READ_BYTES likewise, else 2 MiB (the crossovers
// measured with bench/allreduce, see docs/dist.md).
size_t default_single_copy_bytes();
size_t default_single_copy_read_bytes();

// RG_DIST_RECURSIVE_DOUBLING_BYTES likewise, else 8 KiB: where the ranks run on several hosts,
// all-reduces above the direct exchange's limit and up to this size take recursive doubling
// (log2 N message steps; bench/two_hosts.sh measured the crossover, docs/dist.md).
size_t default_recursive_doubling_bytes();

// Which algorithm all-reduces above Options::direct_bytes take (dist/allreduce_choice.cpp):
// automatic picks by size and topology; ring forces the flat ring (or the single-copy path
// within a host); two_level forces the two-level all-reduce wherever every host runs the same
// number of ranks; recursive_doubling forces recursive doubling. Every rank of a group must
// be given the same value.
enum class AllreduceAlgorithm : uint8_t { automatic, ring, two_level, recursive_doubling };
// RG_DIST_ALLREDUCE: auto (the default), ring, two_level or recursive_doubling.
AllreduceAlgorithm default_allreduce_algorithm();

struct Options {
  // How long any rank waits for another to send or receive before the group fails.
  Milliseconds timeout = default_timeout();
  // Ring pipelining: each segment is cut into chunks of about this many bytes.
  size_t chunk_bytes = 512 << 10;
  // All-reduces of at most this many bytes, and barriers, skip the ring for a direct
  // exchange: one message step instead of 2 (N-1) (dist/direct_exchange.cpp). 0: never.
  size_t direct_bytes = default_direct_bytes();
  // The same limit where the ranks run on several hosts (the smaller of the two applies).
  size_t direct_bytes_across_hosts = default_direct_bytes_across_hosts();
  // Across hosts, all-reduces above the direct limit and up to this size take recursive
  // doubling (dist/recursive_doubling.cpp). 0: never.
  size_t recursive_doubling_bytes = default_recursive_doubling_bytes();
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
  // The all-reduce algorithm above direct_bytes (see AllreduceAlgorithm).
  AllreduceAlgorithm allreduce_algorithm = default_allreduce_algorithm();
  // Spin first or yield at once while waiting for peers (see IdleWait, dist/idle_wait.h).
  IdleWait idle_wait = default_idle_wait();
  // Connections between the ranks (tcp backend, store) must present it (see job_token.h).
  std::string job_token = job_token_from_env();
};

}  // namespace rg::dist
