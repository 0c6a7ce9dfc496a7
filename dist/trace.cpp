#include "dist/trace.h"

#include <algorithm>
#include <cstdio>
#include <sstream>

#include "core/atomic_file.h"
#include "core/error.h"

namespace rg::dist {

TraceRecorder::TraceRecorder() : origin_(std::chrono::steady_clock::now()) {}

double TraceRecorder::micros(TimePoint t) const {
  return std::chrono::duration<double, std::micro>(t - origin_).count();
}

int TraceRecorder::lane_id(const std::string& lane) {
  auto it = std::find(lanes_.begin(), lanes_.end(), lane);
  if (it != lanes_.end()) return static_cast<int>(it - lanes_.begin()) + 1;
  lanes_.push_back(lane);
  return static_cast<int>(lanes_.size());
}

void TraceRecorder::span(int rank, const std::string& lane, const std::string& name,
                         TimePoint start, TimePoint end, const std::string& args_json) {
  std::lock_guard<std::mutex> lock(mu_);
  if (std::find(ranks_seen_.begin(), ranks_seen_.end(), rank) == ranks_seen_.end())
    ranks_seen_.push_back(rank);
  events_.push_back({'X', rank, lane_id(lane), name, micros(start),
                     std::max(0.0, micros(end) - micros(start)), args_json});
}

void TraceRecorder::instant(int rank, const std::string& lane, const std::string& name,
                            TimePoint at) {
  std::lock_guard<std::mutex> lock(mu_);
  if (std::find(ranks_seen_.begin(), ranks_seen_.end(), rank) == ranks_seen_.end())
    ranks_seen_.push_back(rank);
  events_.push_back({'i', rank, lane_id(lane), name, micros(at), 0, ""});
}

size_t TraceRecorder::event_count() const {
  std::lock_guard<std::mutex> lock(mu_);
  return events_.size();
}

namespace {
std::string escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (static_cast<unsigned char>(c) < 0x20) continue;
    out += c;
  }
  return out;
}
}  // namespace

std::string TraceRecorder::to_json() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::ostringstream os;
  os.setf(std::ios::fixed);
  os.precision(3);
  os << "{\"displayTimeUnit\": \"ms\", \"traceEvents\": [\n";
  bool first = true;
  auto sep = [&] {
    if (!first) os << ",\n";
    first = false;
  };
  for (int rank : ranks_seen_) {
    sep();
    os << "{\"ph\": \"M\", \"name\": \"process_name\", \"pid\": " << rank
       << ", \"tid\": 0, \"args\": {\"name\": \"rank " << rank << "\"}}";
    for (size_t l = 0; l < lanes_.size(); ++l) {
      sep();
      os << "{\"ph\": \"M\", \"name\": \"thread_name\", \"pid\": " << rank << ", \"tid\": " << l + 1
         << ", \"args\": {\"name\": \"" << escape(lanes_[l]) << "\"}}";
    }
  }
  for (const Event& e : events_) {
    sep();
    os << "{\"ph\": \"" << e.phase << "\", \"name\": \"" << escape(e.name)
       << "\", \"pid\": " << e.rank << ", \"tid\": " << e.lane << ", \"ts\": " << e.ts_us;
    if (e.phase == 'X') os << ", \"dur\": " << e.dur_us;
    if (e.phase == 'i') os << ", \"s\": \"t\"";
    if (!e.args.empty()) os << ", \"args\": " << e.args;
    os << "}";
  }
  os << "\n]}\n";
  return os.str();
}

void TraceRecorder::write(const std::string& path) const { write_file_atomically(path, to_json()); }

}  // namespace rg::dist
