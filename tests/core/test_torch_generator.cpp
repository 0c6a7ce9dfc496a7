// TorchGenerator (core/torch_generator.h) and its MT19937 engine. The engine is checked against
// the standard's known answer (the 10000th output of a default-seeded mt19937 is 4123659995,
// [rand.predef]) and against std::mt19937 for other seeds. The distributions are checked
// against streams recorded from PyTorch 2.15 (CPU wheel, x86-64): the numbers below were
// printed by torch after torch.manual_seed(seed) (float64 with repr, float32 as tolist()).
#include <doctest/doctest.h>

#include <cstdint>
#include <random>
#include <vector>

#include "core/error.h"
#include "core/torch_generator.h"

using rg::TorchGenerator;

TEST_CASE("MT19937's 10000th output from the default seed is the standard's 4123659995") {
  rg::Mt19937 engine;
  uint32_t value = 0;
  for (int i = 0; i < 10000; ++i) value = engine();
  CHECK(value == 4123659995u);
}

TEST_CASE("MT19937 equals std::mt19937 for several seeds, across twists") {
  for (uint32_t seed : {0u, 1u, 42u, 0xffffffffu}) {
    rg::Mt19937 ours(seed);
    std::mt19937 reference(seed);
    for (int i = 0; i < 2000; ++i) REQUIRE(ours() == reference());
  }
}

TEST_CASE("random64 joins two draws, the first high; a seed keeps its low 32 bits") {
  TorchGenerator a(7), b(7);
  uint64_t high = b.random(), low = b.random();
  CHECK(a.random64() == ((high << 32) | low));
  TorchGenerator wide(7 + (uint64_t{1} << 40));
  TorchGenerator narrow(7);
  CHECK(wide.random() == narrow.random());
  CHECK(wide.initial_seed() == 7 + (uint64_t{1} << 40));
}

TEST_CASE("uniform equals PyTorch's rand for float32 and float64") {
  TorchGenerator g(0);
  float f[4];
  g.uniform(f, 4, 0.0, 1.0);
  const float want32[] = {0.49625658988952637f, 0.7682217955589294f, 0.08847743272781372f,
                          0.13203048706054688f};
  for (int i = 0; i < 4; ++i) CHECK(f[i] == want32[i]);
  double d[3];
  g.uniform(d, 3, 0.0, 1.0);
  const double want64[] = {0.45938294312745087, 0.9207476841219603, 0.6450241201227648};
  for (int i = 0; i < 3; ++i) CHECK(d[i] == want64[i]);
  TorchGenerator h(0);
  h.uniform(d, 3, -0.3, 0.7);  // uniform_(-0.3, 0.7): fma(x, to - from, from)
  const double shifted[] = {0.6700530018065531, 0.40781986439978796, 0.15938294312745088};
  for (int i = 0; i < 3; ++i) CHECK(d[i] == shifted[i]);
}

TEST_CASE("small normals come in cached pairs; manual_seed clears the cache") {
  TorchGenerator g(0);
  double d[3], next;
  g.normal(d, 3, 0.0, 1.0, true);
  g.normal(&next, 1, 0.0, 1.0, true);  // the second of the second pair, kept by the generator
  const double want[] = {1.5409961082440433, -0.2934289057609464, -2.1787893820745574};
  for (int i = 0; i < 3; ++i) CHECK(d[i] == want[i]);
  CHECK(next == 0.5684312772806678);
  g.manual_seed(0);
  double first;
  g.normal(&first, 1, 0.0, 1.0, true);
  CHECK(first == want[0]);
}

TEST_CASE("16 or more normals: Box-Muller in blocks of 16, a ragged tail redrawn") {
  TorchGenerator g(0);
  std::vector<double> d(17);
  g.normal(d.data(), 17, 0.0, 1.0, true);
  const double want[] = {-2.310411800234176,  -0.6332746088675096,   -1.2609246557194385,
                         -0.726951062065411,  -0.019964750907762653, 0.2102998901016947,
                         0.17718935139366584, -0.830510051008449,    0.23871805816817063,
                         -0.2426793824588577, -0.7730112772958181,   -1.5951814880783068,
                         -0.6870036940435463, 1.4880743158106724,    -0.4484158047114511,
                         -0.8910030351707375, 0.6748575435940039};
  for (int i = 0; i < 17; ++i) CHECK(d[i] == want[i]);
  TorchGenerator h(0);  // float32: PyTorch's AVX2 log/cos may differ in the last bits
  float f[16];
  h.normal(f, 16, 0.0, 1.0, true);
  const float want32[] = {
      -1.1258398294448853f, -1.152360200881958f,  -0.2505785822868347f,  -0.4338788092136383f,
      0.8487103581428528f,  0.6920091509819031f,  -0.31601276993751526f, -2.1152193546295166f,
      0.32227492332458496f, -1.2633347511291504f, 0.34998318552970886f,  0.30813392996788025f,
      0.11984150856733322f, 1.237657904624939f,   1.1167771816253662f,   -0.2472781538963318f};
  for (int i = 0; i < 16; ++i) CHECK(f[i] == doctest::Approx(want32[i]).epsilon(1e-6));
}

TEST_CASE("integers, randperm, exponential and bernoulli equal PyTorch's") {
  TorchGenerator g(0);
  int64_t ints[8];
  g.integers(ints, 8, 10, 0, false);  // randint(0, 10, (8,))
  const int64_t want_ints[] = {4, 9, 3, 0, 3, 9, 7, 3};
  for (int i = 0; i < 8; ++i) CHECK(ints[i] == want_ints[i]);
  g.manual_seed(0);
  g.integers(ints, 3, (uint64_t{1} << 40) + 5, -5, true);  // randint(-5, 2**40, (3,))
  CHECK(ints[0] == 741234585336);
  CHECK(ints[2] == 291397093751);
  g.manual_seed(0);
  int64_t perm[10];
  g.randperm(perm, 10);
  const int64_t want_perm[] = {4, 1, 7, 5, 3, 9, 0, 8, 6, 2};
  for (int i = 0; i < 10; ++i) CHECK(perm[i] == want_perm[i]);
  g.manual_seed(0);
  double e[3];
  g.exponential(e, 3, 2.5);
  CHECK(e[0] == 1.4033304746830568);
  CHECK(e[2] == 0.2460176375576046);
  g.manual_seed(0);
  double b[10];
  g.bernoulli(b, 10, 0.3);
  for (int i = 0; i < 10; ++i) CHECK(b[i] == ((i == 6 || i == 9) ? 1.0 : 0.0));
}

TEST_CASE("multinomial: the exponential race without replacement, binary search with it") {
  const double probs[] = {0.1, 0.2, 0.3, 0.4, 0.4, 0.3, 0.2, 0.1};
  TorchGenerator g(0);
  int64_t one[2], three[6], six[12];
  g.multinomial(probs, 2, 4, 1, false, one);
  g.multinomial(probs, 2, 4, 3, false, three);
  g.multinomial(probs, 2, 4, 6, true, six);
  CHECK(one[0] == 2);
  CHECK(one[1] == 2);
  const int64_t want3[] = {3, 1, 2, 0, 1, 2};
  const int64_t want6[] = {2, 1, 3, 3, 1, 3, 0, 1, 0, 1, 1, 1};
  for (int i = 0; i < 6; ++i) CHECK(three[i] == want3[i]);
  for (int i = 0; i < 12; ++i) CHECK(six[i] == want6[i]);
}

TEST_CASE("bad arguments name the operation") {
  TorchGenerator g(0);
  double d[2] = {0.5, 0.5};
  int64_t i[3];
  const double negative[] = {0.5, -0.1};
  CHECK_THROWS_WITH_AS(g.normal(d, 2, 0.0, -1.0, true), doctest::Contains("normal"), rg::Error);
  CHECK_THROWS_WITH_AS(g.exponential(d, 2, 0.0), doctest::Contains("exponential_"), rg::Error);
  CHECK_THROWS_WITH_AS(g.bernoulli(d, 2, 1.5), doctest::Contains("bernoulli_"), rg::Error);
  CHECK_THROWS_WITH_AS(g.randperm(i, -1), doctest::Contains("randperm"), rg::Error);
  CHECK_THROWS_WITH_AS(g.multinomial(negative, 1, 2, 1, false, i), doctest::Contains("multinomial"),
                       rg::Error);
  CHECK_THROWS_WITH_AS(g.multinomial(d, 1, 2, 3, false, i),
                       doctest::Contains("without replacement"), rg::Error);
}
