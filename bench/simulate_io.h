// Inputs of bench/simulate: bench/allreduce's tables, rgtrain's Chrome traces (--trace) and
// the calibration JSON (bench/scale_calibration.json). See docs/scale.md.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "bench/simulate_model.h"

namespace rg::sim {

// (bytes, microseconds) of the first timing column of each row of a bench/allreduce table.
struct Row {
  double bytes = 0, micros = 0;
};
std::vector<Row> read_allreduce_table(const std::string& path);

// A bench/two_hosts.sh table: per size, each algorithm's median ms and network bytes, keyed
// by the column names ("ring", "two-level", "direct").
struct HostsRow {
  double bytes = 0;
  std::map<std::string, double> ms, network;
};
std::vector<HostsRow> read_hosts_table(const std::string& path);

// The calibration: one tier per link kind, and how it was measured. hosts_net: the network
// between hosts (bench/two_hosts.sh's shaped veth link; absent: no such tier, `hosts_note`).
struct Calibration {
  Link shm, net;
  std::string note;
  std::optional<Link> hosts_net;
  std::string hosts_note;
};
Calibration read_calibration(const std::string& path);
void write_calibration(const std::string& path, const Calibration& c);

// One DDP step of one rank from a trace, in seconds from the step's start (its first
// "forward+backward" span): buckets (ready = the moment the last gradient of the bucket and
// of every bucket before it was ready), backward end (last "grad ready"), the measured
// bucket spans and the optimizer.
struct TraceStep {
  std::vector<Bucket> buckets;                // ready from step start
  std::vector<double> comm_start, comm_done;  // measured, from step start
  double backward_end = 0, optimizer = 0, measured = 0;
  double peers_backward_end = 0;  // the latest backward end of all ranks (bench/simulate)
};
std::vector<TraceStep> read_trace(const std::string& path, int rank);

}  // namespace rg::sim
