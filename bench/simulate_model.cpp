// The α-β-γ all-reduce model, its least-squares fit and DDP's bucketing; see simulate_model.h
// and docs/scale.md for the formulas and where they come from (dist/ring_allreduce.cpp,
// dist/direct_exchange.cpp, dist/allreduce_choice.cpp).
#include "bench/simulate_model.h"

#include <array>
#include <cmath>
#include <stdexcept>

namespace rg::sim {

Algo algo_from_name(const std::string& name) {
  if (name == "ring") return Algo::ring;
  if (name == "direct") return Algo::direct;
  if (name == "two_level") return Algo::two_level;
  if (name == "doubling") return Algo::doubling;
  if (name == "ringgrad") return Algo::ringgrad;
  if (name == "best") return Algo::best;
  throw std::invalid_argument("unknown algorithm '" + name + "'");
}

const char* algo_name(Algo a) {
  switch (a) {
    case Algo::ring:
      return "ring";
    case Algo::direct:
      return "direct";
    case Algo::two_level:
      return "two_level";
    case Algo::doubling:
      return "doubling";
    case Algo::ringgrad:
      return "ringgrad";
    case Algo::best:
      return "best";
  }
  return "?";
}

Terms ring_terms(int n, double bytes) {
  if (n <= 1) return {};
  const double share = double(n - 1) / n * bytes;
  return {2.0 * (n - 1), 2 * share, share};
}

Terms direct_terms(int n, double bytes) {
  if (n <= 1) return {};
  return {1.0, (n - 1) * bytes, (n - 1) * bytes};
}

Terms reduce_scatter_terms(int n, double bytes) {
  if (n <= 1) return {};
  const double share = double(n - 1) / n * bytes;
  return {double(n - 1), share, share};
}

Terms all_gather_terms(int n, double bytes) {
  if (n <= 1) return {};
  return {double(n - 1), double(n - 1) / n * bytes, 0};
}

namespace {
int log2_floor(int n) {
  int k = 0;
  while ((2 << k) <= n) ++k;
  return k;
}
}  // namespace

Terms doubling_terms(int n, double bytes) {
  if (n <= 1) return {};
  const double steps = log2_floor(n) + ((n & (n - 1)) ? 2 : 0);
  return {steps, steps * bytes, steps * bytes};
}

namespace {

// The bytes that pick the regime of a transfer of `bytes`.
double regime(const Cluster& c, double bytes) { return std::max(bytes, c.working_set); }

// Time of terms on the network: its regime is picked by the bytes one link carries per
// direction in one message step (β's coefficient over α's; --fit-hosts splits the same way).
double on_net(const Cluster& c, const Terms& t) {
  return t.time(c.net.at(std::max(t.b / std::max(t.a, 1.0), c.working_set)));
}

// Terms of a step in which every rank of a host sends across hosts at once: with fewer NICs
// than ranks per host, each NIC carries local/nics ranks' bytes.
Terms on_shared_nics(const Cluster& c, Terms t) {
  if (c.nics > 0 && c.nics < c.local) t.b *= double(c.local) / c.nics;
  return t;
}

// A flat ring over every rank: within one host all on shm; across hosts each of its
// synchronous steps waits for the network hop (α and β of net; γ is the same computation).
// Only one rank per host sends across hosts in a step, so NICs are not shared.
double flat_ring(const Cluster& c, double bytes) {
  const Terms t = ring_terms(c.ranks(), bytes);
  return c.hosts > 1 ? on_net(c, t) : t.time(c.shm.at(regime(c, bytes)));
}

// Across hosts the N-L remote copies of each buffer bound the time (the L-1 local ones go
// over shm at the same time); every rank reduces N-1 buffers.
double direct(const Cluster& c, double bytes) {
  const int n = c.ranks();
  if (c.hosts == 1) return direct_terms(n, bytes).time(c.shm.at(regime(c, bytes)));
  const Terms remote{1.0, double(n - c.local) * bytes, (n - 1) * bytes};
  return on_net(c, on_shared_nics(c, remote));
}

double two_level(const Cluster& c, double bytes) {
  if (c.hosts == 1 || c.local == 1) return flat_ring(c, bytes);
  const double shard = bytes / c.local;
  const Tier& local = c.shm.at(regime(c, bytes));
  return reduce_scatter_terms(c.local, bytes).time(local) +
         on_net(c, on_shared_nics(c, ring_terms(c.hosts, shard))) +
         all_gather_terms(c.local, bytes).time(local);
}

// Steps of recursive doubling that stay within a host: with ranks numbered host by host and
// L a power of two, the first log2 L (partners r ^ 1, r ^ 2, ... < L apart share a host).
int doubling_steps_within(const Cluster& c) {
  const bool power_of_two = (c.local & (c.local - 1)) == 0;
  return c.hosts == 1 ? log2_floor(c.ranks()) : power_of_two ? log2_floor(c.local) : 0;
}

double doubling(const Cluster& c, double bytes) {
  const Terms all = doubling_terms(c.ranks(), bytes);
  if (c.hosts == 1) return all.time(c.shm.at(regime(c, bytes)));
  const double within = doubling_steps_within(c);
  const Terms local{within, within * bytes, within * bytes};
  const Terms across{all.a - within, all.b - within * bytes, all.c - within * bytes};
  return local.time(c.shm.at(regime(c, bytes))) + on_net(c, on_shared_nics(c, across));
}

// ringgrad's choice (dist/allreduce_choice.cpp), with RG_DIST_ALLREDUCE=auto.
Algo choice(const Cluster& c, double bytes, double direct_bytes) {
  const double limit = c.hosts > 1 ? std::min(direct_bytes, kDirectBytesAcrossHosts) : direct_bytes;
  if (bytes <= limit && c.ranks() > 1) return Algo::direct;
  if (c.hosts > 1 && bytes <= kRecursiveDoublingBytes) return Algo::doubling;
  return c.hosts > 1 && c.local > 1 ? Algo::two_level : Algo::ring;
}

}  // namespace

double allreduce_seconds(const Cluster& c, Algo algo, double bytes, double direct_bytes) {
  switch (algo) {
    case Algo::ring:
      return flat_ring(c, bytes);
    case Algo::direct:
      return direct(c, bytes);
    case Algo::two_level:
      return two_level(c, bytes);
    case Algo::doubling:
      return doubling(c, bytes);
    case Algo::ringgrad:
      return allreduce_seconds(c, choice(c, bytes, direct_bytes), bytes);
    case Algo::best:
      return std::min(flat_ring(c, bytes), two_level(c, bytes));
  }
  return 0;
}

double network_bytes(const Cluster& c, Algo algo, double bytes, double direct_bytes) {
  const double n = c.ranks(), h = c.hosts;
  if (c.hosts == 1) return 0;
  if (algo == Algo::ringgrad) algo = choice(c, bytes, direct_bytes);
  if (algo == Algo::best)
    algo = two_level(c, bytes) < flat_ring(c, bytes) ? Algo::two_level : Algo::ring;
  if (algo == Algo::two_level && c.local > 1) return 2 * (h - 1) * bytes;
  if (algo == Algo::direct) return n * (n - c.local) * bytes;
  if (algo == Algo::doubling)
    return n * (doubling_terms(c.ranks(), bytes).a - doubling_steps_within(c)) * bytes;
  return h * 2 * (n - 1) / n * bytes;
}

double bus_bandwidth(int n, double bytes, double seconds) {
  return n > 1 && seconds > 0 ? bytes / seconds * 2.0 * (n - 1) / n : 0;
}

namespace {

using Vec3 = std::array<double, 3>;

// Solves the normal equations over the free coefficients (others fixed at 0).
Vec3 least_squares(const std::vector<Vec3>& rows, const std::vector<double>& rhs,
                   const std::array<bool, 3>& free) {
  std::array<std::array<double, 4>, 3> m{};
  for (size_t r = 0; r < rows.size(); ++r)
    for (int i = 0; i < 3; ++i) {
      for (int j = 0; j < 3; ++j) m[i][j] += rows[r][i] * rows[r][j];
      m[i][3] += rows[r][i] * rhs[r];
    }
  for (int i = 0; i < 3; ++i)
    if (!free[i]) m[i] = {0, 0, 0, 0}, m[i][i] = 1;
  for (int col = 0; col < 3; ++col) {  // Gauss-Jordan with partial pivoting
    int piv = col;
    for (int r = col + 1; r < 3; ++r)
      if (std::abs(m[r][col]) > std::abs(m[piv][col])) piv = r;
    std::swap(m[col], m[piv]);
    if (m[col][col] == 0) continue;
    for (int r = 0; r < 3; ++r) {
      if (r == col) continue;
      const double f = m[r][col] / m[col][col];
      for (int k = 0; k < 4; ++k) m[r][k] -= f * m[col][k];
    }
  }
  Vec3 x{};
  for (int i = 0; i < 3; ++i) x[i] = m[i][i] != 0 ? m[i][3] / m[i][i] : 0;
  return x;
}

Terms sample_terms(const Sample& s) {
  if (s.algo == Algo::direct) return direct_terms(s.n, s.bytes);
  if (s.algo == Algo::ring) return ring_terms(s.n, s.bytes);
  throw std::invalid_argument("fit_tier: samples must be ring or direct");
}

}  // namespace

Tier fit_tier(const std::vector<Sample>& samples, double gamma) {
  std::vector<Vec3> rows;
  std::vector<double> rhs;
  const double known = std::max(gamma, 0.0);
  for (const Sample& s : samples) {
    if (s.seconds <= 0) continue;
    const Terms t = sample_terms(s);
    rows.push_back({t.a / s.seconds, t.b / s.seconds, t.c / s.seconds});
    rhs.push_back(1.0 - t.c * known / s.seconds);
  }
  std::array<bool, 3> free{true, true, gamma < 0};
  Vec3 x{};
  for (int round = 0; round < 3; ++round) {
    x = least_squares(rows, rhs, free);
    bool changed = false;
    for (int i = 0; i < 3; ++i)
      if (free[i] && x[i] < 0) free[i] = false, changed = true;
    if (!changed) break;
  }
  for (double& v : x) v = std::max(v, 0.0);
  return {x[0], x[1], gamma < 0 ? x[2] : gamma};
}

Link fit_link(const std::vector<Sample>& samples, const std::vector<double>& splits) {
  Link l;
  l.splits = splits;
  l.tiers.assign(splits.size() + 1, Tier{});
  std::vector<std::vector<Sample>> regime(splits.size() + 1);
  for (const Sample& s : samples) {
    size_t i = 0;
    while (i < splits.size() && s.bytes > splits[i]) ++i;
    if (i == 0 || s.algo == Algo::ring) regime[i].push_back(s);
  }
  l.tiers[0] = fit_tier(regime[0]);
  for (size_t i = 1; i < regime.size(); ++i)
    l.tiers[i] = regime[i].empty() ? l.tiers[i - 1] : fit_tier(regime[i], l.tiers[0].gamma);
  return l;
}

std::vector<double> bucket_sizes(const std::vector<double>& param_bytes, double cap) {
  std::vector<double> out;
  double fill = 0;
  for (double p : param_bytes) {
    fill += p;
    if (fill >= cap) out.push_back(fill), fill = 0;
  }
  if (fill > 0) out.push_back(fill);
  return out;
}

}  // namespace rg::sim
