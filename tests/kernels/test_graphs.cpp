// Graph capture and replay on sim (kernels/cuda/graph.h): a captured computation replays to
// eager's bits, at the addresses captured, with no kernel launched by the host; memory freed
// during the capture stays the graph's; work that needs the host is refused while capturing.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>

#include "kernels/cuda/caching_allocator.h"
#include "kernels/cuda/graph.h"
#include "kernels/sim/check/check.h"
#include "kernels/sim/stream_queue.h"
#include "ringgrad.h"
#include "tests/error_of.h"

using namespace rg;
using namespace rg::test;

namespace {

const Device kSim(DeviceType::sim);

// A small network's worth of work: GEMMs, elementwise ops, a reduction.
Tensor compute(const Tensor& x, const Tensor& w, const Tensor& b) {
  Tensor h = relu(add(matmul(x, w), b));
  return sum(mul(h, h));
}

std::vector<float> bits(const Tensor& t) { return t.to(kCPU).to_vector<float>(); }

bool same_bits(const Tensor& a, const Tensor& b) {
  std::vector<float> x = bits(a), y = bits(b);
  return x.size() == y.size() && std::memcmp(x.data(), y.data(), x.size() * sizeof(float)) == 0;
}

Tensor input(uint64_t seed, const Shape& shape, Device device = kSim) {
  Generator gen{seed, 0};
  return randn(shape, DType::f32, device, &gen);
}

}  // namespace

// A capture of compute() on `device` replays to eager's result, at the captured address,
// also after new values are copied into the captured input. On sim the replay also equals
// eager bit for bit and is the kernels launched plus the GEMM; on cuda (cuBLAS may pick
// another algorithm under capture) it equals eager to f32 rounding.
static void replay_equals_eager(Device device) {
  const bool sim = device.type == DeviceType::sim;
  auto same = [&](const Tensor& a, const Tensor& b) {
    if (sim) return same_bits(a, b);
    const float x = bits(a).at(0), y = bits(b).at(0);
    return std::abs(x - y) <= 1e-5f * std::abs(y);
  };
  Tensor x = input(1, {16, 32}, device), w = input(2, {32, 24}, device), b = input(3, {24}, device);
  const Tensor eager = compute(x, w, b);
  gpu::Graph graph;
  Tensor out;
  const uint64_t launches_before = sim::launches();
  {
    gpu::GraphCapture capture(graph, device);
    out = compute(x, w, b);
  }
  CHECK(graph.captured());
  if (sim) {
    const uint64_t launched = sim::launches() - launches_before;
    CHECK(launched > 0);
    // the kernels and the GEMM (sim-check also records the pool's allocations and frees)
    if (sim::check::instrumented())
      CHECK(graph.recorded_work() > launched + 1);
    else
      CHECK(graph.recorded_work() == launched + 1);
  }
  graph.replay();
  CHECK(same(out, eager));
  // New values into the captured input (a device copy), then replay: eager's on the new x.
  Tensor x2 = input(4, {16, 32}, device);
  x.copy_(x2);
  const Tensor eager2 = compute(x2, w, b);
  const void* out_address = out.data_ptr();
  graph.replay();
  CHECK(out.data_ptr() == out_address);
  CHECK(same(out, eager2));
  CHECK_FALSE(same(out, eager));
}

TEST_CASE("sim graph: a replay equals eager bit for bit, also after the inputs change") {
  replay_equals_eager(kSim);
}

// bench/gpu_check.sh's graph step on a GPU (skipped without one; -tc='cuda graph:*').
TEST_CASE("cuda graph: a replay equals eager, also after the inputs change" *
          doctest::skip(!device_available(DeviceType::cuda))) {
  replay_equals_eager(Device(DeviceType::cuda));
}

TEST_CASE("sim graph: a replay launches no kernel from the host and allocates nothing") {
  Tensor x = input(5, {8, 8}), w = input(6, {8, 8}), b = input(7, {8});
  gpu::Graph graph;
  Tensor out;
  {
    gpu::GraphCapture capture(graph, kSim);
    out = compute(x, w, b);
  }
  graph.replay();  // the first replay, as the step after capture
  const uint64_t launches = sim::launches(), replays = gpu::graph_replays();
  const AllocatorStats before = memory_stats(kSim);
  for (int i = 0; i < 3; ++i) graph.replay();
  const AllocatorStats after = memory_stats(kSim);
  CHECK(sim::launches() == launches);
  CHECK(gpu::graph_replays() == replays + 3);
  CHECK(after.allocated == before.allocated);
  CHECK(after.system_allocs == before.system_allocs);
}

TEST_CASE("sim graph: blocks freed during capture stay in the graph's pool") {
  Tensor x = input(8, {64, 64}), w = input(9, {64, 64}), b = input(10, {64});
  auto graph = std::make_unique<gpu::Graph>();
  const void* intermediate = nullptr;
  Tensor out;
  {
    gpu::GraphCapture capture(*graph, kSim);
    Tensor h = matmul(x, w);  // freed at the end of the scope, during the capture
    intermediate = h.data_ptr();
    out = sum(h);
  }
  // An eager allocation of the same size does not get the intermediate's block: the replay
  // writes there.
  Tensor other = empty({64, 64}, DType::f32, kSim);
  CHECK(other.data_ptr() != intermediate);
  gpu::synchronize(gpu::compute_stream(kSim));
  const Tensor eager = sum(matmul(x, w));
  graph->replay();
  CHECK(same_bits(out, eager));
  // empty_cache keeps the pool's segments (a replay writes there); destroying the graph hands
  // them to the general pool, and `out`'s segment, still in use, stays until `out` is freed.
  const size_t reserved_with_graph = memory_stats(kSim).reserved;
  empty_cache(kSim);
  const size_t after_empty = memory_stats(kSim).reserved;
  CHECK(after_empty > 0);
  CHECK(after_empty <= reserved_with_graph);
  graph.reset();
  empty_cache(kSim);
  CHECK(memory_stats(kSim).reserved <= after_empty);
  // A block of the graph still live (out) joins the general free lists when freed.
  const size_t allocated = memory_stats(kSim).allocated;
  const size_t reserved = memory_stats(kSim).reserved;
  out = Tensor();
  other = Tensor();
  CHECK(memory_stats(kSim).allocated < allocated);
  empty_cache(kSim);
  CHECK(memory_stats(kSim).reserved < reserved);
}

TEST_CASE("sim graph: work that needs the host is refused while capturing") {
  Tensor x = input(11, {4, 4});
  const std::string capturing = "is not allowed while stream compute of sim:0 is capturing a graph";
  auto refused = [&](const char* operation, auto work) {
    gpu::Graph graph;
    std::string message;
    try {
      gpu::GraphCapture capture(graph, kSim);
      Tensor y = mul(x, x);
      work(y);
    } catch (const Error& e) {
      message = e.what();
    }
    CAPTURE(operation);
    CAPTURE(message);
    CHECK(message.find(capturing) != std::string::npos);
    CHECK(message.find(operation) != std::string::npos);
    CHECK_FALSE(graph.captured());  // the error ended the capture and dropped it
    CHECK_FALSE(gpu::is_capturing(kSim));
  };
  refused("device-to-host copy", [](const Tensor& y) { (void)sum(y).item(); });
  refused("device-to-host copy", [](const Tensor& y) { (void)y.to(kCPU); });
  refused("host-to-device copy", [](const Tensor&) {
    (void)tensor(std::vector<double>{1.0, 2.0}).to(kSim);
  });
  refused("stream synchronize", [](const Tensor&) { gpu::synchronize(gpu::compute_stream(kSim)); });
  refused("device synchronize", [](const Tensor&) { synchronize(kSim); });
  refused("event synchronize", [](const Tensor&) {
    gpu::Event e(kSim);
    e.record(gpu::compute_stream(kSim));
    e.synchronize();
  });
  refused("empty_cache", [](const Tensor&) { empty_cache(kSim); });
  // After the refusals, eager work runs at once again.
  CHECK(mul(x, x).to(kCPU).numel() == 16);
}

TEST_CASE("sim graph: misuse is an rg::Error naming the call") {
  gpu::Graph graph;
  CHECK(error_of([&] { graph.replay(); }).find("Graph::replay: nothing captured") !=
        std::string::npos);
  CHECK(error_of([&] { graph.capture_end(); }).find("not capturing") != std::string::npos);
  graph.capture_begin(kSim);
  gpu::Graph second;
  CHECK(error_of([&] { second.capture_begin(kSim); }).find("already capturing") !=
        std::string::npos);
  graph.capture_end();
  CHECK(error_of([&] { graph.capture_begin(kSim); }).find("already captured") != std::string::npos);
  CHECK(error_of([&] {
          gpu::Graph g;
          g.capture_begin(kCPU);
        }).find("has no streams") != std::string::npos);
}

TEST_CASE("caching allocator: a graph pool's blocks return to it only, until release_pool") {
  gpu::RawMemory raw;
  raw.allocate = [](size_t n, int) { return std::malloc(n); };
  raw.release = [](void* p, int) { std::free(p); };
  raw.total = [](int) { return size_t(1) << 30; };
  gpu::CachingAllocator a("test", raw, 0);
  const size_t segment = gpu::kSmallSegment;  // a small request's segment
  void* stream = reinterpret_cast<void*>(1);
  void* general = a.allocate(1000, stream);
  a.deallocate(general);  // cached in the general free list
  a.begin_pool(stream, 7);
  void* first = a.allocate(1000, stream);
  CHECK(first != general);  // the pool does not take the general list's blocks
  a.deallocate(first);
  void* reused = a.allocate(1000, stream);
  CHECK(reused == first);  // but reuses its own
  void* live = a.allocate(1000, stream);
  a.deallocate(reused);
  a.end_pool(stream);
  void* outside = a.allocate(1000, stream);
  CHECK(outside == general);  // the pool's freed block stays the pool's
  CHECK(a.pool_reserved(7) == segment);
  a.empty_cache();
  CHECK(a.pool_reserved(7) == segment);  // empty_cache keeps it
  const size_t reserved = a.stats().reserved;
  CHECK(reserved == 2 * segment);
  a.release_pool(7);  // its segment still holds `live`: it joins the general pool
  CHECK(a.pool_reserved(7) == 0);
  CHECK(a.stats().reserved == reserved);
  a.deallocate(live);  // now a whole free segment of the general pool
  a.empty_cache();
  CHECK(a.stats().reserved == segment);  // only `outside`'s segment is left
  // A pool whose blocks are all free goes back to the system at release_pool.
  a.begin_pool(stream, 8);
  a.deallocate(a.allocate(5000, stream));
  a.end_pool(stream);
  CHECK(a.pool_reserved(8) == segment);
  a.release_pool(8);
  CHECK(a.stats().reserved == segment);
  a.deallocate(outside);
  a.empty_cache();  // every block back to the system (no leak under ASan)
  CHECK(a.stats().reserved == 0);
}

TEST_CASE("sim graph: a bad index inside any replay is reported, not only the first") {
  // The kernels' device-error slots (kernels/cuda/device_errors.h) are the graph's: each
  // replay arms them again for the next synchronization.
  Tensor weight = input(12, {4, 3});
  Tensor ids = tensor(std::vector<int64_t>{0, 1, 2, 3, 1}).to(kSim);
  (void)embedding(weight, ids).to(kCPU);  // eager first: nothing pending
  gpu::Graph graph;
  Tensor out;
  {
    gpu::GraphCapture capture(graph, kSim);
    out = embedding(weight, ids);
  }
  graph.replay();
  synchronize(kSim);  // the first replay's slot: no error
  for (int replay = 2; replay <= 3; ++replay) {
    CAPTURE(replay);
    ids.copy_(tensor(std::vector<int64_t>{0, 1, 2, 3, 1}).to(kSim));
    graph.replay();
    CHECK_NOTHROW(synchronize(kSim));
    ids.copy_(tensor(std::vector<int64_t>{0, 7, 2, 3, 1}).to(kSim));
    graph.replay();
    CHECK(error_of([] { synchronize(kSim); }) ==
          "embedding: index 7 out of range for vocab size 4");
  }
  CHECK_NOTHROW(synchronize(kSim));  // reported once
}

TEST_CASE("sim graph: a capture can claim device-error slots before any eager one") {
  // The ring of slots is made before the capture begins (a synchronous copy zeroes it).
  const Device fresh(DeviceType::sim, 7);
  Generator gen{13, 0};
  Tensor weight = randn({4, 3}, DType::f32, fresh, &gen);
  Tensor ids = tensor(std::vector<int64_t>{0, 9}).to(fresh);
  gpu::Graph graph;
  Tensor out;
  {
    gpu::GraphCapture capture(graph, fresh);
    out = embedding(weight, ids);
  }
  graph.replay();
  CHECK(error_of([&] { synchronize(fresh); }) ==
        "embedding: index 9 out of range for vocab size 4");
}
