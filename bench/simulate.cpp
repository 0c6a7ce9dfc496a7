// bench/simulate: the α-β-γ all-reduce and DDP overlap model of docs/scale.md. Sections, each
// run when its flags are given:
//   --fit          α, β, γ per tier from bench/allreduce tables (scripts/scale_measure.sh)
//   --validate     predicted vs measured all-reduce times (tables of ringgrad's own choice)
//   --fit-hosts    α, β of the network between hosts from a bench/two_hosts.sh table
//   --validate-hosts  predicted vs measured times and network bytes of a bench/two_hosts.sh table
//   --trace        predicted vs measured DDP step times from an rgtrain --trace file
//   --predict      GPT-2 124M data-parallel on 8-1024 GPUs (figures in docs/scale.md)
#include <algorithm>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "bench/cli.h"
#include "bench/simulate_io.h"
#include "bench/simulate_predict.h"

namespace {

using namespace rg::sim;

struct Args {
  std::string calibration = "bench/scale_calibration.json", output;
  std::vector<std::string> fit_shm, fit_net, validate;
  std::string trace, fit_hosts, validate_hosts;
  int nproc = 2, skip_steps = 2;
  int hosts = 2, per_host = 2, nics = 1;         // --fit-hosts, --validate-hosts
  std::vector<double> hosts_splits;              // --fit-hosts: regimes (default: one)
  std::vector<double> splits{2 << 20, 8 << 20};  // regimes: in L2, a knee, beyond
  int cores = std::max(1, int(std::thread::hardware_concurrency()));
  bool predict = false, no_overlap = false, cold_buckets = false;
  PredictConfig pc;
};

std::vector<Sample> samples(const std::vector<std::string>& files, int n) {
  // files: ring table, then direct table
  std::vector<Sample> out;
  for (size_t f = 0; f < files.size(); ++f)
    for (const Row& r : read_allreduce_table(files[f]))
      out.push_back({f == 0 ? Algo::ring : Algo::direct, n, r.bytes, r.micros * 1e-6});
  return out;
}

void print_tier(const char* name, const char* regime, const Tier& t) {
  std::printf("%s, %s: alpha %.2f us, beta %.4f ns/B (%.2f GB/s), gamma %.4f ns/B\n", name, regime,
              t.alpha * 1e6, t.beta * 1e9, t.beta > 0 ? 1e-9 / t.beta : 0.0, t.gamma * 1e9);
}

// by_step: regimes by the bytes of one message step (the network between hosts), else by buffer.
void print_fit(const char* name, const Link& l, const std::vector<Sample>& s,
               bool by_step = false) {
  for (size_t i = 0; i < l.tiers.size(); ++i) {
    const std::string upto =
        i < l.splits.size() ? "up to " + std::to_string(int64_t(l.splits[i])) + " B" : "above";
    print_tier(name, upto.c_str(), l.tiers[i]);
  }
  std::printf("  %-7s %12s %12s %12s %8s\n", "algo", "bytes", "measured us", "fit us", "error");
  for (const Sample& x : s) {
    const Terms k = x.algo == Algo::ring ? ring_terms(x.n, x.bytes) : direct_terms(x.n, x.bytes);
    const double fit = k.time(l.at(by_step ? k.b / k.a : x.bytes));
    std::printf("  %-7s %12.0f %12.1f %12.1f %+7.0f%%\n", algo_name(x.algo), x.bytes,
                x.seconds * 1e6, fit * 1e6, 100 * (fit / x.seconds - 1));
  }
}

void run_fit(const Args& a) {
  Calibration c;
  const auto shm = samples(a.fit_shm, a.nproc), net = samples(a.fit_net, a.nproc);
  c.shm = fit_link(shm, a.splits);
  c.net = fit_link(net, a.splits);
  c.note = "fit by bench/simulate --fit from scripts/scale_measure.sh tables (" +
           std::to_string(a.nproc) + " ranks; shm: tcp backend over shared memory, net: " +
           "loopback TCP, RG_DIST_SHM=0); regenerate: see docs/scale.md";
  print_fit("shm", c.shm, shm);
  print_fit("net", c.net, net);
  if (!a.output.empty()) write_calibration(a.output, c);
}

void run_validate(const Args& a, const Calibration& c) {
  // With more ranks than cores the ranks take turns: the same work, N/cores times as long
  // at best (a second column; the model itself gives every rank a core).
  std::printf("%-10s %12s %12s %12s %8s %14s %8s\n", "table", "bytes", "measured us", "model us",
              "error", "x N/cores us", "error");
  for (const std::string& f : a.validate) {
    const auto at = f.find("_n");
    const int n = at == std::string::npos ? a.nproc : std::stoi(f.substr(at + 2));
    const Cluster cl{1, n, c.shm, c.net};
    for (const Row& r : read_allreduce_table(f)) {
      const double model = allreduce_seconds(cl, Algo::ringgrad, r.bytes) * 1e6;
      const double shared = model * std::max(1.0, double(n) / a.cores);
      std::printf("N=%-8d %12.0f %12.1f %12.1f %+7.0f%% %14.1f %+7.0f%%\n", n, r.bytes, r.micros,
                  model, 100 * (model / r.micros - 1), shared, 100 * (shared / r.micros - 1));
    }
  }
}

// The table's algorithms in its column names, and the model's.
const std::vector<std::pair<std::string, Algo>> kHostsAlgos{
    {"ring", Algo::ring}, {"two-level", Algo::two_level}, {"direct", Algo::direct}};

// The network tier between hosts from a bench/two_hosts.sh table (ring and direct columns) of
// `hosts` hosts of `per_host` ranks, α and β per regime (--hosts-split-bytes: the bytes a rank
// sends in one message step); γ is the shm tier's (the same CPUs reduce, and next to the link's β
// it is too small to fit).
Calibration run_fit_hosts(const Args& a, Calibration c) {
  std::vector<std::vector<Sample>> regimes(a.hosts_splits.size() + 1);
  const int n = a.hosts * a.per_host;
  for (const HostsRow& r : read_hosts_table(a.fit_hosts))
    for (const auto& [name, algo] : kHostsAlgos)
      if ((algo == Algo::ring || algo == Algo::direct) && r.ms.contains(name)) {
        const Terms t = algo == Algo::ring ? ring_terms(n, r.bytes) : direct_terms(n, r.bytes);
        size_t i = 0;  // by the bytes of one message step, as the model picks the regime
        while (i < a.hosts_splits.size() && t.b / t.a > a.hosts_splits[i]) ++i;
        regimes[i].push_back({algo, n, r.bytes, r.ms.at(name) * 1e-3});
      }
  c.hosts_net = Link{a.hosts_splits, {}};
  std::vector<Sample> s;
  for (const std::vector<Sample>& regime : regimes) {
    c.hosts_net->tiers.push_back(fit_tier(regime, c.shm.tiers.front().gamma));
    s.insert(s.end(), regime.begin(), regime.end());
  }
  c.hosts_note = "fit by bench/simulate --fit-hosts from bench/two_hosts.sh (" +
                 std::to_string(a.hosts) + " hosts x " + std::to_string(a.per_host) +
                 " ranks, shaped veth link; gamma: the shm tier's); regenerate: see docs/scale.md";
  print_fit("hosts_net", *c.hosts_net, s, true);
  if (!a.output.empty()) write_calibration(a.output, c);
  return c;
}

// Predicted vs measured times (ms) and network bytes per algorithm, as markdown rows.
void run_validate_hosts(const Args& a, const Calibration& c) {
  if (!c.hosts_net) throw std::invalid_argument("the calibration has no hosts_net tier");
  Cluster cl{a.hosts, a.per_host, c.shm, *c.hosts_net};
  cl.nics = a.nics;
  std::printf(
      "| bytes | algorithm | measured ms | model ms | error | network B measured | model |\n"
      "|---|---|---|---|---|---|---|\n");
  for (const HostsRow& r : read_hosts_table(a.validate_hosts))
    for (const auto& [name, algo] : kHostsAlgos) {
      if (!r.ms.contains(name)) continue;
      const double model = allreduce_seconds(cl, algo, r.bytes) * 1e3, meas = r.ms.at(name);
      const double net = r.network.contains(name) ? r.network.at(name) : 0;
      std::printf("| %.0f | %s | %.3f | %.3f | %+.0f%% | %.0f | %.0f |\n", r.bytes, name.c_str(),
                  meas, model, 100 * (model / meas - 1), net, network_bytes(cl, algo, r.bytes));
    }
}

// Bucket b may start only once every rank has launched it: ready = max over ranks (and
// with --no-overlap once every rank's backward has ended).
std::vector<TraceStep> all_ranks(const std::string& path, int nproc) {
  std::vector<TraceStep> steps = read_trace(path, 0);
  for (TraceStep& s : steps) s.peers_backward_end = s.backward_end;
  for (int r = 1; r < nproc; ++r) {
    const std::vector<TraceStep> other = read_trace(path, r);
    for (size_t k = 0; k < std::min(steps.size(), other.size()); ++k) {
      steps[k].peers_backward_end = std::max(steps[k].peers_backward_end, other[k].backward_end);
      for (size_t b = 0; b < std::min(steps[k].buckets.size(), other[k].buckets.size()); ++b)
        steps[k].buckets[b].ready = std::max(steps[k].buckets[b].ready, other[k].buckets[b].ready);
    }
  }
  return steps;
}

void run_trace(const Args& a, const Calibration& c) {
  Cluster cl{1, a.nproc, c.shm, c.net};
  auto steps = all_ranks(a.trace, a.nproc);
  if (a.cold_buckets)  // the regime of the step's gradients together, not of one bucket
    for (const Bucket& b : steps.front().buckets) cl.working_set += b.bytes;
  if (a.no_overlap)  // rgtrain --no-overlap: every bucket starts when backward has ended
    for (TraceStep& s : steps)
      for (Bucket& b : s.buckets) b.ready = std::max(b.ready, s.peers_backward_end);
  std::printf("%4s %8s %9s %9s %9s %9s %9s %8s\n", "step", "buckets", "bwd ms", "comm ms",
              "meas comm", "model ms", "meas ms", "error");
  double sum_model = 0, sum_meas = 0;
  int counted = 0;
  for (size_t k = 0; k < steps.size(); ++k) {
    const TraceStep& s = steps[k];
    const Overlap o = overlap(s.buckets, 0, s.backward_end, s.optimizer, [&](double bytes) {
      return allreduce_seconds(cl, Algo::ringgrad, bytes);
    });
    double comm = 0;
    for (size_t b = 0; b < s.comm_done.size(); ++b) comm += s.comm_done[b] - s.comm_start[b];
    std::printf("%4zu %8zu %9.2f %9.2f %9.2f %9.2f %9.2f %+7.0f%%%s\n", k, s.buckets.size(),
                s.backward_end * 1e3, o.comm * 1e3, comm * 1e3, o.step * 1e3, s.measured * 1e3,
                100 * (o.step / s.measured - 1), int(k) < a.skip_steps ? " (warm-up)" : "");
    if (int(k) < a.skip_steps) continue;
    sum_model += o.step, sum_meas += s.measured, ++counted;
  }
  if (counted > 0)
    std::printf("mean of %d steps: model %.2f ms, measured %.2f ms, error %+.0f%%\n", counted,
                sum_model / counted * 1e3, sum_meas / counted * 1e3,
                100 * (sum_model / sum_meas - 1));
}

void add_options(CLI::App& app, Args& a) {
  rg::bench::show_defaults(app);
  app.add_option("--calibration", a.calibration,
                 "calibration JSON (read; --fit: written to --output)");
  app.add_option("--fit-shm", a.fit_shm,
                 "--fit: shared-memory ring table, direct table (default: none)")
      ->expected(2);
  app.add_option("--fit-net", a.fit_net,
                 "--fit: loopback TCP ring table, direct table (default: none)")
      ->expected(2);
  app.add_option("--split-bytes", a.splits, "--fit: largest buffer of each regime but the last");
  app.add_option("--output", a.output, "--fit: write the calibration here (default: none)");
  app.add_option("--validate", a.validate,
                 "bench/allreduce tables named *_nN.txt (N ranks; default: none)");
  app.add_option("--cores", a.cores, "--validate: cores of the measured host")
      ->check(CLI::PositiveNumber);
  app.add_option(
      "--fit-hosts", a.fit_hosts,
      "bench/two_hosts.sh table to fit the network between hosts from (with "
      "--hosts, --per-host; written to --output with the rest of --calibration; default: "
      "none)");
  app.add_option("--validate-hosts", a.validate_hosts,
                 "bench/two_hosts.sh table to check against (with --hosts, --per-host, --nics; "
                 "default: none)");
  app.add_option(
      "--hosts-split-bytes", a.hosts_splits,
      "--fit-hosts: largest message step of each regime but the last (default: one regime)");
  app.add_option("--hosts", a.hosts, "--fit-hosts, --validate-hosts: hosts")
      ->check(CLI::Range(1, 4096));
  app.add_option("--per-host", a.per_host, "--fit-hosts, --validate-hosts: ranks per host")
      ->check(CLI::Range(1, 4096));
  app.add_option("--nics", a.nics,
                 "--validate-hosts: network links per host, shared by its ranks (0: one per rank)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--trace", a.trace,
                 "rgtrain --trace file of a DDP run on one host (default: none)");
  app.add_option("--nproc", a.nproc, "ranks of the fit tables and the trace")
      ->check(CLI::Range(1, 4096));
  app.add_flag("--no-overlap", a.no_overlap,
               "--trace: the run had rgtrain --no-overlap (default: off)");
  app.add_flag("--cold-buckets", a.cold_buckets,
               "--trace: buckets priced at the regime of all gradients together (default: off)");
  app.add_option("--skip-steps", a.skip_steps, "--trace: warm-up steps left out of the mean")
      ->check(CLI::NonNegativeNumber);
  app.add_flag("--predict", a.predict, "GPT-2 124M on 8-1024 GPUs (default: off)");
  add_predict_options(app, a.pc);
}

void run(const Args& a) {
  if (a.fit_shm.empty() != a.fit_net.empty())
    throw std::invalid_argument("--fit-shm and --fit-net go together");
  if (!a.fit_shm.empty()) run_fit(a);
  const bool needs =
      !a.validate.empty() || !a.trace.empty() || !a.fit_hosts.empty() || !a.validate_hosts.empty();
  Calibration c = needs ? read_calibration(a.calibration) : Calibration{};
  if (!a.fit_hosts.empty()) c = run_fit_hosts(a, c);
  if (!a.validate_hosts.empty()) run_validate_hosts(a, c);
  if (!a.validate.empty()) run_validate(a, c);
  if (!a.trace.empty()) run_trace(a, c);
  if (a.predict) run_predict(a.pc);
}

}  // namespace

int main(int argc, char** argv) {
  Args a;
  CLI::App app{"simulate: alpha-beta-gamma all-reduce and DDP overlap model (docs/scale.md)",
               "simulate"};
  add_options(app, a);
  rg::bench::parse_flags(app, argc, argv);
  try {
    run(a);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "simulate: %s\n", e.what());
    return 1;
  }
  return 0;
}
