// Single-copy all-reduce: ranks on one host reach each other's buffers directly, so each
// byte crosses between ranks once. Through the shared-memory rings it is copied twice (into
// a ring, out of it), in both halves of the ring all-reduce. Two ways to reach a peer:
//   - loads and stores: the peer's buffer lies in its shareable arena (a memory file, core/
//     shareable_host_memory.h) that this process has mapped (dist/peer_arena.cpp), or the
//     peer is a thread of this process. Plain loads, no system call per read.
//   - process_vm_readv (Linux cross-memory attach; the kernel copies straight from the
//     peer's pages), for any other buffer, as Open MPI's shared-memory transport does for
//     large messages (btl vader, single_copy_mechanism cma).
//
// The buffer is cut into N segments as the ring cuts it (the first count % N one element
// longer); rank r owns segment r. Message rounds, each a direct exchange with every peer,
// order the accesses:
//   1. describe: every rank sends (process id, buffer address, byte count, probe address,
//      probe value, arena file, inode and offset) to every peer. Its buffer is ready from
//      then on.
//   2. reduce: rank r folds segment r of every peer's buffer into its own segment r, a chunk
//      at a time (own input, then the peers' in rank order), loading it in place or reading
//      it into a bounce buffer small enough to stay in the core's cache; each reduced chunk,
//      still in cache, is then stored into segment r of every peer it can store into.
//   3. reduced: every rank sends which peers it stored into. With them all, rank r reads
//      each segment k that its owner did not store into its buffer, with process_vm_readv.
//   4. done (only where some rank read in step 3): once every peer said "done", nobody reads
//      this rank's buffer any more, and it returns.
// Peers touch only segments that their owner no longer writes (in step 2 rank r writes only
// segment r, its own and the peers'; step 3 reads completed segments).
//
// First use: the ranks may not be allowed to reach each other (ptrace restrictions such as
// Yama's ptrace_scope, different PID namespaces, another user). Step 1 then also carries a
// probe: each rank reads every peer's probe word (threads of this process pass), compares it
// with the value described, and votes; a second round shares the votes, so every rank takes
// the same decision. Refused (or Options::allow_peer_reads false on any rank): the ring, for
// this and later collectives. An arena that cannot be mapped just means process_vm_readv.
//
// Determinism: segment k is reduced by rank k alone, always in the same order, and copied
// bit for bit: every rank ends with the same bits, and reruns repeat them. Failure: the
// message rounds name a peer that dies or stops answering (within the timeout); a read of a
// peer that went away fails naming it (a mapped arena stays valid after its process exits);
// a description that does not match this collective is reported and never read.
#include "dist/single_copy_allreduce.h"

#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <vector>

#include "core/shareable_host_memory.h"
#include "dist/buffer_math.h"
#include "dist/combine_bytes.h"
#include "dist/peer_arena.h"

namespace rg::dist {
namespace {

// Chunk of the reduce step: the bounce buffer stays in L2 while folded
// (128 KiB measured fastest of 32, 64, 128 and 256 KiB, docs/dist.md).
constexpr size_t kChunkBytes = 128 << 10;

// The words of a rank's description (int64 each).
enum Word {
  kPid,
  kAddress,
  kBytes,
  kProbeAddress,
  kProbeValue,
  kArenaFd,
  kArenaInode,
  kArenaOffset,  // where the buffer lies in a shareable arena, or -1
  kWords
};
// The message rounds; the stage travels as the envelope's root (which an all-reduce does not
// use; the tag must stay the collectives' own), so a rank in another round, or running the
// ring, is reported instead of read.
enum Stage { kDescribe = 1, kVote, kReduced, kDone };

// A value that memory in another process is unlikely to hold at the probe's address: the
// clock, the process id and the address mixed (splitmix64's finalizer). Cheap, unlike
// std::random_device (25 µs a call here), which may also throw where no entropy source is.
uint64_t probe_value(const void* address) {
  uint64_t x = static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count()) ^
               (static_cast<uint64_t>(getpid()) << 32) ^ reinterpret_cast<uintptr_t>(address);
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

class SingleCopy {
 public:
  SingleCopy(CollectiveContext& ctx, const Tensor& work, CombineOp op, const Envelope& env)
      : ctx_(ctx), op_(op), env_(env), n_(ctx.size()), r_(ctx.rank()), dtype_(work.dtype()) {
    base_ = static_cast<char*>(work.data_ptr());
    bytes_ = work.nbytes();
    segment_ = uneven_segments(work.numel(), n_);
    for (int64_t& offset : segment_) offset *= static_cast<int64_t>(itemsize(dtype_));
    // One scratch call: descriptions of the N ranks and this one's, N + 1 votes, and the
    // N + 1 rows of which peers each rank wrote its segment into.
    words_ = ctx.scratch(2, (n_ + 1) * (kWords + 1 + n_), DType::i64, kCPU);
    bounce_ = static_cast<char*>(ctx.scratch_bytes(3, kChunkBytes, kCPU).data_ptr());
  }

  bool run() {
    describe_buffers();
    if (ctx_.peer_reads() == PeerReads::untested) agree();
    if (ctx_.peer_reads() != PeerReads::agreed) return false;
    const size_t read_from = ctx_.options().single_copy_read_bytes;
    if ((read_from == 0 || bytes_ < read_from) && !all_loadable()) return false;  // the ring
    find_loadable_peers();
    reduce_own_segment();
    share_pushes();
    gather();
    if (!everyone_pushed()) round(kDone);
    return true;
  }

 private:
  int64_t* word(int rank) { return static_cast<int64_t*>(words_.data_ptr()) + rank * kWords; }
  int64_t* vote(int rank) { return word(n_ + 1) + rank; }
  int64_t* pushed(int rank) { return vote(n_ + 1) + rank * n_; }  // row of N words
  int64_t words_before(const int64_t* w) { return w - static_cast<int64_t*>(words_.data_ptr()); }
  Envelope stage_envelope(Stage stage, int64_t words) const {
    Envelope e = env_;
    e.dtype = DType::i64, e.count = words, e.root = stage;
    return e;
  }

  void describe_buffers() {
    int64_t* mine = word(n_);
    mine[kPid] = getpid();
    mine[kAddress] = static_cast<int64_t>(reinterpret_cast<uintptr_t>(base_));
    mine[kBytes] = static_cast<int64_t>(bytes_);
    // A rank that refuses peer reads describes no probe word (address 0): nobody reads it.
    const bool allow = ctx_.options().allow_peer_reads;
    mine[kProbeAddress] =
        allow ? static_cast<int64_t>(reinterpret_cast<uintptr_t>(&mine[kProbeValue])) : 0;
    mine[kProbeValue] = static_cast<int64_t>(probe_value(&mine[kProbeValue]));
    const ShareableLocation at = allow ? shareable_location(base_, bytes_) : ShareableLocation{};
    mine[kArenaFd] = at.fd;
    mine[kArenaInode] = static_cast<int64_t>(at.inode);
    mine[kArenaOffset] = at.offset;
    ctx_.transport().exchange_with_all(flat_slice(words_, n_ * kWords, kWords),
                                       flat_slice(words_, 0, n_ * kWords),
                                       stage_envelope(kDescribe, kWords));
    for (int q = 0; q < n_; ++q)
      if (q != r_)
        RG_CHECK(word(q)[kBytes] == static_cast<int64_t>(bytes_) && word(q)[kPid] > 0,
                 describe_env(), ": rank ", q, " describes a buffer of ", word(q)[kBytes],
                 " bytes in process ", word(q)[kPid], ", expected ", bytes_, " bytes");
  }

  // Every rank reads every peer's probe word and votes; all must vote yes.
  void agree() {
    bool yes = ctx_.options().allow_peer_reads;
    for (int q = 0; q < n_ && yes; ++q) {
      if (q == r_ || word(q)[kPid] == getpid()) continue;  // a thread of this process
      int64_t seen = 0;
      yes = word(q)[kProbeAddress] != 0 &&
            try_read(q, word(q)[kProbeAddress], &seen, sizeof seen) == sizeof seen &&
            seen == word(q)[kProbeValue];
    }
    *vote(n_) = yes;
    ctx_.transport().exchange_with_all(flat_slice(words_, (n_ + 1) * kWords + n_, 1),
                                       flat_slice(words_, (n_ + 1) * kWords, n_),
                                       stage_envelope(kVote, 1));
    for (int q = 0; q < n_; ++q) yes = yes && (q == r_ || *vote(q) == 1);
    ctx_.set_peer_reads(yes ? PeerReads::agreed : PeerReads::refused);
  }

  // Whether every rank's buffer lies in a shareable arena, or all ranks are threads of one
  // process: decided from the descriptions alone, so every rank answers alike.
  bool all_loadable() {
    bool one_process = true, in_arenas = true;
    for (int k = 0; k < n_; ++k) {
      const int64_t* w = word(k == r_ ? n_ : k);
      one_process = one_process && w[kPid] == getpid();
      in_arenas = in_arenas && w[kArenaOffset] >= 0;
    }
    return one_process || in_arenas;
  }

  // Peers whose buffer this rank can load from and store into: its own process (the
  // threads backend), or a mapped shareable arena. The others are read with
  // process_vm_readv.
  void find_loadable_peers() {
    loadable_.assign(n_, nullptr);
    for (int q = 0; q < n_; ++q) {
      const int64_t* w = word(q);
      if (q == r_) continue;
      if (w[kPid] == getpid())
        loadable_[q] = reinterpret_cast<char*>(static_cast<uintptr_t>(w[kAddress]));
      else if (w[kArenaOffset] >= 0)
        loadable_[q] = map_peer_arena(w[kPid], w[kArenaFd], static_cast<uint64_t>(w[kArenaInode]),
                                      w[kArenaOffset], bytes_);
      if (loadable_[q] != nullptr) ctx_.count_peer_loads();
    }
  }

  // The "reduced" round: each rank tells which peers it wrote its segment into.
  void share_pushes() {
    for (int q = 0; q < n_; ++q) pushed(n_)[q] = loadable_[q] != nullptr;
    ctx_.transport().exchange_with_all(flat_slice(words_, words_before(pushed(n_)), n_),
                                       flat_slice(words_, words_before(pushed(0)), n_ * n_),
                                       stage_envelope(kReduced, n_));
    for (int q = 0; q < n_; ++q) pushed(r_)[q] = pushed(n_)[q];
  }

  // Every rank wrote its segment into every peer: nobody reads a peer's buffer after the
  // "reduced" round, so the "done" round is not needed (every rank decides alike).
  bool everyone_pushed() {
    for (int k = 0; k < n_; ++k)
      for (int q = 0; q < n_; ++q)
        if (q != k && pushed(k)[q] != 1) return false;
    return true;
  }

  // A message round without payload: returns once every peer has sent its `stage` message.
  void round(Stage stage) {
    Tensor none = flat_slice(words_, 0, 0);
    ctx_.transport().exchange_with_all(none, none, stage_envelope(stage, 0));
  }

  // Segment r, chunk by chunk: own input (op) input 0 (op) input 1 ... (peers in rank order).
  void reduce_own_segment() {
    const int64_t item = itemsize(dtype_);
    for (int64_t at = segment_[r_]; at < segment_[r_ + 1]; at += kChunkBytes) {
      const size_t len = std::min<int64_t>(kChunkBytes, segment_[r_ + 1] - at);
      for (int k = 0; k < n_; ++k) {
        if (k == r_) continue;
        const char* incoming = loadable_[k] ? loadable_[k] + at : bounce_;
        if (!loadable_[k]) read(k, at, bounce_, len);
        combine_bytes(base_ + at, incoming, static_cast<int64_t>(len) / item, dtype_, op_);
      }
      // The reduced chunk, still in this core's cache, into the peers this rank can write.
      for (int q = 0; q < n_; ++q)
        if (loadable_[q]) std::memcpy(loadable_[q] + at, base_ + at, len);
    }
  }

  // Segments that their owner did not write into this rank's buffer.
  void gather() {
    for (int k = 0; k < n_; ++k)
      if (k != r_ && pushed(k)[r_] != 1)
        read(k, segment_[k], base_ + segment_[k], segment_[k + 1] - segment_[k]);
  }

  // Copies `len` bytes at byte `offset` of rank q's buffer into `into`.
  void read(int q, int64_t offset, char* into, size_t len) {
    const ssize_t got = try_read(q, word(q)[kAddress] + offset, into, len);
    if (got != static_cast<ssize_t>(len))
      RG_FAIL(describe_env(), ": reading rank ", q, "'s buffer (process ", word(q)[kPid],
              ") failed: ", got < 0 ? std::strerror(errno) : "it went away");
  }

  // Reads until done, a failure (-1, errno set) or nothing more (fewer bytes).
  ssize_t try_read(int q, int64_t address, void* into, size_t len) {
    size_t done = 0;
    while (done < len) {
      iovec local{static_cast<char*>(into) + done, len - done};
      iovec remote{reinterpret_cast<void*>(static_cast<uintptr_t>(address) + done), len - done};
      const ssize_t got =
          process_vm_readv(static_cast<pid_t>(word(q)[kPid]), &local, 1, &remote, 1, 0);
      if (got < 0 && errno == EINTR) continue;
      if (got < 0) return -1;
      if (got == 0) break;
      done += static_cast<size_t>(got);
    }
    return static_cast<ssize_t>(done);
  }

  std::string describe_env() const { return str("rank ", r_, ": ", describe(env_)); }

  CollectiveContext& ctx_;
  CombineOp op_;
  Envelope env_;
  int n_, r_;
  DType dtype_;
  char* base_ = nullptr;
  size_t bytes_ = 0;
  std::vector<int64_t> segment_;  // byte offsets; segment k is [segment_[k], segment_[k + 1])
  Tensor words_;
  char* bounce_ = nullptr;       // kChunkBytes of a peer's input
  std::vector<char*> loadable_;  // rank -> its buffer, mapped in this process, or nullptr
};

}  // namespace

bool single_copy_eligible(const CollectiveContext& ctx, const Tensor& buf) {
  const size_t threshold = ctx.options().single_copy_bytes;
  return ctx.size() > 1 && threshold > 0 && buf.nbytes() >= threshold &&
         ctx.capabilities().shared_memory && ctx.peer_reads() != PeerReads::refused &&
         buf.device().is_host_memory() &&
         (combines_bytes(buf.dtype()) || buf.dtype() == DType::bf16);  // bf16: reduced in f32
}

bool single_copy_allreduce(CollectiveContext& ctx, const Tensor& work, CombineOp op,
                           const Envelope& env) {
  if (!SingleCopy(ctx, work, op, env).run()) return false;
  ctx.count_single_copy();
  return true;
}

void offer_arena_to_peers(const Options& options) {
  if (options.single_copy_bytes == 0 || !options.allow_peer_reads) return;
  share_large_host_blocks(options.single_copy_read_bytes > 0
                              ? std::min(options.single_copy_bytes, options.single_copy_read_bytes)
                              : options.single_copy_bytes);
}

}  // namespace rg::dist
