// MpiTransport: the Transport of the mpi backend (docs/adding-a-transport.md is its plan).
// Every message is two MPI messages on the group's own communicator (a duplicate of
// MPI_COMM_WORLD), with one tag: the 40-byte header of the message pump (the sender's
// Envelope) and then the payload. MPI keeps the messages of one (source, tag, communicator)
// in order, so headers and payloads pair up, and the receiver compares the header with its own
// envelope before it takes the payload. User p2p messages use their own tag, collectives
// kCollective, failures kControl: each rank keeps one receive posted on it, and a rank that
// fails sends the others abort_payload() there. Waits poll MPI_Test, with the group's timeout
// (a long wait pausing 50 us between polls).
// At construction the ranks exchange their host identities (MPI_Allgatherv): host_of_ranks()
// numbers the hosts, and bytes_sent() splits the payload by whether it stays on this host.
#define OMPI_SKIP_MPICXX 1  // the C API only
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>
#include <sched.h>
#include <sys/prctl.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <mutex>
#include <optional>
#include <thread>

#include "dist/message_pump.h"  // WireHeader: the envelope as 40 bytes
#include "dist/mpi_group.h"
#include "dist/single_copy_allreduce.h"  // offer_arena_to_peers
#include "dist/socket.h"                 // net::host_identity
#include "dist/topology.h"               // number_hosts

namespace rg::dist {
namespace {

using messages::WireHeader;

constexpr int kControlBytes = 4096;  // an abort message longer than this is cut
// A long wait polls every kPollPause: bench/ddp's communication thread then took 3-4 ms of
// CPU per synchronized step instead of 26-33 ms (spinning), on the core of the rank's backward.
constexpr std::chrono::microseconds kPollPause{50};

// ---- MPI itself: initialized once, by us unless the program did; finalized at exit only
// when we initialized it. Below MPI_THREAD_MULTIPLE every MPI call takes g_serial.
std::mutex g_serial;
bool g_serialized = false;

template <class F>
int mpi_call(F&& f) {
  std::unique_lock<std::mutex> lock;
  if (g_serialized) lock = std::unique_lock(g_serial);
  return f();
}

std::string mpi_error_text(int code) {
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  if (MPI_Error_string(code, text, &length) != MPI_SUCCESS) return str("MPI error ", code);
  return std::string(text, length);
}

void finalize_at_exit() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Finalize();
}

}  // namespace

void abort_mpi_job(int exit_code) {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (initialized && !finalized) MPI_Abort(MPI_COMM_WORLD, exit_code);
}

namespace {

void initialize_mpi() {
  static std::once_flag once;
  std::call_once(once, [] {
    int initialized = 0, provided = MPI_THREAD_SINGLE;
    MPI_Initialized(&initialized);
    if (!initialized) {
      const int rc = MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided);
      RG_CHECK(rc == MPI_SUCCESS, "mpi backend: MPI_Init_thread failed: ", mpi_error_text(rc));
      std::atexit(finalize_at_exit);
    } else {
      MPI_Query_thread(&provided);
    }
    RG_CHECK(provided >= MPI_THREAD_SERIALIZED, "mpi backend: MPI was initialized with thread ",
             "level ", provided, "; the transport calls it from its communication thread and ",
             "needs MPI_THREAD_SERIALIZED or more (MPI_Init_thread)");
    g_serialized = provided < MPI_THREAD_MULTIPLE;
  });
}

// ---- What the transport and its works share: the communicator, the control receive and the
// group's first failure (every later wait throws it).
class MpiChannel {
 public:
  MpiChannel(MPI_Comm comm, int rank, int size, int tag_ub, bool yield_at_once)
      : kControl(tag_ub),
        kCollective(tag_ub - 1),
        yield_at_once(yield_at_once),
        comm_(comm),
        rank_(rank),
        size_(size) {
    control_buffer_.resize(kControlBytes);
    const int rc = mpi_call([&] {
      return MPI_Irecv(control_buffer_.data(), kControlBytes, MPI_BYTE, MPI_ANY_SOURCE, kControl,
                       comm_, &control_);
    });
    RG_CHECK(rc == MPI_SUCCESS, "mpi backend: MPI_Irecv failed: ", mpi_error_text(rc));
  }

  MPI_Comm comm() const { return comm_; }
  int rank() const { return rank_; }
  bool failed() const { return failed_.load(std::memory_order_acquire); }
  // Held while a message's header and payload are posted: no other message of the same tag
  // (from another thread) comes between them.
  std::mutex& post_mutex() { return post_mu_; }

  // Records the group's first failure; `tell`: sends it to every peer (best effort).
  void fail(const DistError& error, bool tell);
  // Throws the failure, if any, after looking whether a peer has sent one.
  void check_failure();
  // A work that goes unfinished leaves its requests here; close() cancels or releases them.
  void orphan(MPI_Request request, Tensor keep, std::shared_ptr<WireHeader> header);
  // Releases the requests left; frees the communicator unless the group failed.
  void close(bool failed);

  const int kControl;        // MPI_TAG_UB: failures
  const int kCollective;     // MPI_TAG_UB - 1: the collectives' messages
  const bool yield_at_once;  // waits yield at once, never spin (dist/idle_wait.h)

 private:
  void throw_failure_locked();

  MPI_Comm comm_;
  int rank_, size_;
  std::mutex post_mu_;
  std::mutex mu_;  // guards everything below
  std::atomic<bool> failed_{false};
  std::optional<DistError> failure_;
  MPI_Request control_ = MPI_REQUEST_NULL;
  std::vector<char> control_buffer_;
  struct Orphan {
    MPI_Request request;
    Tensor keep;
    std::shared_ptr<WireHeader> header;
  };
  std::vector<Orphan> orphans_;
  std::vector<std::pair<MPI_Request, std::unique_ptr<std::string>>> abort_sends_;
  std::vector<std::shared_ptr<void>>& kept() {
    static auto* kept = new std::vector<std::shared_ptr<void>>;  // never freed, on purpose
    return *kept;
  }
  void release(Orphan& o);
  bool closed_ = false;
};

void MpiChannel::fail(const DistError& error, bool tell) {
  std::lock_guard lock(mu_);
  if (failure_) return;
  failure_ = error;
  failed_.store(true, std::memory_order_release);
  if (!tell || closed_) return;
  std::string payload = abort_payload(error.failure(), rank_, error.what());
  if (payload.size() > kControlBytes) payload.resize(kControlBytes);
  for (int peer = 0; peer < size_; ++peer) {
    if (peer == rank_) continue;
    auto buffer = std::make_unique<std::string>(payload);
    MPI_Request request = MPI_REQUEST_NULL;
    mpi_call([&] {
      return MPI_Isend(buffer->data(), static_cast<int>(buffer->size()), MPI_BYTE, peer, kControl,
                       comm_, &request);
    });
    abort_sends_.emplace_back(request, std::move(buffer));
  }
}

void MpiChannel::throw_failure_locked() {
  if (closed_) RG_FAIL("rank ", rank_, ": the mpi process group is closed");
  if (failure_) throw *failure_;
}

void MpiChannel::check_failure() {
  std::lock_guard lock(mu_);
  throw_failure_locked();
  int heard = 0;
  MPI_Status status;
  const int rc = mpi_call([&] { return MPI_Test(&control_, &heard, &status); });
  if (rc != MPI_SUCCESS || !heard) return;
  int bytes = 0;
  MPI_Get_count(&status, MPI_BYTE, &bytes);
  const int from = status.MPI_SOURCE;
  auto [origin, said] = parse_abort(std::string(control_buffer_.data(), bytes), from);
  failure_ = DistError(origin, str("rank ", rank_, ": rank ", from, " failed: ", said));
  failed_.store(true, std::memory_order_release);
  throw *failure_;
}

void MpiChannel::orphan(MPI_Request request, Tensor keep, std::shared_ptr<WireHeader> header) {
  std::lock_guard lock(mu_);
  orphans_.push_back({request, std::move(keep), std::move(header)});
  if (closed_) release(orphans_.back()), orphans_.clear();
}

// A receive is cancelled; a send is released, and its buffer kept for good (MPI may still
// read it). Only after a failure, a few per group.
void MpiChannel::release(Orphan& o) {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized)
    mpi_call([&] {
      MPI_Cancel(&o.request);
      return MPI_Request_free(&o.request);
    });
  kept().push_back(std::make_shared<Orphan>(std::move(o)));
}

// After a failure, or with messages left unfinished, the communicator is kept, never freed:
// messages to it may still be on their way (sends to a rank that left, abort reports), and
// Open MPI gives a freed communicator's context id to the next one, whose receives would then
// match them.
void MpiChannel::close(bool failed) {
  std::lock_guard lock(mu_);
  if (closed_) return;
  closed_ = true;
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) return;  // nothing left to release
  if (control_ != MPI_REQUEST_NULL)
    mpi_call([&] {
      MPI_Cancel(&control_);
      return MPI_Wait(&control_, MPI_STATUS_IGNORE);
    });
  const bool clean = !failed && !failure_ && orphans_.empty();  // nothing may still arrive
  for (Orphan& o : orphans_) release(o);
  orphans_.clear();
  for (auto& [request, buffer] : abort_sends_) {
    if (request != MPI_REQUEST_NULL) mpi_call([&] { return MPI_Request_free(&request); });
    kept().push_back(std::shared_ptr<std::string>(std::move(buffer)));
  }
  abort_sends_.clear();
  if (clean) mpi_call([&] { return MPI_Comm_free(&comm_); });
}

std::string mismatch_text(int peer, const Envelope& theirs, const Envelope& mine) {
  if (theirs.kind == Collective::p2p && mine.kind == Collective::p2p)
    return str("rank ", peer, " sent ", theirs.count, " ", dtype_name(theirs.dtype), " with tag ",
               theirs.tag, " but this rank posted a receive of ", mine.count, " ",
               dtype_name(mine.dtype));
  return str("mismatched collectives: rank ", peer, " is in ", describe(theirs),
             " while this rank is in ", describe(mine));
}

// ---- One message: the header's request and the payload's, posted at once.
class MpiWork : public Work {
 public:
  MpiWork(std::shared_ptr<MpiChannel> channel, bool is_send, const Tensor& t, int peer,
          const Envelope& env, Milliseconds group_timeout);
  ~MpiWork() override;

  bool wait(Milliseconds timeout) override { return poll_until(Clock::now() + timeout); }
  void wait() override { wait_or_fail(group_timeout_); }
  bool is_completed() override { return progress(); }
  // Waits up to `timeout`; then fails the group (telling the peers) naming the peer.
  void wait_or_fail(Milliseconds timeout);

 private:
  bool poll_until(Clock::time_point deadline);
  bool progress();  // true once done; throws the group's failure
  void check_header();
  [[noreturn]] void fail(FailureKind kind, int blamed, const std::string& problem);

  std::shared_ptr<MpiChannel> channel_;
  bool is_send_;
  Tensor tensor_;
  int peer_;
  Envelope env_;
  Milliseconds group_timeout_;
  std::shared_ptr<WireHeader> header_;  // outlives the work while MPI may still touch it
  MPI_Request requests_[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};  // header, payload
  std::mutex mu_;
  bool header_checked_ = false, done_ = false;
};

MpiWork::MpiWork(std::shared_ptr<MpiChannel> channel, bool is_send, const Tensor& t, int peer,
                 const Envelope& env, Milliseconds group_timeout)
    : channel_(std::move(channel)),
      is_send_(is_send),
      tensor_(t),
      peer_(peer),
      env_(env),
      group_timeout_(group_timeout),
      header_(std::make_shared<WireHeader>(messages::header_of(env, t.nbytes()))),
      header_checked_(is_send) {
  const int tag = env.kind == Collective::p2p ? env.tag : channel_->kCollective;
  RG_CHECK(env.kind != Collective::p2p || tag < channel_->kCollective, "send/recv: tag ", tag,
           " is too large for MPI (at most ", channel_->kCollective - 1, ")");
  RG_CHECK(t.nbytes() <= static_cast<size_t>(INT32_MAX), "mpi backend: a message of ", t.nbytes(),
           " bytes is over MPI's 2 GiB count");
  const int n = static_cast<int>(t.nbytes());
  MPI_Comm comm = channel_->comm();
  std::lock_guard post(channel_->post_mutex());
  const int rc = mpi_call([&] {
    if (is_send) {
      int first =
          MPI_Isend(header_.get(), sizeof(WireHeader), MPI_BYTE, peer, tag, comm, &requests_[0]);
      return first != MPI_SUCCESS
                 ? first
                 : MPI_Isend(t.data_ptr(), n, MPI_BYTE, peer, tag, comm, &requests_[1]);
    }
    int first =
        MPI_Irecv(header_.get(), sizeof(WireHeader), MPI_BYTE, peer, tag, comm, &requests_[0]);
    return first != MPI_SUCCESS
               ? first
               : MPI_Irecv(t.data_ptr(), n, MPI_BYTE, peer, tag, comm, &requests_[1]);
  });
  if (rc != MPI_SUCCESS)
    fail(FailureKind::peer_gone, peer,
         str(is_send ? "MPI_Isend" : "MPI_Irecv", " failed: ", mpi_error_text(rc)));
}

MpiWork::~MpiWork() {
  std::lock_guard lock(mu_);
  for (MPI_Request& request : requests_)
    if (request != MPI_REQUEST_NULL) channel_->orphan(request, tensor_, header_);
}

[[noreturn]] void MpiWork::fail(FailureKind kind, int blamed, const std::string& problem) {
  DistError error({kind, blamed, describe(env_), env_.seq},
                  str("rank ", channel_->rank(), ": ", problem));
  channel_->fail(error, true);
  throw error;
}

void MpiWork::check_header() {
  const Envelope theirs = messages::envelope_of(*header_);
  if (header_->magic != messages::kMagic)
    fail(FailureKind::mismatch, -1, str("corrupt message header from rank ", peer_));
  if (!(theirs == env_)) fail(FailureKind::mismatch, -1, mismatch_text(peer_, theirs, env_));
  if (header_->nbytes != tensor_.nbytes())
    fail(FailureKind::mismatch, -1,
         str("rank ", peer_, " sent a message of ", header_->nbytes, " bytes for ", describe(env_),
             ", this rank expected ", tensor_.nbytes(), " bytes"));
  header_checked_ = true;
}

bool MpiWork::progress() {
  std::lock_guard lock(mu_);
  if (done_) return true;
  if (channel_->failed()) channel_->check_failure();  // throws it
  int flag = 0;
  if (!header_checked_) {
    const int rc = mpi_call([&] { return MPI_Test(&requests_[0], &flag, MPI_STATUS_IGNORE); });
    if (rc != MPI_SUCCESS)
      fail(FailureKind::peer_gone, peer_, str("MPI_Test failed: ", mpi_error_text(rc)));
    if (flag) check_header();
  }
  if (header_checked_) {
    const int rc = mpi_call([&] { return MPI_Testall(2, requests_, &flag, MPI_STATUSES_IGNORE); });
    if (rc != MPI_SUCCESS)
      fail(FailureKind::peer_gone, peer_, str("MPI_Testall failed: ", mpi_error_text(rc)));
  }
  channel_->check_failure();  // a peer's abort: the group's first failure is final
  return done_ = flag;
}

bool MpiWork::poll_until(Clock::time_point deadline) {
  // Sleeps as short as asked: Linux's default timer slack (50 us) would stretch every pause.
  static thread_local const bool precise_sleeps = prctl(PR_SET_TIMERSLACK, 1UL) == 0;
  (void)precise_sleeps;
  std::chrono::microseconds pause{2};
  for (int spin = 0;; ++spin) {
    if (progress()) return true;
    const Clock::time_point now = Clock::now();
    if (now >= deadline) return false;
    // Ranks may outnumber cores (mpirun --oversubscribe): then yield at once.
    if (spin > 64 || channel_->yield_at_once) sched_yield();
    // A long wait (the peer still computing): pause, so that the rank's compute thread on
    // this core is not slowed by the polling (MPI progresses inside MPI_Test only). The
    // pause doubles from 2 us up to kPollPause: a message due soon is seen soon.
    if (spin > 256) {
      std::this_thread::sleep_for(std::min<Clock::duration>(pause, deadline - now));
      pause = std::min(2 * pause, kPollPause);
    }
  }
}

void MpiWork::wait_or_fail(Milliseconds timeout) {
  if (poll_until(Clock::now() + timeout)) return;
  fail(FailureKind::timeout, peer_,
       str(describe(env_), ": timed out after ", timeout.count(), " ms waiting for rank ", peer_));
}

// ---- The transport.
class MpiTransport : public Transport {
 public:
  MpiTransport(std::shared_ptr<MpiChannel> channel, int rank, int size, Milliseconds timeout,
               std::vector<int> host_of)
      : Transport(rank, size, timeout), channel_(std::move(channel)) {
    one_host_ = std::all_of(host_of.begin(), host_of.end(), [](int host) { return host == 0; });
    set_host_map(std::move(host_of));  // number_hosts of the identities
  }
  ~MpiTransport() override { channel_->close(false); }

  const char* name() const override { return "mpi"; }
  TransportCapabilities capabilities() const override {
    TransportCapabilities can;
    // Every rank on this host: the single-copy all-reduce may reach the peers' buffers, as
    // over tcp's shared memory (the ranks check on first use that they may, and agree).
    can.shared_memory = one_host_;
    return can;
  }
  bool supports_device(Device device) const override { return device.is_host_memory(); }
  std::string link(int peer) const override { return peer == rank() ? "self" : "mpi"; }

  std::shared_ptr<Work> send_message(const Tensor& t, int dst, const Envelope& env) override {
    auto work = std::make_shared<MpiWork>(channel_, true, t, dst, env, timeout());
    count_sent(dst, t.nbytes());
    return work;
  }
  std::shared_ptr<Work> recv_message(const Tensor& t, int src, const Envelope& env) override {
    return std::make_shared<MpiWork>(channel_, false, t, src, env, timeout());
  }
  void wait_message(Work& work, int, const Envelope&) override {
    static_cast<MpiWork&>(work).wait_or_fail(timeout());
  }

  void abort(const Failure& failure, const std::string& message) override {
    channel_->fail(DistError(failure, message), true);
  }
  void close(bool failed) override { channel_->close(failed); }

 private:
  std::shared_ptr<MpiChannel> channel_;
  bool one_host_ = true;
};

// Every rank's host identity (net::host_identity), gathered on `comm`: collective.
std::vector<std::string> gather_host_identities(MPI_Comm comm, int size) {
  const std::string mine = net::host_identity();
  int length = static_cast<int>(mine.size());
  std::vector<int> lengths(size), offsets(size);
  int rc = mpi_call(
      [&] { return MPI_Allgather(&length, 1, MPI_INT, lengths.data(), 1, MPI_INT, comm); });
  RG_CHECK(rc == MPI_SUCCESS, "mpi backend: MPI_Allgather failed: ", mpi_error_text(rc));
  int total = 0;
  for (int q = 0; q < size; ++q) offsets[q] = total, total += lengths[q];
  std::string all(total, '\0');
  rc = mpi_call([&] {
    return MPI_Allgatherv(mine.data(), length, MPI_CHAR, all.data(), lengths.data(), offsets.data(),
                          MPI_CHAR, comm);
  });
  RG_CHECK(rc == MPI_SUCCESS, "mpi backend: MPI_Allgatherv failed: ", mpi_error_text(rc));
  std::vector<std::string> identities;
  for (int q = 0; q < size; ++q) identities.push_back(all.substr(offsets[q], lengths[q]));
  return identities;
}

}  // namespace

bool mpi_available() { return true; }

std::shared_ptr<ProcessGroup> make_mpi_group(Options options) {
  initialize_mpi();
  int rank = 0, size = 1, found = 0;
  int* tag_ub = nullptr;
  MPI_Comm comm = MPI_COMM_NULL;
  int rc = mpi_call([&] {
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &tag_ub, &found);
    return MPI_Comm_dup(MPI_COMM_WORLD, &comm);
  });
  RG_CHECK(rc == MPI_SUCCESS, "mpi backend: MPI_Comm_dup failed: ", mpi_error_text(rc));
  mpi_call([&] { return MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN); });
  const int ub = found && tag_ub ? *tag_ub : 32767;  // the least the standard allows
  std::vector<int> host_of = number_hosts(gather_host_identities(comm, size));
  if (std::all_of(host_of.begin(), host_of.end(), [](int host) { return host == 0; }))
    offer_arena_to_peers(options);
  const int ranks_on_host =
      static_cast<int>(std::count(host_of.begin(), host_of.end(), host_of[rank]));
  auto channel = std::make_shared<MpiChannel>(comm, rank, size, ub,
                                              yields_at_once(options.idle_wait, ranks_on_host));
  auto transport =
      std::make_unique<MpiTransport>(channel, rank, size, options.timeout, std::move(host_of));
  return std::make_shared<ProcessGroup>(rank, size, std::move(options), std::move(transport));
}

}  // namespace rg::dist
