// Shared-memory rings of the tcp backend (see shared_rings.h).
//
// Exchange per pair over the data socket (L the lower rank, H the higher), each message a
// length-prefixed text, "" meaning "no":
//   1. L -> H  offer:  "PID RING_FD BELL_FD CAPACITY"  (L created the ring and bell files)
//   2. H -> L  answer: "PID BELL_FD"                   (H mapped L's files)
//   3. L -> H  final:  "ok"                            (L mapped H's bell)
// The pair shares memory only if all three say yes. Each phase only waits on messages of an
// earlier phase, so the ranks cannot deadlock. The files stay open until every pair is done,
// so a peer can still open them; their mappings outlive them.
#include "dist/shared_rings.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <sstream>

#include "core/memory_limits.h"
#include "dist/byte_stream.h"
#include "dist/dist_error.h"
#include "dist/socket.h"

namespace rg::dist {
namespace {

constexpr size_t kDefaultRingBytes = 4 << 20;
constexpr size_t kMaxRingBytes = size_t(1) << 30;
constexpr uint32_t kMaxMessageBytes = 256;

// An open memory file; closed at the end of the set-up (the mapping stays).
struct MemoryFile {
  int fd = -1;
  std::shared_ptr<void> mapping;
  MemoryFile() = default;
  MemoryFile(MemoryFile&& o) noexcept : fd(o.fd), mapping(std::move(o.mapping)) { o.fd = -1; }
  ~MemoryFile() {
    if (fd >= 0) ::close(fd);
  }
};

// MAP_POPULATE: the pages are allocated and mapped now, not by a page fault on the first
// message through each of them (a fault per 4 KiB, in both processes, tripled the time of
// 4 KiB all-reduces until the first 4 MiB had gone round the ring).
std::shared_ptr<void> map_file(int fd, size_t bytes, const std::string& what) {
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);
  if (p == MAP_FAILED && errno == ENOMEM) throw allocation_error(what + ": mmap", bytes);
  RG_CHECK(p != MAP_FAILED, what, ": mmap of ", bytes, " bytes failed: ", std::strerror(errno));
  return std::shared_ptr<void>(p, [bytes](void* q) { munmap(q, bytes); });
}

MemoryFile create_file(const char* name, size_t bytes, const std::string& me) {
  MemoryFile f;
  f.fd = memfd_create(name, MFD_CLOEXEC);
  RG_CHECK(f.fd >= 0, me, ": memfd_create: ", std::strerror(errno));
  RG_CHECK(ftruncate(f.fd, static_cast<off_t>(bytes)) == 0, me, ": cannot size shared memory to ",
           bytes, " bytes: ", std::strerror(errno));
  f.mapping = map_file(f.fd, bytes, me);
  return f;
}

// Maps a peer's memory file; null (and why) when this process may not open it.
std::shared_ptr<void> open_peer_file(long pid, int fd, size_t bytes, std::string& why) {
  const std::string path = str("/proc/", pid, "/fd/", fd);
  int mine = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (mine < 0) {
    why = str("open ", path, ": ", std::strerror(errno));
    return nullptr;
  }
  struct stat st {};
  std::shared_ptr<void> mapping;
  if (fstat(mine, &st) == 0 && static_cast<size_t>(st.st_size) >= bytes)
    mapping = map_file(mine, bytes, "shared memory");
  else
    why = str(path, " is smaller than ", bytes, " bytes");
  ::close(mine);
  return mapping;
}

// The set-up's words with `peer`. A peer that does not answer has failed (or ended) first:
// the error blames it (a DistError), so rgrun names that rank and shows its own message.
template <class Io>
auto with_peer(int peer, Io&& io) {
  try {
    return io();
  } catch (const DistError&) {
    throw;
  } catch (const Error& e) {
    throw DistError({FailureKind::peer_gone, peer, "shared memory set-up", 0}, e.what());
  }
}

void send_text(int fd, int peer, const std::string& text, Clock::time_point deadline,
               const std::string& what) {
  with_peer(peer, [&] {
    uint32_t len = text.size();
    net::write_all(fd, &len, 4, deadline, what);
    net::write_all(fd, text.data(), len, deadline, what);
  });
}

std::string read_text(int fd, int peer, Clock::time_point deadline, const std::string& what) {
  return with_peer(peer, [&] {
    uint32_t len = 0;
    net::read_all(fd, &len, 4, deadline, what);
    RG_CHECK(len <= kMaxMessageBytes, what, ": malformed message of ", len, " bytes");
    std::string text(len, '\0');
    net::read_all(fd, text.data(), len, deadline, what);
    return text;
  });
}

void warn_fallback(const std::string& me, int q, const std::string& why) {
  std::fprintf(stderr, "%s: no shared memory with rank %d (%s); using its socket\n", me.c_str(), q,
               why.c_str());
}

}  // namespace

size_t shm_ring_bytes(const char* text) {
  if (!text || !*text) return kDefaultRingBytes;
  const std::string s = text;
  char* end = nullptr;
  errno = 0;
  unsigned long long bytes = std::strtoull(s.c_str(), &end, 10);
  RG_CHECK(s.find_first_not_of("0123456789") == std::string::npos && errno == 0 && bytes >= 1 &&
               bytes <= kMaxRingBytes,
           "RG_DIST_SHM_BYTES='", s,
           "': expected the size of a shared-memory ring in bytes, from 1 "
           "to ",
           kMaxRingBytes, " (default ", kDefaultRingBytes,
           "; RG_DIST_SHM=0 turns shared memory off)");
  return (bytes + kRingAlignment - 1) / kRingAlignment * kRingAlignment;
}

SharedRings setup_shared_rings(int rank, const std::vector<bool>& same_host,
                               const std::vector<int>& data_fd, size_t capacity,
                               Clock::time_point deadline, const std::string& me) {
  const int size = static_cast<int>(same_host.size());
  SharedRings out;
  out.segment.resize(size);
  out.capacity.assign(size, capacity);
  out.peer_bell.resize(size);
  std::vector<MemoryFile> files;  // kept open until every pair is done
  bool any = false;
  for (int q = 0; q < size; ++q) any |= q != rank && same_host[q];
  // Every pair runs the exchange, even one that shares nothing: the peer may share with others.
  MemoryFile bell = any ? create_file("rg-bell", sizeof(Doorbell), me) : MemoryFile();
  if (any) new (bell.mapping.get()) Doorbell();
  out.my_bell = bell.mapping;
  const long pid = getpid();
  auto what = [&](int q) { return str(me, ": shared memory set-up with rank ", q); };

  for (int q = rank + 1; q < size; ++q) {  // 1. offer (as the lower rank)
    std::string offer;
    if (same_host[q]) {
      MemoryFile rings = create_file("rg-rings", 2 * RingBuffer::footprint(capacity), me);
      char* base = static_cast<char*>(rings.mapping.get());
      RingBuffer::create(base, capacity);
      RingBuffer::create(base + RingBuffer::footprint(capacity), capacity);
      offer = str(pid, " ", rings.fd, " ", bell.fd, " ", capacity);
      out.segment[q] = rings.mapping;
      files.push_back(std::move(rings));
    }
    send_text(data_fd[q], q, offer, deadline, what(q));
  }
  for (int q = 0; q < rank; ++q) {  // 2. answer (as the higher rank)
    std::istringstream offer(read_text(data_fd[q], q, deadline, what(q)));
    long their_pid = 0;
    int ring_fd = -1, bell_fd = -1;
    size_t their_capacity = 0;
    std::string why;
    if (same_host[q] && offer >> their_pid >> ring_fd >> bell_fd >> their_capacity) {
      out.capacity[q] = their_capacity;
      out.segment[q] =
          open_peer_file(their_pid, ring_fd, 2 * RingBuffer::footprint(their_capacity), why);
      if (out.segment[q])
        out.peer_bell[q] = open_peer_file(their_pid, bell_fd, sizeof(Doorbell), why);
      if (!out.peer_bell[q]) out.segment[q].reset();
    }
    if (!why.empty()) warn_fallback(me, q, why);
    send_text(data_fd[q], q, out.segment[q] ? str(pid, " ", bell.fd) : "", deadline, what(q));
  }
  for (int q = rank + 1; q < size; ++q) {  // 3. final (as the lower rank)
    std::istringstream answer(read_text(data_fd[q], q, deadline, what(q)));
    long their_pid = 0;
    int bell_fd = -1;
    std::string why;
    if (out.segment[q] && answer >> their_pid >> bell_fd)
      out.peer_bell[q] = open_peer_file(their_pid, bell_fd, sizeof(Doorbell), why);
    if (!out.peer_bell[q]) out.segment[q].reset();
    if (!why.empty()) warn_fallback(me, q, why);
    send_text(data_fd[q], q, out.segment[q] ? "ok" : "", deadline, what(q));
  }
  for (int q = 0; q < rank; ++q) {  // the final word of the lower ranks
    if (read_text(data_fd[q], q, deadline, what(q)) != "ok") {
      out.segment[q].reset();
      out.peer_bell[q].reset();
    }
  }
  return out;
}

}  // namespace rg::dist
