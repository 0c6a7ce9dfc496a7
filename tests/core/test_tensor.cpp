#include <doctest/doctest.h>

#include <atomic>
#include <thread>

#include "ringgrad.h"

using namespace rg;

TEST_CASE("views share storage and see each other's writes") {
  Tensor x = arange(0, 12, 1).reshape({3, 4});
  Tensor t = x.t();
  CHECK(t.shape() == Shape{4, 3});
  CHECK_FALSE(t.is_contiguous());
  CHECK(t.storage() == x.storage());
  NoGradGuard g;
  x.select(0, 1).fill_(7);
  CHECK(t.select(1, 1).to_vector<float>() == std::vector<float>{7, 7, 7, 7});
  CHECK(x.narrow(1, 1, 2).contiguous().to_vector<float>() == std::vector<float>{1, 2, 7, 7, 9, 10});
  CHECK(x.slice(1, 0, 4, 2).to_vector<float>() == std::vector<float>{0, 2, 7, 7, 8, 10});
}

TEST_CASE("reshape views when strides allow and copies otherwise") {
  Tensor x = arange(0, 24, 1).reshape({2, 3, 4});
  Tensor v = x.reshape({6, 4});
  CHECK(v.storage() == x.storage());
  Tensor p = x.permute({2, 0, 1});
  CHECK(p.shape() == Shape{4, 2, 3});
  Tensor r = p.reshape({24});
  CHECK(r.storage() != x.storage());
  CHECK(r.to_vector<float>()[1] == 4);  // p[0,0,1] = x[0,1,0]
  CHECK_THROWS_WITH_AS(p.view({24}), doctest::Contains("view: shape [24] is not compatible"),
                       Error);
  CHECK(x.reshape({-1, 2}).shape() == Shape{12, 2});
  CHECK_THROWS_WITH_AS(x.reshape({5, -1}), doctest::Contains("reshape: shape [5,-1] is invalid"),
                       Error);
}

TEST_CASE("expand uses stride 0 and broadcasting follows NumPy") {
  Tensor a = tensor(std::vector<float>{1, 2, 3}, {3, 1});
  Tensor b = tensor(std::vector<float>{10, 20}, {2});
  Tensor c = a + b;
  CHECK(c.shape() == Shape{3, 2});
  CHECK(c.to_vector<float>() == std::vector<float>{11, 21, 12, 22, 13, 23});
  CHECK(a.expand({3, 4}).strides()[1] == 0);
  CHECK_THROWS_WITH_AS(add(ones({2, 3}), ones({4})),
                       doctest::Contains("add: shapes [2,3] and [4] cannot be broadcast"), Error);
}

TEST_CASE("dtype promotion follows PyTorch for mixed inputs") {
  CHECK((ones({2}, kInt32) + ones({2}, kInt64)).dtype() == kInt64);
  CHECK((ones({2}, kInt64) + ones({2}, kFloat32)).dtype() == kFloat32);
  CHECK((ones({2}, kBFloat16) + ones({2}, kFloat32)).dtype() == kFloat32);
  CHECK((ones({2}, kFloat32) + ones({2}, kFloat64)).dtype() == kFloat64);
  CHECK((ones({2}, kInt64) / ones({2}, kInt64)).dtype() == kFloat32);
  CHECK(gt(ones({2}), zeros({2})).dtype() == kBool);
  CHECK((ones({2}, kInt64) * 2.5).dtype() == kFloat32);
  CHECK((ones({2}, kInt64) * 2).dtype() == kInt64);
}

TEST_CASE("bf16 round-trips through f32 with round-to-nearest-even") {
  Tensor x = tensor(std::vector<float>{1.0f, 1.00390625f, 3.14159f, -2.5e-3f});
  Tensor y = x.to(kBFloat16).to(kFloat32);
  auto v = y.to_vector<float>();
  CHECK(v[0] == 1.0f);
  CHECK(v[1] == 1.0f);  // exactly halfway: ties to even
  CHECK(v[2] == doctest::Approx(3.140625f));
  CHECK(std::abs(v[3] + 2.5e-3f) < 1e-5f);
}

TEST_CASE("printing looks like PyTorch's repr") {
  Tensor x = tensor(std::vector<float>{1, 2, 3, 4}, {2, 2});
  CHECK(repr(x) == "tensor([[1.0000, 2.0000],\n        [3.0000, 4.0000]])");
  CHECK(repr(arange(3)) == "tensor([0, 1, 2], dtype=int64)");
  std::string big = repr(zeros({2000}));
  CHECK(big.find("...") != std::string::npos);
  CHECK(big.find("shape=[2000]") != std::string::npos);
}

TEST_CASE("caching allocator reuses freed blocks") {
  auto before = memory_stats(kCPU);
  { Tensor a = empty({1 << 20}); }
  auto mid = memory_stats(kCPU);
  { Tensor b = empty({1 << 20}); }
  auto after = memory_stats(kCPU);
  CHECK(after.system_allocs == mid.system_allocs);
  CHECK(mid.peak_allocated >= before.allocated + (4u << 20));
  CHECK(after.allocated == before.allocated);
}

TEST_CASE("Philox random numbers depend only on seed and position") {
  manual_seed(42);
  Tensor a = randn({1000});
  set_num_threads(1);
  manual_seed(42);
  Tensor b = randn({1000});
  set_num_threads(2);
  CHECK(equal(a, b));
  Tensor m = mean(a);
  CHECK(std::abs(m.item()) < 0.1);
  Tensor u = rand({10000});
  CHECK(amin(u).item() >= 0.0);
  CHECK(amax(u).item() < 1.0);
  manual_seed(42);
  Tensor first = randn({400});
  CHECK(equal(first, a.narrow(0, 0, 400)));
}

TEST_CASE("invalid calls throw rg::Error naming the op and the shapes") {
  CHECK_THROWS_WITH_AS(matmul(ones({2, 3}), ones({4, 5})),
                       "matmul: shapes [2,3] and [4,5] cannot be multiplied (3 != 4)", Error);
  CHECK_THROWS_WITH_AS(ones({2, 3}).transpose(0, 2),
                       doctest::Contains("transpose: dim 2 out of range"), Error);
  CHECK_THROWS_WITH_AS(ones({3}).select(0, 5), doctest::Contains("select: index 5 out of range"),
                       Error);
  CHECK_THROWS_WITH_AS(matmul(ones({2, 2}), ones({2, 2}, kFloat64)),
                       doctest::Contains("matmul: expected both inputs to have the same dtype"),
                       Error);
  CHECK_THROWS_WITH_AS(ones({2}).item(),
                       doctest::Contains("item: tensor of shape [2] has 2 elements"), Error);
  CHECK_THROWS_WITH_AS(Device("tpu"), doctest::Contains("unknown device 'tpu'"), Error);
  CHECK_THROWS_WITH_AS(embedding(ones({4, 2}), tensor(std::vector<int64_t>{1, 9})),
                       doctest::Contains("embedding"), Error);
  CHECK_THROWS_WITH_AS(
      cross_entropy(ones({3, 4}), tensor(std::vector<int64_t>{1, 2})),
      doctest::Contains("cross_entropy: logits of shape [3,4] need targets of shape [3]"), Error);
}

TEST_CASE("set_thread_num_threads_cap caps parallel_for on the calling thread only") {
  set_num_threads(2);
  auto chunks_here = [] {
    std::atomic<int> chunks{0};
    parallel_for(1 << 16, 1, [&](int64_t, int64_t) { chunks.fetch_add(1); });
    return chunks.load();
  };
  CHECK(chunks_here() == 2);
  int capped_chunks = 0, uncapped_chunks = 0;  // checked here: doctest asserts stay on this thread
  std::thread capped([&] {
    set_thread_num_threads_cap(1);
    capped_chunks = chunks_here();
    set_thread_num_threads_cap(0);
    uncapped_chunks = chunks_here();
    set_thread_num_threads_cap(1);
  });
  capped.join();
  CHECK(capped_chunks == 1);
  CHECK(uncapped_chunks == 2);
  CHECK(chunks_here() == 2);  // the cap of the other thread does not apply here
  CHECK_THROWS_WITH(set_thread_num_threads_cap(-1), doctest::Contains("expected n >= 0"));
}
