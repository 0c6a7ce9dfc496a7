// TraceRecorder: a Chrome Trace Event timeline (opens in Perfetto or chrome://tracing).
// One process lane per rank ("pid" = rank) with named thread lanes ("backward", "comm").
// Thread-safe, so ranks running as threads can share one recorder and one file.
#pragma once
#include <chrono>
#include <mutex>
#include <string>
#include <vector>

namespace rg::dist {

class TraceRecorder {
 public:
  using TimePoint = std::chrono::steady_clock::time_point;
  TraceRecorder();

  // A span [start, end] on `lane` of `rank`.
  void span(int rank, const std::string& lane, const std::string& name, TimePoint start,
            TimePoint end, const std::string& args_json = "");
  // A point in time.
  void instant(int rank, const std::string& lane, const std::string& name, TimePoint at);
  size_t event_count() const;
  // Writes {"traceEvents": [...]} atomically (temporary file, fsync, rename).
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
  double micros(TimePoint t) const;

  TimePoint origin_;
  mutable std::mutex mu_;
  std::vector<Event> events_;
  std::vector<std::string> lanes_;
  std::vector<int> ranks_seen_;
};

}  // namespace rg::dist
