// Threads backend: for each ordered pair of ranks a data ring (messages) and a small control
// ring (failure reports), all in this process's heap; each rank's doorbell wakes it when a
// peer moved bytes. The message transport (message_transport.cpp) does the rest.
#include "dist/threads_group.h"

#include <mutex>
#include <new>
#include <thread>

#include "dist/message_transport.h"

namespace rg::dist {
namespace {

constexpr size_t kDataRingBytes = 1 << 20;
constexpr size_t kControlRingBytes = 16 << 10;

// Frees what aligned_bytes allocated.
struct AlignedDelete {
  void operator()(char* p) const { ::operator delete[](p, std::align_val_t(kRingAlignment)); }
};

std::unique_ptr<char[], AlignedDelete> aligned_bytes(size_t n) {
  return std::unique_ptr<char[], AlignedDelete>(
      static_cast<char*>(::operator new[](n, std::align_val_t(kRingAlignment))));
}

// The rings of one world; every stream holds it alive.
struct World {
  explicit World(int n) : size(n), doorbells(new Doorbell[n]) {
    const size_t pair_bytes =
        RingBuffer::footprint(kDataRingBytes) + RingBuffer::footprint(kControlRingBytes);
    memory = aligned_bytes(pair_bytes * n * n);
    for (int src = 0; src < n; ++src) {
      for (int dst = 0; dst < n; ++dst) {
        char* at = memory.get() + pair_bytes * (src * n + dst);
        data.push_back(RingBuffer::create(at, kDataRingBytes));
        control.push_back(
            RingBuffer::create(at + RingBuffer::footprint(kDataRingBytes), kControlRingBytes));
      }
    }
  }
  int size;
  std::unique_ptr<char[], AlignedDelete> memory;
  std::vector<RingBuffer*> data, control;  // [src * size + dst]
  std::unique_ptr<Doorbell[]> doorbells;   // [rank]
};

}  // namespace

std::vector<std::shared_ptr<ProcessGroup>> make_thread_groups(int size, Options options,
                                                              std::vector<int> host_of) {
  RG_CHECK(size >= 1, "make_thread_groups: world size must be >= 1, got ", size);
  RG_CHECK(host_of.empty() || static_cast<int>(host_of.size()) == size,
           "make_thread_groups: ", host_of.size(), " host indices for a world of size ", size);
  auto world = std::make_shared<World>(size);
  std::vector<std::shared_ptr<ProcessGroup>> groups;
  for (int r = 0; r < size; ++r) {
    std::vector<PeerLink> links(size);
    for (int p = 0; p < size; ++p) {
      if (p == r) continue;
      Doorbell* bell = &world->doorbells[p];
      links[p].data =
          make_ring_stream(world->data[r * size + p], world->data[p * size + r], bell, world);
      links[p].control =
          make_ring_stream(world->control[r * size + p], world->control[p * size + r], bell, world);
    }
    groups.push_back(make_message_group("threads", r, size, options, std::move(links),
                                        &world->doorbells[r], world, host_of));
  }
  return groups;
}

void run_threads(int size, const std::function<void(ProcessGroup&)>& fn, Options options,
                 std::vector<int> host_of) {
  auto groups = make_thread_groups(size, options, std::move(host_of));
  std::mutex mu;
  int failed_rank = -1;
  std::string failure;
  std::vector<std::thread> threads;
  for (int r = 0; r < size; ++r) {
    threads.emplace_back([&, r, group = std::move(groups[r])]() mutable {
      try {
        fn(*group);
      } catch (const std::exception& e) {
        {
          std::lock_guard lock(mu);
          if (failed_rank < 0) {
            failed_rank = r;
            failure = e.what();
          }
        }
        group->abort(e.what());
      }
      group.reset();  // gone: peers still waiting on this rank fail now
    });
  }
  for (auto& t : threads) t.join();
  RG_CHECK(failed_rank < 0, "rank ", failed_rank, ": ", failure);
}

}  // namespace rg::dist
