// Reading bench/allreduce's tables and rgtrain's traces, and the calibration JSON; see
// simulate_io.h. Traces are Chrome trace documents written by dist/trace.cpp.
#include "bench/simulate_io.h"

#include <algorithm>
#include <array>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>

namespace rg::sim {

using nlohmann::json;

namespace {

std::ifstream open(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot read " + path);
  return in;
}

}  // namespace

std::vector<Row> read_allreduce_table(const std::string& path) {
  std::ifstream in = open(path);
  std::map<double, double> fastest;  // rounds repeat the sizes: keep the fastest
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream s(line);
    double bytes = 0, count = 0, micros = 0;
    std::string type, bar;
    if (!(s >> bytes >> count >> type >> bar >> micros) || bar != "|") continue;
    auto [it, fresh] = fastest.emplace(bytes, micros);
    if (!fresh) it->second = std::min(it->second, micros);
  }
  if (fastest.empty()) throw std::runtime_error(path + ": no bench/allreduce rows");
  std::vector<Row> rows;
  for (auto [bytes, micros] : fastest) rows.push_back({bytes, micros});
  return rows;
}

namespace {

std::vector<std::string> cells(const std::string& line) {  // "| a | b |" -> {"a", "b"}
  std::vector<std::string> out;
  std::istringstream s(line);
  std::string cell;
  std::getline(s, cell, '|');  // before the first bar
  while (std::getline(s, cell, '|')) {
    const auto first = cell.find_first_not_of(' '), last = cell.find_last_not_of(' ');
    out.push_back(first == std::string::npos ? "" : cell.substr(first, last - first + 1));
  }
  if (!out.empty() && out.back().empty()) out.pop_back();
  return out;
}

// Column i's role: {"ms" or "network", algorithm}, or {"", ""}.
std::pair<std::string, std::string> hosts_column(const std::string& head) {
  const std::string ms = " ms", net = "network B: ";
  if (head.size() > ms.size() && head.ends_with(ms))
    return {"ms", head.substr(0, head.size() - ms.size())};
  if (head.starts_with(net)) return {"network", head.substr(net.size())};
  return {"", ""};
}

}  // namespace

std::vector<HostsRow> read_hosts_table(const std::string& path) {
  std::ifstream in = open(path);
  std::vector<std::pair<std::string, std::string>> columns;
  std::vector<HostsRow> rows;
  std::string line;
  while (std::getline(in, line)) {
    const std::vector<std::string> c = cells(line);
    if (c.empty() || c[0].starts_with("---")) continue;
    if (c[0] == "bytes") {
      columns.clear();
      for (const std::string& h : c) columns.push_back(hosts_column(h));
      continue;
    }
    HostsRow r{std::stod(c[0]), {}, {}};
    for (size_t i = 1; i < std::min(c.size(), columns.size()); ++i)
      if (!columns[i].first.empty())
        (columns[i].first == "ms" ? r.ms : r.network)[columns[i].second] = std::stod(c[i]);
    rows.push_back(r);
  }
  if (rows.empty()) throw std::runtime_error(path + ": no bench/two_hosts.sh rows");
  return rows;
}

namespace {

json tier_json(const Tier& t) {
  return {{"alpha_us", t.alpha * 1e6},
          {"beta_ns_per_byte", t.beta * 1e9},
          {"gamma_ns_per_byte", t.gamma * 1e9}};
}

Tier tier_of(const json& j) {
  return {j.at("alpha_us").get<double>() * 1e-6, j.at("beta_ns_per_byte").get<double>() * 1e-9,
          j.at("gamma_ns_per_byte").get<double>() * 1e-9};
}

json link_json(const Link& l) {
  json tiers = json::array();
  for (const Tier& t : l.tiers) tiers.push_back(tier_json(t));
  return {{"split_bytes", l.splits}, {"tiers", tiers}};
}

Link link_of(const json& j) {
  Link l;
  l.splits = j.at("split_bytes").get<std::vector<double>>();
  l.tiers.clear();
  for (const json& t : j.at("tiers")) l.tiers.push_back(tier_of(t));
  if (l.tiers.size() != l.splits.size() + 1)
    throw std::runtime_error("calibration: a link needs one tier more than split_bytes");
  return l;
}

}  // namespace

Calibration read_calibration(const std::string& path) {
  std::ifstream in = open(path);
  const json j = json::parse(in);
  Calibration c{link_of(j.at("shm")), link_of(j.at("net")), j.value("note", ""), {}, {}};
  if (j.contains("hosts_net")) {
    c.hosts_net = link_of(j.at("hosts_net"));
    c.hosts_note = j.at("hosts_net").value("note", "");
  }
  return c;
}

void write_calibration(const std::string& path, const Calibration& c) {
  json j = {{"note", c.note}, {"shm", link_json(c.shm)}, {"net", link_json(c.net)}};
  if (c.hosts_net) {
    j["hosts_net"] = link_json(*c.hosts_net);
    j["hosts_net"]["note"] = c.hosts_note;
  }
  std::ofstream out(path);
  out << j.dump(1) << "\n";
  if (!out) throw std::runtime_error("cannot write " + path);
}

namespace {

bool starts_with(const std::string& s, const char* p) { return s.rfind(p, 0) == 0; }

// One rank's events of one step, in trace microseconds.
struct RawStep {
  double start = 0, opt_start = 0, opt_end = 0;
  std::vector<double> ready;                // grad ready instants
  std::vector<std::array<double, 4>> comm;  // start, end, params, bytes
};

TraceStep to_step(const RawStep& r) {
  TraceStep t;
  const double us = 1e-6;
  std::vector<double> ready = r.ready;
  std::sort(ready.begin(), ready.end());
  size_t params = 0;
  for (size_t b = 0; b < r.comm.size(); ++b) {
    params += static_cast<size_t>(r.comm[b][2]);
    const double at = ready.empty() ? r.start : ready[std::min(params, ready.size()) - 1];
    t.buckets.push_back({(at - r.start) * us, r.comm[b][3]});
    t.comm_start.push_back((r.comm[b][0] - r.start) * us);
    t.comm_done.push_back((r.comm[b][1] - r.start) * us);
  }
  t.backward_end = ready.empty() ? 0 : (ready.back() - r.start) * us;
  t.optimizer = (r.opt_end - r.opt_start) * us;
  t.measured = (r.opt_end - r.start) * us;
  return t;
}

}  // namespace

namespace {

// The step (index into starts, sorted) a timestamp falls in; -1 before the first.
int step_of(const std::vector<double>& starts, double ts) {
  return static_cast<int>(std::upper_bound(starts.begin(), starts.end(), ts) - starts.begin()) - 1;
}

std::vector<json> rank_events(const json& doc, int rank) {
  std::vector<json> out;
  for (const json& e : doc.at("traceEvents"))
    if (e.value("pid", -1) == rank && e.value("ph", "") != "M") out.push_back(e);
  return out;
}

void add_event(RawStep& s, const json& e) {
  const std::string name = e.value("name", "");
  const double ts = e.value("ts", 0.0), end = ts + e.value("dur", 0.0);
  if (starts_with(name, "grad ready")) s.ready.push_back(ts);
  if (starts_with(name, "allreduce bucket")) {
    const json& a = e.at("args");
    s.comm.push_back({ts, end, a.value("params", 0.0), a.value("bytes", 0.0)});
  }
  if (name == "optimizer step") s.opt_start = ts, s.opt_end = end;
}

}  // namespace

// Events are grouped by time, not file order: a step's bucket spans are recorded when
// backward finishes, before its "forward+backward" span.
std::vector<TraceStep> read_trace(const std::string& path, int rank) {
  std::ifstream in = open(path);
  const std::vector<json> events = rank_events(json::parse(in), rank);
  std::vector<double> starts;
  for (const json& e : events)
    if (e.value("name", "") == "forward+backward 0") starts.push_back(e.value("ts", 0.0));
  std::sort(starts.begin(), starts.end());
  std::vector<RawStep> raw(starts.size());
  for (size_t i = 0; i < starts.size(); ++i) raw[i].start = starts[i];
  for (const json& e : events)
    if (int k = step_of(starts, e.value("ts", 0.0)); k >= 0) add_event(raw[k], e);
  std::vector<TraceStep> steps;
  for (RawStep& r : raw) {
    std::sort(r.comm.begin(), r.comm.end());  // buckets run in order: by start time
    if (!r.comm.empty() && r.opt_end > 0) steps.push_back(to_step(r));
  }
  if (steps.empty())
    throw std::runtime_error(path + ": no DDP steps of rank " + std::to_string(rank));
  return steps;
}

}  // namespace rg::sim
