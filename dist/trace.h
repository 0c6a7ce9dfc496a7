// TraceRecorder: a Chrome Trace Event timeline (opens in Perfetto or chrome://tracing).
// One process lane per rank ("pid" = rank) with named thread lanes ("backward", "comm").
// Thread-safe, so ranks running as threads can share one recorder and one file. Ranks in
// separate processes each record their own and merge_traces() joins them into one file;
// give them one `origin` (e.g. rank 0's, broadcast) so their timestamps line up.
#pragma once
#include <chrono>
#include <mutex>
#include <string>
#include <vector>

namespace rg::dist {

class TraceRecorder {
 public:
  using TimePoint = std::chrono::steady_clock::time_point;
  // Timestamps are microseconds since `origin`.
  explicit TraceRecorder(TimePoint origin = std::chrono::steady_clock::now());

  // A span [start, end] on `lane` of `rank`; args_json, when given, is a JSON object.
  void span(int rank, const std::string& lane, const std::string& name, TimePoint start,
            TimePoint end, const std::string& args_json = "");
  // A point in time.
  void instant(int rank, const std::string& lane, const std::string& name, TimePoint at);
  size_t event_count() const;
  // Writes {"traceEvents": [...]} atomically (core/atomic_file.h).
  void write(const std::string& path) const;
  std::string to_json() const;

 private:
  struct Event {
    char phase;
    int rank;
    int lane;
    std::string name;
    double ts_us, dur_us;
    std::string args;
  };
  int lane_id(const std::string& lane);
  void note_rank(int rank);
  double micros(TimePoint t) const;

  TimePoint origin_;
  mutable std::mutex mu_;
  std::vector<Event> events_;
  std::vector<std::string> lanes_;
  std::vector<int> ranks_seen_;
};

// Joins traces (each to_json() of a recorder) into one: their events, in order, under one
// "traceEvents". Throws rg::Error naming the trace that is not such a document.
std::string merge_traces(const std::vector<std::string>& traces);

}  // namespace rg::dist
