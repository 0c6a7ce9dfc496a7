// bench/simulate's model arithmetic (bench/simulate_model.h): ring, direct and two-level
// all-reduce times for known α, β, γ; network bytes across hosts and shared NICs; the DDP overlap
// on a hand-made 3-bucket timeline; the least-squares fit recovering known coefficients; bucketing;
// GPT-2 124M's parameter count.
#include <doctest/doctest.h>

#include "bench/simulate_gpt2.h"
#include "bench/simulate_model.h"

using namespace rg::sim;

namespace {

Link one_regime(double alpha, double beta, double gamma) {
  return Link::uniform({alpha, beta, gamma});
}

}  // namespace

TEST_CASE("simulate: ring bytes and time for known alpha, beta, gamma") {
  const Terms t = ring_terms(4, 1000);
  CHECK(t.a == 6);                      // 2(N-1) steps
  CHECK(t.b == doctest::Approx(1500));  // 2(N-1)/N·B sent
  CHECK(t.c == doctest::Approx(750));   // (N-1)/N·B reduced
  const Cluster c{1, 4, one_regime(1e-6, 1e-9, 1e-10), {}};
  // 6 µs + 1500 ns + 75 ns
  CHECK(allreduce_seconds(c, Algo::ring, 1000) == doctest::Approx(7.575e-6));
  CHECK(ring_terms(1, 1000).time({1, 1, 1}) == 0);
}

TEST_CASE("simulate: direct exchange and ringgrad's choice at 32 KiB") {
  const Cluster c{1, 4, one_regime(1e-6, 1e-9, 0), {}};
  CHECK(allreduce_seconds(c, Algo::direct, 1000) == doctest::Approx(1e-6 + 3000e-9));
  CHECK(allreduce_seconds(c, Algo::ringgrad, 32 << 10) ==
        doctest::Approx(allreduce_seconds(c, Algo::direct, 32 << 10)));
  CHECK(allreduce_seconds(c, Algo::ringgrad, (32 << 10) + 4) ==
        doctest::Approx(allreduce_seconds(c, Algo::ring, (32 << 10) + 4)));
}

TEST_CASE("simulate: two-level all-reduce over 2 hosts of 4") {
  const Cluster c{2, 4, one_regime(1e-6, 1e-9, 0), one_regime(1e-5, 1e-8, 0)};
  const double b = 8000;
  // reduce-scatter in host: 3 µs + 6000 ns; ring of 2000 B over 2 hosts: 20 µs + 20000 ns;
  // all-gather in host: 3 µs + 6000 ns.
  CHECK(allreduce_seconds(c, Algo::two_level, b) == doctest::Approx(58e-6));
  // flat ring over 8 ranks at the network's figures: 14 steps of 10 µs + 14000 B at 10 ns/B
  CHECK(allreduce_seconds(c, Algo::ring, b) == doctest::Approx(280e-6));
  CHECK(allreduce_seconds(c, Algo::best, b) == doctest::Approx(58e-6));
  CHECK(bus_bandwidth(8, b, 1e-6) == doctest::Approx(8000e6 * 14 / 8));
}

TEST_CASE("simulate: network bytes of 2 hosts x 2 ranks (bench/two_hosts.sh measures them)") {
  const Cluster c{2, 2, one_regime(1e-6, 1e-9, 0), one_regime(1e-5, 1e-8, 0)};
  const double b = 1 << 20;
  CHECK(network_bytes(c, Algo::ring, b) == 3 * b);       // 2 of 4 hops cross, 1.5 B each
  CHECK(network_bytes(c, Algo::two_level, b) == 2 * b);  // 2/3 of the ring's
  CHECK(network_bytes(c, Algo::direct, b) == 8 * b);     // 4 ranks x 2 remote peers
  CHECK(network_bytes(c, Algo::doubling, b) == 4 * b);   // its 2nd swap crosses: B per rank
  CHECK(network_bytes(c, Algo::ringgrad, 2 << 10) == 8 * (2 << 10));    // direct up to 2 KiB
  CHECK(network_bytes(c, Algo::ringgrad, 8 << 10) == 4 * (8 << 10));    // doubling up to 8 KiB
  CHECK(network_bytes(c, Algo::ringgrad, b) == 2 * b);                  // then two-level
  CHECK(network_bytes(Cluster{2, 1, {}, {}}, Algo::ring, b) == 2 * b);  // a ring of 2
  CHECK(network_bytes(Cluster{1, 4, {}, {}}, Algo::ring, b) == 0);
}

TEST_CASE("simulate: recursive doubling's steps, within a host first") {
  CHECK(doubling_terms(8, 1000).a == 3);  // 3 swaps of B
  CHECK(doubling_terms(8, 1000).b == 3000);
  CHECK(doubling_terms(6, 1000).a == 4);  // 2 swaps among 4, plus the fold and the return
  CHECK(doubling_terms(1, 1000).a == 0);
  // 2 hosts of 2: one swap on shm (1 µs + 1000 ns), one on the network (10 µs + 10000 ns).
  const Cluster c{2, 2, one_regime(1e-6, 1e-9, 0), one_regime(1e-5, 1e-8, 0)};
  CHECK(allreduce_seconds(c, Algo::doubling, 1000) == doctest::Approx(22e-6));
  // Across hosts ringgrad takes it above the direct exchange, up to 8 KiB.
  CHECK(allreduce_seconds(c, Algo::ringgrad, 8 << 10) ==
        doctest::Approx(allreduce_seconds(c, Algo::doubling, 8 << 10)));
  CHECK(allreduce_seconds(c, Algo::ringgrad, 16 << 10) ==
        doctest::Approx(allreduce_seconds(c, Algo::two_level, 16 << 10)));
}

TEST_CASE("simulate: ranks of a host sharing one NIC") {
  Cluster c{2, 2, one_regime(0, 0, 0), one_regime(0, 1e-9, 0)};
  const double b = 1000;
  // Each NIC of its own: the shard ring sends B/2 per rank, the direct exchange 2 B per rank.
  CHECK(allreduce_seconds(c, Algo::two_level, b) == doctest::Approx(500e-9));
  CHECK(allreduce_seconds(c, Algo::direct, b) == doctest::Approx(2000e-9));
  c.nics = 1;  // one link per host carries both ranks' bytes: B and 4 B per direction
  CHECK(allreduce_seconds(c, Algo::two_level, b) == doctest::Approx(1000e-9));
  CHECK(allreduce_seconds(c, Algo::direct, b) == doctest::Approx(4000e-9));
  CHECK(allreduce_seconds(c, Algo::ring, b) == doctest::Approx(1500e-9));  // one hop per host
}

TEST_CASE("simulate: overlap of 3 buckets on one communication thread") {
  // ready at 1, 2, 6 ms; each takes 2 ms; backward ends at 6, forward 3, optimizer 1.
  const std::vector<Bucket> buckets{{1e-3, 1}, {2e-3, 1}, {6e-3, 1}};
  const Overlap o = overlap(buckets, 3e-3, 6e-3, 1e-3, [](double) { return 2e-3; });
  CHECK(o.start[0] == doctest::Approx(1e-3));
  CHECK(o.start[1] == doctest::Approx(3e-3));  // waits for bucket 0
  CHECK(o.start[2] == doctest::Approx(6e-3));  // ready after bucket 1 is done (5 ms)
  CHECK(o.done[2] == doctest::Approx(8e-3));
  CHECK(o.comm == doctest::Approx(6e-3));
  CHECK(o.exposed == doctest::Approx(2e-3));
  CHECK(o.step == doctest::Approx(3e-3 + 8e-3 + 1e-3));
}

TEST_CASE("simulate: the fit recovers known coefficients") {
  const Tier truth{2e-6, 0.2e-9, 0.3e-9};
  std::vector<Sample> s;
  for (double b = 1024; b <= (64 << 20); b *= 4)
    for (Algo a : {Algo::ring, Algo::direct}) {
      const Terms t = a == Algo::ring ? ring_terms(2, b) : direct_terms(2, b);
      s.push_back({a, 2, b, t.time(truth)});
    }
  const Tier fit = fit_tier(s);
  CHECK(fit.alpha == doctest::Approx(truth.alpha).epsilon(1e-6));
  CHECK(fit.beta == doctest::Approx(truth.beta).epsilon(1e-6));
  CHECK(fit.gamma == doctest::Approx(truth.gamma).epsilon(1e-6));
  const Link l = fit_link(s, {1 << 20, 8 << 20});
  REQUIRE(l.tiers.size() == 3);
  CHECK(l.at(1 << 20).beta == doctest::Approx(truth.beta).epsilon(1e-6));
  CHECK(l.at(2 << 20).beta == doctest::Approx(truth.beta).epsilon(1e-6));
  CHECK(l.at(64 << 20).beta == doctest::Approx(truth.beta).epsilon(1e-6));
  CHECK(&l.at(2 << 20) == &l.tiers[1]);
  // A working set beyond the first split prices a small buffer at the second regime.
  Link two;
  two.splits = {1000};
  two.tiers = {{0, 1e-9, 0}, {0, 4e-9, 0}};
  Cluster c{1, 2, two, {}};
  CHECK(allreduce_seconds(c, Algo::ring, 100) == doctest::Approx(100e-9));
  c.working_set = 5000;
  CHECK(allreduce_seconds(c, Algo::ring, 100) == doctest::Approx(400e-9));
}

TEST_CASE("simulate: bucketing and GPT-2 124M's gradients") {
  const std::vector<double> b = bucket_sizes({3, 3, 10, 1, 1}, 5);
  REQUIRE(b.size() == 3);
  CHECK(b[0] == 6);
  CHECK(b[1] == 10);
  CHECK(b[2] == 2);
  double n = 0;
  for (const GradEvent& g : gpt2_gradients()) n += g.elements;
  CHECK(n == 124439808);  // GPT-2 124M (tied embeddings)
  CHECK(gpt2_gradients().back().ready_fraction == doctest::Approx(1.0));
}
