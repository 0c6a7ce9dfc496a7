// Set-up of the tcp backend (see tcp_group.h); the messages themselves are message_group's.
//
// 1. Each rank listens on a free port and publishes "address port host-identity" in the store.
// 2. Each rank connects twice (data, control) to every lower rank and accepts two connections
//    from every higher one; a hello names the connecting rank and the connection's role.
// 3. For each pair on the same host the lower rank creates a shared-memory segment holding
//    one ring per direction and sends its name, and that of its doorbell (a futex word that
//    peers ring when they move bytes, so an idle rank can sleep), over the data socket; the
//    higher rank maps them and answers with its own doorbell. The names are then unlinked
//    (the mappings stay), so nothing is left behind in /dev/shm whatever happens later.
//    Those pairs close their data socket.
#include "dist/tcp_group.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <new>
#include <sstream>

#include "dist/byte_stream.h"
#include "dist/message_group.h"
#include "dist/socket.h"

namespace rg::dist {
namespace {

constexpr uint32_t kHelloMagic = 0x52474831;  // "RGH1"

struct Hello {
  uint32_t magic = kHelloMagic;
  int32_t rank = 0;
  int32_t size = 0;
  int32_t role = 0;  // 0: data, 1: control
};

bool shm_enabled() {
  const char* s = std::getenv("RG_DIST_SHM");
  return !(s && std::string(s) == "0");
}

size_t shm_ring_bytes() {
  if (const char* s = std::getenv("RG_DIST_SHM_BYTES"); s && *s) return std::stoull(s);
  return 4 << 20;
}

struct Address {
  std::string ip;
  int port = 0;
  std::string host;
};

// A shared mapping, unmapped when the last stream using it goes.
std::shared_ptr<void> map_shared(int fd, size_t bytes, const std::string& what) {
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  RG_CHECK(p != MAP_FAILED, what, ": mmap of ", bytes, " bytes failed: ", std::strerror(errno));
  return std::shared_ptr<void>(p, [bytes](void* q) { munmap(q, bytes); });
}

void set_buffers(int fd) {
  int bytes = 4 << 20;
  setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &bytes, sizeof(bytes));
  setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &bytes, sizeof(bytes));
}

}  // namespace

std::shared_ptr<ProcessGroup> make_tcp_group(std::shared_ptr<Store> store, int rank, int size,
                                             Options options, const std::string& prefix) {
  RG_CHECK(size >= 1 && rank >= 0 && rank < size, "tcp: rank ", rank, " outside world of size ",
           size);
  const std::string me = str("rank ", rank, ": tcp");
  const auto deadline = Clock::now() + options.timeout;
  const std::string host = net::host_identity();

  // 1. Publish this rank's address; read everybody's.
  int listen_fd = net::listen_tcp("", 0, 2 * size + 8, me);
  std::string ip = "127.0.0.1";
  if (auto* tcp_store = dynamic_cast<TcpStore*>(store.get())) ip = tcp_store->local_address();
  store->set(str(prefix, "/addr/", rank), str(ip, " ", net::local_port(listen_fd), " ", host));
  std::vector<Address> peers(size);
  for (int q = 0; q < size; ++q) {
    if (q == rank) continue;
    std::string value;
    try {
      auto left = std::chrono::duration_cast<Milliseconds>(deadline - Clock::now());
      value = store->get(str(prefix, "/addr/", q), std::max(left, Milliseconds(0)));
    } catch (const Error& e) {
      ::close(listen_fd);
      RG_FAIL(me, ": rank ", q, " did not join within ", options.timeout.count() / 1000.0, " s (",
              e.what(), ")");
    }
    std::istringstream in(value);
    in >> peers[q].ip >> peers[q].port >> peers[q].host;
  }

  // 2. Connect to the lower ranks, accept the higher ones.
  std::vector<int> data_fd(size, -1), control_fd(size, -1);
  auto close_all = [&] {
    for (int fd : data_fd)
      if (fd >= 0) ::close(fd);
    for (int fd : control_fd)
      if (fd >= 0) ::close(fd);
    if (listen_fd >= 0) ::close(listen_fd);
  };
  try {
    for (int q = 0; q < rank; ++q) {
      for (int role = 0; role < 2; ++role) {
        int fd = net::connect_tcp(peers[q].ip, peers[q].port, deadline,
                                  str(me, ": connecting to rank ", q));
        (role == 0 ? data_fd : control_fd)[q] = fd;
        Hello hello{kHelloMagic, rank, size, role};
        net::write_all(fd, &hello, sizeof(hello), deadline, str(me, ": hello to rank ", q));
      }
    }
    for (int expected = 2 * (size - 1 - rank); expected > 0; --expected) {
      int fd = net::accept_tcp(listen_fd, deadline);
      if (fd < 0) {
        std::string missing;
        for (int q = rank + 1; q < size; ++q)
          if (control_fd[q] < 0 || data_fd[q] < 0) missing += str(missing.empty() ? "" : ", ", q);
        RG_FAIL(me, ": rank(s) ", missing, " did not connect within ",
                options.timeout.count() / 1000.0, " s");
      }
      Hello hello;
      net::read_all(fd, &hello, sizeof(hello), deadline, str(me, ": reading a hello"));
      RG_CHECK(hello.magic == kHelloMagic && hello.size == size && hello.rank > rank &&
                   hello.rank < size,
               me, ": unexpected connection (rank ", hello.rank, ", world size ", hello.size,
               "); is another job using the same MASTER_PORT?");
      (hello.role == 0 ? data_fd : control_fd)[hello.rank] = fd;
    }
  } catch (...) {
    close_all();
    throw;
  }
  ::close(listen_fd);
  listen_fd = -1;

  // 3. Shared memory between ranks on the same host: a ring pair per pair of ranks, and one
  // doorbell per rank that its peers ring when they move bytes.
  std::vector<PeerLink> links(size);
  std::vector<std::shared_ptr<void>> mappings(size), bells(size);
  std::vector<std::string> names(size);
  const size_t capacity = shm_ring_bytes();
  const size_t segment_bytes = 2 * RingBuffer::footprint(capacity);
  static std::atomic<int> segments_made{0};
  bool any_local = false;
  for (int q = 0; q < size; ++q) any_local |= q != rank && shm_enabled() && peers[q].host == host;
  std::shared_ptr<void> my_bell;
  std::string my_bell_name;
  auto create_segment = [&](const std::string& name, size_t bytes) {
    int fd = shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
    RG_CHECK(fd >= 0, me, ": shm_open ", name, ": ", std::strerror(errno));
    bool sized = ftruncate(fd, static_cast<off_t>(bytes)) == 0;
    std::shared_ptr<void> mapping;
    if (sized) mapping = map_shared(fd, bytes, me);
    ::close(fd);
    if (!sized) {
      shm_unlink(name.c_str());
      RG_FAIL(me, ": cannot size shared memory ", name, " to ", bytes, " bytes");
    }
    return mapping;
  };
  auto open_segment = [&](const std::string& name, size_t bytes, int q) {
    int fd = shm_open(name.c_str(), O_RDWR, 0600);
    RG_CHECK(fd >= 0, me, ": shm_open ", name, " from rank ", q, ": ", std::strerror(errno));
    auto mapping = map_shared(fd, bytes, me);
    ::close(fd);
    return mapping;
  };
  auto send_text = [&](int q, const std::string& text) {
    uint32_t len = text.size();
    net::write_all(data_fd[q], &len, 4, deadline, str(me, ": shared memory set-up with rank ", q));
    net::write_all(data_fd[q], text.data(), len, deadline, str(me, ": shared memory set-up"));
  };
  auto read_text = [&](int q) {
    uint32_t len = 0;
    net::read_all(data_fd[q], &len, 4, deadline, str(me, ": shared memory set-up with rank ", q));
    std::string text(len, '\0');
    net::read_all(data_fd[q], text.data(), len, deadline, str(me, ": shared memory set-up"));
    return text;
  };
  try {
    if (any_local) {
      my_bell_name = str("/rg-bell-", getpid(), "-", rank, "-", segments_made++);
      my_bell = create_segment(my_bell_name, sizeof(Doorbell));
      new (my_bell.get()) Doorbell();
    }
    for (int q = rank + 1; q < size; ++q) {  // lower rank of the pair: create and offer
      std::string name;
      if (shm_enabled() && peers[q].host == host) {
        name = str("/rg-", getpid(), "-", rank, "-", q, "-", segments_made++);
        mappings[q] = create_segment(name, segment_bytes);
        char* base = static_cast<char*>(mappings[q].get());
        RingBuffer::create(base, capacity);
        RingBuffer::create(base + RingBuffer::footprint(capacity), capacity);
        names[q] = name;
      }
      send_text(q, name);
      send_text(q, name.empty() ? "" : my_bell_name);
    }
    for (int q = 0; q < rank; ++q) {  // higher rank: map what was offered, answer with its bell
      std::string name = read_text(q), bell = read_text(q);
      if (!name.empty()) {
        mappings[q] = open_segment(name, segment_bytes, q);
        bells[q] = open_segment(bell, sizeof(Doorbell), q);
      }
      send_text(q, name.empty() ? "" : my_bell_name);
    }
    for (int q = rank + 1; q < size; ++q) {  // lower rank: map the answer, confirm
      std::string bell = read_text(q);
      if (!bell.empty()) bells[q] = open_segment(bell, sizeof(Doorbell), q);
      if (!names[q].empty()) shm_unlink(names[q].c_str());
      names[q].clear();
      send_text(q, "mapped");
    }
    for (int q = 0; q < rank; ++q) read_text(q);  // every peer has mapped this rank's bell
    if (!my_bell_name.empty()) shm_unlink(my_bell_name.c_str());
  } catch (...) {
    for (auto& name : names)
      if (!name.empty()) shm_unlink(name.c_str());
    if (!my_bell_name.empty()) shm_unlink(my_bell_name.c_str());
    close_all();
    throw;
  }

  for (int q = 0; q < size; ++q) {
    if (q == rank) continue;
    if (mappings[q]) {
      char* base = static_cast<char*>(mappings[q].get());
      auto* low_to_high = reinterpret_cast<RingBuffer*>(base);
      auto* high_to_low = reinterpret_cast<RingBuffer*>(base + RingBuffer::footprint(capacity));
      bool low = rank < q;
      // The stream keeps both the rings and the peer's bell mapped.
      auto keep = std::make_shared<std::pair<std::shared_ptr<void>, std::shared_ptr<void>>>(
          mappings[q], bells[q]);
      links[q].data =
          make_ring_stream(low ? low_to_high : high_to_low, low ? high_to_low : low_to_high,
                           static_cast<Doorbell*>(bells[q].get()), keep);
      ::close(data_fd[q]);
    } else {
      set_buffers(data_fd[q]);
      links[q].data = make_socket_stream(data_fd[q]);
    }
    links[q].control = make_socket_stream(control_fd[q]);
  }
  auto keep =
      std::make_shared<std::pair<std::shared_ptr<Store>, std::shared_ptr<void>>>(store, my_bell);
  return make_message_group("tcp", rank, size, options, std::move(links),
                            static_cast<Doorbell*>(my_bell.get()), keep);
}

}  // namespace rg::dist
