// The α-β-γ model behind bench/simulate (docs/scale.md): all-reduce times per algorithm over
// link tiers, DDP's bucket overlap on one communication thread, and the least-squares fit of
// a tier's α, β, γ to measured all-reduce times. Plain arithmetic, no ringgrad types.
#pragma once

#include <algorithm>
#include <string>
#include <vector>

namespace rg::sim {

// One kind of link: latency per message step (s), inverse bandwidth (s per byte sent by a
// rank), and the reduction cost (s per byte reduced).
struct Tier {
  double alpha = 0, beta = 0, gamma = 0;
};

// A link kind with regimes by buffer size: tiers[i] holds for buffers up to splits[i] bytes
// (the CPU's cache levels on the host this is calibrated on), the last tier above them all.
// No splits: one regime.
struct Link {
  std::vector<double> splits;
  std::vector<Tier> tiers{Tier{}};
  const Tier& at(double bytes) const {
    size_t i = 0;
    while (i < splits.size() && bytes > splits[i]) ++i;
    return tiers[std::min(i, tiers.size() - 1)];
  }
  static Link uniform(const Tier& t) { return {{}, {t}}; }
};

// Ranks: `hosts` hosts of `local` ranks each; shm joins ranks of a host, net the hosts.
struct Cluster {
  int hosts = 1, local = 1;
  Link shm, net;
  // Bytes that pick a link's regime when larger than the buffer: the memory a sequence of
  // all-reduces goes through (DDP's buckets are fresh memory each step, not one hot buffer).
  double working_set = 0;
  // Network links per host, each with net's β per direction; 0: one per rank (GPU nodes with
  // a NIC per GPU). With fewer, the ranks of a host that send across hosts at once share them.
  int nics = 0;
  int ranks() const { return hosts * local; }
};

// ringgrad's direct exchange limit across hosts (RG_DIST_DIRECT_BYTES_ACROSS_HOSTS) and its
// recursive doubling limit (RG_DIST_RECURSIVE_DOUBLING_BYTES).
inline constexpr double kDirectBytesAcrossHosts = 2 << 10;
inline constexpr double kRecursiveDoublingBytes = 8 << 10;

enum class Algo { ring, direct, two_level, doubling, ringgrad, best };
Algo algo_from_name(const std::string& name);
const char* algo_name(Algo a);

// Coefficients of α, β, γ in one algorithm's time: time = a·α + b·β + c·γ.
struct Terms {
  double a = 0, b = 0, c = 0;
  double time(const Tier& t) const { return a * t.alpha + b * t.beta + c * t.gamma; }
};
Terms ring_terms(int n, double bytes);            // 2(N-1) steps, 2(N-1)/N·B sent
Terms direct_terms(int n, double bytes);          // 1 step, (N-1)·B sent, (N-1)·B reduced
Terms reduce_scatter_terms(int n, double bytes);  // N-1 steps, (N-1)/N·B sent and reduced
Terms all_gather_terms(int n, double bytes);      // N-1 steps, (N-1)/N·B sent
// log2 P steps (P the largest power of two <= N) swapping B, plus 2 steps (B each) for the
// ranks beyond P when N is not a power of two.
Terms doubling_terms(int n, double bytes);

// Seconds for one all-reduce of `bytes` on the cluster. ring: one flat ring over all ranks
// (across hosts every step waits for its network hop); two_level: reduce-scatter in each
// host, a ring of each 1/L shard across the hosts, all-gather in each host; direct: every rank
// sends its buffer to every other; doubling: recursive doubling (with L a power of two its
// first log2 L steps stay within hosts, the rest cross; otherwise every step is counted on
// the network); ringgrad: its own choice (dist/allreduce_choice.cpp: direct up to
// direct_bytes, across hosts up to min(direct_bytes, 2 KiB), then recursive doubling up to
// 8 KiB; above it across hosts of several ranks the two-level all-reduce, else the ring);
// best: min(ring, two_level).
double allreduce_seconds(const Cluster& c, Algo algo, double bytes, double direct_bytes = 32 << 10);
// Payload bytes all ranks together send to other hosts in one all-reduce (ranks numbered host
// by host): ring H·2(N-1)/N·B (H of its N hops cross), two-level 2(H-1)·B, direct N(N-L)·B,
// doubling N·B per step that crosses.
double network_bytes(const Cluster& c, Algo algo, double bytes, double direct_bytes = 32 << 10);

// busbw as nccl-tests defines it: bytes / time · 2(N-1)/N, in bytes per second.
double bus_bandwidth(int n, double bytes, double seconds);

// DDP's overlap. Buckets in launch order; `ready` in seconds from the start of backward.
struct Bucket {
  double ready = 0, bytes = 0;
};
struct Overlap {
  std::vector<double> start, done;  // per bucket
  double comm = 0;                  // total communication time
  double exposed = 0;               // communication after backward ended
  double step = 0;                  // forward + max(backward end, last done) + optimizer
};
// `seconds(bytes)` is one bucket's all-reduce time; each bucket starts at max(ready, previous
// done) on one communication thread.
template <class F>
Overlap overlap(const std::vector<Bucket>& buckets, double forward, double backward,
                double optimizer, F seconds) {
  Overlap o;
  double prev = 0;
  for (const Bucket& b : buckets) {
    const double start = std::max(b.ready, prev), done = start + seconds(b.bytes);
    o.start.push_back(start);
    o.done.push_back(done);
    o.comm += done - start;
    prev = done;
  }
  const double end = std::max(backward, prev);
  o.exposed = end - backward;
  o.step = forward + end + optimizer;
  return o;
}

// One measured all-reduce: algorithm (ring or direct), ranks, bytes, seconds.
struct Sample {
  Algo algo = Algo::ring;
  int n = 2;
  double bytes = 0, seconds = 0;
};
// α, β, γ minimising the squared relative error over the samples (each row divided by its
// measured time), kept non-negative (a negative coefficient is pinned to 0 and the rest refit).
// gamma >= 0: γ is given, only α and β are fit.
Tier fit_tier(const std::vector<Sample>& samples, double gamma = -1);
// Every regime of a link: samples up to splits[0] bytes fit the first tier (α, β, γ); the ring
// samples of each later regime fit its α and β with the first tier's γ (the direct exchange
// never runs there in ringgrad, and without it β and γ cannot be told apart).
Link fit_link(const std::vector<Sample>& samples, const std::vector<double>& splits);

// Buckets as DDP forms them: parameter sizes in the order their gradients become ready,
// each closing a bucket once it holds `cap` bytes (a parameter larger than cap alone).
std::vector<double> bucket_sizes(const std::vector<double>& param_bytes, double cap);

}  // namespace rg::sim
