// The sim interpreter itself: CUDA ordering around barriers, shared memory, warp shuffles
// and votes, launch limits, and clear errors (never a hang) for broken synchronisation.
// These kernels are written in the portable dialect and compiled by g++, i.e. for sim.
#include <doctest/doctest.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "core/device_interface.h"
#include "kernels/cuda/multi_tensor.cuh"
#include "kernels/cuda/portability.cuh"

namespace {

using rg::sim::launch;
using rg::sim::LaunchConfig;

LaunchConfig config(const char* name, dim3 grid, dim3 block, size_t shared = 0) {
  LaunchConfig c;
  c.name = name;
  c.grid = grid;
  c.block = block;
  c.shared_bytes = shared;
  return c;
}

// Each thread writes its id, then (after the barrier) reads its neighbour's.
__global__ void rotate_through_shared(int* out) {
  __shared__ int buf[1024];
  unsigned n = blockDim.x, t = threadIdx.x;
  buf[t] = int(t + 1000 * blockIdx.x);
  __syncthreads();
  out[blockIdx.x * n + t] = buf[(t + 1) % n];
}

// Tree reduction in dynamic shared memory.
__global__ void block_sum(const float* in, float* out) {
  RG_DYNAMIC_SHARED(float, buf);
  unsigned t = threadIdx.x;
  buf[t] = in[blockIdx.x * blockDim.x + t];
  __syncthreads();
  for (unsigned s = blockDim.x / 2; s > 0; s /= 2) {
    if (t < s) buf[t] += buf[t + s];
    __syncthreads();
  }
  if (t == 0) out[blockIdx.x] = buf[0];
}

__global__ void half_barrier(int* out) {
  if (threadIdx.x < 16) __syncthreads();
  out[threadIdx.x] = 1;
}

// Fills `words` ints of dynamic shared memory, then each thread reads a word another wrote.
__global__ void touch_dynamic_shared(int* out, int words) {
  RG_DYNAMIC_SHARED(int, buf);
  for (int i = int(threadIdx.x); i < words; i += int(blockDim.x)) buf[i] = i;
  __syncthreads();
  out[threadIdx.x] = buf[words - 1 - int(threadIdx.x)];
}

__global__ void write_ids(int* out) {
  unsigned id = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
  out[blockIdx.x * blockDim.x * blockDim.y * blockDim.z + id] =
      int(threadIdx.x + 10 * threadIdx.y + 100 * threadIdx.z);
}

// Lane results of each warp op for a 64-thread block.
__global__ void warp_ops(int* out) {
  int lane = int(threadIdx.x % 32);
  int v = int(threadIdx.x);
  int* o = out + threadIdx.x * 8;
  o[0] = __shfl_xor_sync(0xffffffffu, v, 1);
  o[1] = __shfl_down_sync(0xffffffffu, v, 4);
  o[2] = __shfl_up_sync(0xffffffffu, v, 3);
  o[3] = __shfl_sync(0xffffffffu, v, 5);
  o[4] = __shfl_xor_sync(0xffffffffu, v, 8, 16);  // stays inside 16-lane segments
  o[5] = int(__ballot_sync(0xffffffffu, lane % 3 == 0));
  o[6] = __all_sync(0xffffffffu, v >= 0) + 2 * __any_sync(0xffffffffu, v == 40);
  int sum = v;
  for (int m = 16; m > 0; m /= 2) sum += __shfl_xor_sync(0xffffffffu, sum, m);
  o[7] = sum;
}

constexpr int kDivergentShuffleLine = __LINE__ + 3;
__global__ void divergent_shuffle(int* out) {
  int v = int(threadIdx.x);
  if (threadIdx.x < 16) v = __shfl_xor_sync(0xffffffffu, v, 1);
  out[threadIdx.x] = v;
}

// Threads 0..31 and 32..63 wait at different barriers (undefined on a GPU).
constexpr int kFirstBarrierLine = __LINE__ + 4;
__global__ void divergent_barriers(int* out) {
  unsigned t = threadIdx.x;
  if (t < 32)
    __syncthreads();
  else
    __syncthreads();
  out[t] = 1;
}

__global__ void half_warp_shuffle(int* out) {  // legal: the mask names only the active lanes
  int v = int(threadIdx.x);
  if (threadIdx.x < 16) v = __shfl_xor_sync(0x0000ffffu, v, 1);
  out[threadIdx.x] = v;
}

__global__ void throws_inside(int limit) {
  RG_CHECK(int(threadIdx.x) < limit, "kernel check: thread ", threadIdx.x, " over ", limit);
}

__global__ void atomic_count(float* total) { atomicAdd(total, 1.0f); }

}  // namespace

TEST_CASE("sim: code after __syncthreads sees every thread's write before it") {
  for (unsigned n : {1u, 31u, 32u, 33u, 256u, 1024u}) {
    std::vector<int> out(3 * n);
    launch(rotate_through_shared, config("rotate", 3, n), out.data());
    for (unsigned b = 0; b < 3; ++b)
      for (unsigned t = 0; t < n; ++t) CHECK(out[b * n + t] == int((t + 1) % n + 1000 * b));
  }
}

TEST_CASE("sim: block reduction in dynamic shared memory") {
  std::vector<float> in(4 * 256), out(4);
  for (size_t i = 0; i < in.size(); ++i) in[i] = float(i % 7);
  launch(block_sum, config("block_sum", 4, 256, 256 * sizeof(float)), in.data(), out.data());
  for (int b = 0; b < 4; ++b) {
    float want = 0;
    for (int i = 0; i < 256; ++i) want += in[b * 256 + i];
    CHECK(out[b] == want);
  }
}

TEST_CASE("sim: 3-d blocks map threadIdx like CUDA (x fastest)") {
  std::vector<int> out(2 * 4 * 3 * 2);
  launch(write_ids, config("write_ids", 2, dim3(4, 3, 2)), out.data());
  for (int b = 0; b < 2; ++b)
    for (int z = 0; z < 2; ++z)
      for (int y = 0; y < 3; ++y)
        for (int x = 0; x < 4; ++x)
          CHECK(out[b * 24 + x + 4 * (y + 3 * z)] == x + 10 * y + 100 * z);
}

TEST_CASE("sim: warp shuffles and votes follow CUDA semantics") {
  std::vector<int> out(64 * 8);
  launch(warp_ops, config("warp_ops", 1, 64), out.data());
  for (int t = 0; t < 64; ++t) {
    int lane = t % 32, warp = t / 32;
    const int* o = &out[t * 8];
    CHECK(o[0] == (t ^ 1));
    CHECK(o[1] == (lane + 4 < 32 ? t + 4 : t));
    CHECK(o[2] == (lane >= 3 ? t - 3 : t));
    CHECK(o[3] == warp * 32 + 5);
    CHECK(o[4] == warp * 32 + (lane ^ 8));
    unsigned ballot = 0;
    for (int l = 0; l < 32; l += 3) ballot |= 1u << l;
    CHECK(unsigned(o[5]) == ballot);
    CHECK(o[6] == 1 + (warp == 1 ? 2 : 0));
    CHECK(o[7] == 32 * 31 / 2 + warp * 32 * 32);
  }
}

TEST_CASE("sim: a shuffle whose mask names only the active lanes is fine") {
  std::vector<int> out(32);
  launch(half_warp_shuffle, config("half_warp_shuffle", 1, 32), out.data());
  for (int t = 0; t < 32; ++t) CHECK(out[t] == (t < 16 ? t ^ 1 : t));
}

TEST_CASE("sim: a barrier reached by part of the block throws naming the kernel") {
  std::vector<int> out(64);
  CHECK_THROWS_WITH_AS(launch(half_barrier, config("half_barrier", 1, 64), out.data()),
                       doctest::Contains("half_barrier"), rg::Error);
  // the interpreter is usable again afterwards
  launch(rotate_through_shared, config("rotate", 1, 64), out.data());
  CHECK(out[0] == 1);
}

TEST_CASE("sim: a full-warp shuffle reached by half the warp throws") {
  std::vector<int> out(32);
  CHECK_THROWS_WITH_AS(launch(divergent_shuffle, config("divergent_shuffle", 1, 32), out.data()),
                       doctest::Contains("divergent_shuffle"), rg::Error);
}

// The message of the error `launch` throws ("" when it does not throw).
template <typename F>
std::string error_of(F&& launch) {
  try {
    launch();
  } catch (const rg::Error& e) {
    return e.what();
  }
  return "";
}

// Each barrier and warp op carries the kernel's call site (rg::sim::CallSite), so errors
// name the kernel's lines in this file, compiled by g++ without line tables, and
// divergent barriers are told apart without them.
TEST_CASE("sim: sync errors name the kernel's lines, without line tables") {
  auto at = [](int line) { return "tests/kernels/test_interpreter.cpp:" + std::to_string(line); };
  std::vector<int> out(64);
  std::string shuffle =
      error_of([&] { launch(divergent_shuffle, config("divergent_shuffle", 1, 32), out.data()); });
  CHECK(shuffle.find(at(kDivergentShuffleLine)) != std::string::npos);
  std::string barriers = error_of(
      [&] { launch(divergent_barriers, config("divergent_barriers", 1, 64), out.data()); });
  CHECK(barriers.find("different __syncthreads() call sites") != std::string::npos);
  CHECK(barriers.find(at(kFirstBarrierLine)) != std::string::npos);
  CHECK(barriers.find(at(kFirstBarrierLine + 2)) != std::string::npos);
}

TEST_CASE("sim: launch limits throw naming the kernel") {
  std::vector<int> out(4096);
  CHECK_THROWS_WITH_AS(launch(write_ids, config("too_many_threads", 1, 1025), out.data()),
                       doctest::Contains("too_many_threads"), rg::Error);
  CHECK_THROWS_WITH_AS(
      launch(write_ids, config("too_many_threads_3d", 1, dim3(32, 32, 2)), out.data()),
      doctest::Contains("1024"), rg::Error);
  CHECK_THROWS_WITH_AS(
      launch(write_ids, config("too_much_shared", 1, 32, 48 * 1024 + 1), out.data()),
      doctest::Contains("too_much_shared"), rg::Error);
  CHECK_THROWS_AS(launch(write_ids, config("empty_grid", 0, 32), out.data()), rg::Error);
  rg::set_max_shared_bytes(96 * 1024);  // a raised limit (as with CUDA's opt-in) is honoured
  launch(write_ids, config("more_shared", 1, 32, 64 * 1024), out.data());
  rg::set_max_shared_bytes(48 * 1024);
}

TEST_CASE("sim: opt-in dynamic shared memory, per kernel, up to the device's 227 KiB") {
  const size_t optin = rg::sim::kMaxSharedBytesOptin;
  const int words = int(optin / sizeof(int));
  const void* entry = reinterpret_cast<const void*>(touch_dynamic_shared);
  std::vector<int> out(32, -1);
  CHECK(rg::sim::max_shared_bytes_optin() == 227 * 1024);
  CHECK(rg::sim::max_dynamic_shared(entry) == 48 * 1024);
  // Without the attribute a launch gets the default 48 KiB, as on CUDA.
  CHECK_THROWS_WITH_AS(
      launch(touch_dynamic_shared, config("no_attribute", 1, 32, optin), out.data(), words),
      doctest::Contains("cudaFuncSetAttribute"), rg::Error);
  LaunchConfig c = config("opt_in", 1, 32, optin);
  c.opt_in_shared = true;  // launch() sets the attribute
  launch(touch_dynamic_shared, c, out.data(), words);
  CHECK(out[0] == words - 1);
  CHECK(out[31] == words - 32);
  CHECK(rg::sim::max_dynamic_shared(entry) == optin);
  // The attribute stays with the kernel; other kernels keep the default.
  launch(touch_dynamic_shared, config("after_opt_in", 1, 32, optin), out.data(), words);
  CHECK(rg::sim::max_dynamic_shared(reinterpret_cast<const void*>(write_ids)) == 48 * 1024);
  c.shared_bytes = optin + 1;
  CHECK_THROWS_WITH_AS(launch(touch_dynamic_shared, c, out.data(), words),
                       doctest::Contains(std::to_string(optin).c_str()), rg::Error);
  CHECK_THROWS_WITH_AS(rg::sim::set_max_dynamic_shared(entry, optin + 1),
                       doctest::Contains("opt-in limit"), rg::Error);
  rg::sim::set_max_dynamic_shared(entry, 64 * 1024);  // an explicit, smaller attribute
  CHECK_THROWS_AS(
      launch(touch_dynamic_shared, config("lowered", 1, 32, 64 * 1024 + 4), out.data(), words),
      rg::Error);
  rg::sim::set_max_dynamic_shared(entry, optin);
}

TEST_CASE("sim: a kernel promising no sync that calls __syncthreads throws") {
  std::vector<int> out(64);
  LaunchConfig c = config("no_sync_promise", 1, 64);
  c.uses_sync = false;
  CHECK_THROWS_WITH_AS(launch(rotate_through_shared, c, out.data()), doctest::Contains("uses_sync"),
                       rg::Error);
}

TEST_CASE("sim: an exception thrown by a kernel reaches the launcher") {
  CHECK_THROWS_WITH_AS(launch(throws_inside, config("throws_inside", 2, 64), 40),
                       doctest::Contains("over 40"), rg::Error);
  LaunchConfig c = config("throws_inside_plain", 2, 64);
  c.uses_sync = false;
  CHECK_THROWS_AS(launch(throws_inside, c, 40), rg::Error);
  launch(throws_inside, config("throws_inside", 2, 64), 64);  // all within the limit
}

TEST_CASE("sim: host threads may launch at the same time") {
  std::atomic<int> failures{0};
  float total = 0;
  std::vector<std::thread> threads;
  for (int r = 0; r < 4; ++r)
    threads.emplace_back([&, r] {
      std::vector<int> out(4 * 128);
      for (int it = 0; it < 20; ++it) {
        launch(rotate_through_shared, config("rotate", 4, 128), out.data());
        for (unsigned b = 0; b < 4; ++b)
          for (unsigned t = 0; t < 128; ++t)
            if (out[b * 128 + t] != int((t + 1) % 128 + 1000 * b)) failures++;
        LaunchConfig c = config("atomic_count", 2, 64);
        c.uses_sync = false;
        launch(atomic_count, c, &total);
      }
      (void)r;
    });
  for (auto& t : threads) t.join();
  CHECK(failures == 0);
  CHECK(total == 4 * 20 * 128);
}

TEST_CASE(
    "multi_tensor_apply batches: at most 64 tensors and 2048 blocks, every chunk once, in order") {
  using namespace rg::sim;
  std::vector<std::array<void*, 2>> ptrs;
  std::vector<int64_t> numels;
  for (int t = 0; t < 80; ++t) {  // fake addresses: only the plan is checked, nothing is read
    ptrs.push_back({reinterpret_cast<void*>(uintptr_t(64 * (t + 1))),
                    reinterpret_cast<void*>(uintptr_t(64 * (t + 1) + (t == 5 ? 4 : 0)))});
    numels.push_back(t == 3 ? 4100 * kChunk + 5 : t == 9 ? 0 : 1 + 1000 * t);
  }
  std::vector<std::pair<int64_t, int64_t>> seen;  // (first_slot + chunk, numel), in launch order
  int launches = 0;
  for_each_batch<2>(ptrs, numels, 4, [&](const TensorBatch<2>& b, int blocks) {
    ++launches;
    CHECK(blocks <= kBatchBlocks);
    for (int k = 0; k < blocks; ++k) {
      const int t = b.block_tensor[k];
      CHECK(t < kBatchTensors);
      CHECK(b.head[t] == (b.ptr[1][t] != ptrs[5][1] ? 0 : -1));  // tensor 5: 0 vs 3
      CHECK(int64_t(b.block_chunk[k]) * kChunk < b.numel[t]);
      seen.emplace_back(b.first_slot[t] + b.block_chunk[k], b.numel[t]);
    }
  });
  int64_t slots = 0;
  for (int64_t n : numels) slots += (n + kChunk - 1) / kChunk;
  REQUIRE(int64_t(seen.size()) == slots);
  for (size_t i = 0; i < seen.size(); ++i) CHECK(seen[i].first == int64_t(i));
  CHECK(launches == 4);  // 4101 chunks of tensor 3: 3 launches; 78 other tensors: 64 per launch
}

TEST_CASE("multi_tensor_apply: one head per tensor, the elements before every pointer's boundary") {
  using namespace rg::sim;
  auto at = [](uintptr_t a) { return reinterpret_cast<void*>(a); };
  CHECK(common_head<2>({at(0x1000), at(0x2000)}, 4) == 0);
  CHECK(common_head<2>({at(0x1004), at(0x2004)}, 4) == 3);   // 12 bytes to the boundary
  CHECK(common_head<2>({at(0x1004), at(0x2008)}, 4) == -1);  // 3 vs 2: no common one
  CHECK(common_head<1>({at(0x1002)}, 4) == -1);              // not float-aligned
  CHECK(common_head<1>({at(0x1008)}, 8) == 1);
  CHECK(common_head<1>({at(0x100e)}, 2) == 1);
}

TEST_CASE("cuda: kernel tests run only with a GPU") {
  if (!rg::device_available(rg::DeviceType::cuda))
    MESSAGE(
        "cuda kernel tests SKIPPED: no CUDA GPU on this machine (or ringgrad built without "
        "CUDA); every kernel was checked on sim only");
}
