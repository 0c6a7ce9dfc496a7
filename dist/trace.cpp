// TraceRecorder and merge_traces; see trace.h. JSON is written and read with nlohmann-json.
#include "dist/trace.h"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "core/atomic_file.h"
#include "core/error.h"

namespace rg::dist {

using nlohmann::json;

TraceRecorder::TraceRecorder(TimePoint origin) : origin_(origin) {}

double TraceRecorder::micros(TimePoint t) const {
  return std::chrono::duration<double, std::micro>(t - origin_).count();
}

int TraceRecorder::lane_id(const std::string& lane) {
  auto it = std::find(lanes_.begin(), lanes_.end(), lane);
  if (it != lanes_.end()) return static_cast<int>(it - lanes_.begin()) + 1;
  lanes_.push_back(lane);
  return static_cast<int>(lanes_.size());
}

void TraceRecorder::note_rank(int rank) {
  if (std::find(ranks_seen_.begin(), ranks_seen_.end(), rank) == ranks_seen_.end())
    ranks_seen_.push_back(rank);
}

void TraceRecorder::span(int rank, const std::string& lane, const std::string& name,
                         TimePoint start, TimePoint end, const std::string& args_json) {
  std::lock_guard<std::mutex> lock(mu_);
  note_rank(rank);
  events_.push_back({'X', rank, lane_id(lane), name, micros(start),
                     std::max(0.0, micros(end) - micros(start)), args_json});
}

void TraceRecorder::instant(int rank, const std::string& lane, const std::string& name,
                            TimePoint at) {
  std::lock_guard<std::mutex> lock(mu_);
  note_rank(rank);
  events_.push_back({'i', rank, lane_id(lane), name, micros(at), 0, ""});
}

size_t TraceRecorder::event_count() const {
  std::lock_guard<std::mutex> lock(mu_);
  return events_.size();
}

namespace {

// Microseconds with 3 decimals (nanoseconds), so files stay small and diffable.
double round_ns(double us) { return std::round(us * 1000.0) / 1000.0; }

json metadata_event(const char* what, int pid, int tid, const std::string& name) {
  return {{"ph", "M"}, {"name", what}, {"pid", pid}, {"tid", tid}, {"args", {{"name", name}}}};
}

}  // namespace

std::string TraceRecorder::to_json() const {
  std::lock_guard<std::mutex> lock(mu_);
  json events = json::array();
  for (int rank : ranks_seen_) {
    events.push_back(metadata_event("process_name", rank, 0, "rank " + std::to_string(rank)));
    for (size_t l = 0; l < lanes_.size(); ++l)
      events.push_back(metadata_event("thread_name", rank, static_cast<int>(l + 1), lanes_[l]));
  }
  for (const Event& e : events_) {
    json j = {{"ph", std::string(1, e.phase)},
              {"name", e.name},
              {"pid", e.rank},
              {"tid", e.lane},
              {"ts", round_ns(e.ts_us)}};
    if (e.phase == 'X') j["dur"] = round_ns(e.dur_us);
    if (e.phase == 'i') j["s"] = "t";
    if (!e.args.empty()) {
      json args = json::parse(e.args, nullptr, /*allow_exceptions=*/false);
      j["args"] = args.is_discarded() ? json{{"text", e.args}} : std::move(args);
    }
    events.push_back(std::move(j));
  }
  json doc = {{"displayTimeUnit", "ms"}, {"traceEvents", std::move(events)}};
  // One level of indent: one event per line, readable and greppable.
  return doc.dump(1, ' ', false, json::error_handler_t::replace) + "\n";
}

void TraceRecorder::write(const std::string& path) const { write_file_atomically(path, to_json()); }

std::string merge_traces(const std::vector<std::string>& traces) {
  json events = json::array();
  for (size_t i = 0; i < traces.size(); ++i) {
    json doc = json::parse(traces[i], nullptr, /*allow_exceptions=*/false);
    RG_CHECK(doc.is_object() && doc.contains("traceEvents") && doc["traceEvents"].is_array(),
             "merge_traces: trace ", i, " is not a {\"traceEvents\": [...]} document");
    for (auto& e : doc["traceEvents"]) events.push_back(std::move(e));
  }
  json doc = {{"displayTimeUnit", "ms"}, {"traceEvents", std::move(events)}};
  return doc.dump(1, ' ', false, json::error_handler_t::replace) + "\n";
}

}  // namespace rg::dist
