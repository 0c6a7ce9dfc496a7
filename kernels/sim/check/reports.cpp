// sim-check: the reports of a launch. Each distinct (kind, pc, other pc) is reported once,
// with a count; at the end of the launch the pcs are turned into source lines with
// addr2line (the instrumented objects carry -gline-tables-only) and the reports are thrown
// as one rg::Error, or only kept for take_reports.
#include <dlfcn.h>

#include <cstdio>
#include <cstring>
#include <map>
#include <mutex>

#include "core/error.h"
#include "kernels/sim/check/state.h"

namespace rg::sim::check {

namespace {

constexpr size_t kMaxReports = 16;  // per launch; more are counted in the last one
std::atomic<bool> g_throw{true};
thread_local std::vector<Report> t_last;

struct SourceLine {
  std::string file;
  int line = 0;
};

// The dialect's own headers, skipped when naming a line: a barrier or shuffle is reported
// where the kernel calls it.
bool in_dialect(const std::string& file) {
  for (const char* f : {"kernels/sim/interpreter.h", "kernels/cuda/portability.cuh"})
    if (file.size() >= std::strlen(f) &&
        file.compare(file.size() - std::strlen(f), std::string::npos, f) == 0)
      return true;
  return false;
}

// The lines addr2line prints for a code address of the loaded objects (none without one).
std::vector<std::string> addr2line(uintptr_t pc, const char* flags) {
  std::vector<std::string> lines;
  Dl_info info;
  if (!pc || !dladdr(reinterpret_cast<void*>(pc), &info) || !info.dli_fname) return lines;
  uintptr_t offset = pc - reinterpret_cast<uintptr_t>(info.dli_fbase);
  std::string cmd = str("addr2line ", flags, " -e '", info.dli_fname, "' 0x", std::hex, offset);
  if (FILE* p = popen(cmd.c_str(), "r")) {
    char buf[4096];
    while (fgets(buf, sizeof buf, p)) {
      std::string s(buf);
      while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
      lines.push_back(s);
    }
    pclose(p);
  }
  return lines;
}

// file:line of a pc: the innermost inlined frame outside the dialect's headers
// (addr2line -i prints the innermost first).
SourceLine symbolize(uintptr_t pc) {
  static std::mutex mutex;
  static std::map<uintptr_t, SourceLine> cache;
  std::lock_guard lock(mutex);
  if (auto it = cache.find(pc); it != cache.end()) return it->second;
  SourceLine out{"??", 0};
  bool found = false;
  for (std::string s : addr2line(pc, "-i")) {
    if (auto paren = s.find(" ("); paren != std::string::npos) s.resize(paren);
    auto colon = s.rfind(':');
    if (colon == std::string::npos || found) continue;
    SourceLine frame{s.substr(0, colon), std::atoi(s.c_str() + colon + 1)};
    if (out.line == 0 || !in_dialect(frame.file)) out = frame;
    found = !in_dialect(frame.file);
  }
  cache[pc] = out;
  return out;
}

std::string short_path(const std::string& file) {
  auto pos = file.rfind("/kernels/");
  if (pos == std::string::npos) pos = file.rfind("/tests/");
  return pos == std::string::npos ? file : file.substr(pos + 1);
}

Report finish(const LaunchState& s, const PendingReport& p) {
  Report r;
  r.kind = p.key.kind;
  r.kernel = s.kernel;
  r.count = p.count;
  SourceLine at = p.key.at.file ? SourceLine{p.key.at.file, p.key.at.line} : symbolize(p.key.pc);
  r.file = at.file;
  r.line = at.line;
  r.message = str(p.text, "\n    at ", short_path(at.file), ":", at.line);
  if (p.key.other_pc || p.key.other.file) {
    SourceLine other = p.key.other.file ? SourceLine{p.key.other.file, p.key.other.line}
                                        : symbolize(p.key.other_pc);
    r.other_file = other.file;
    r.other_line = other.line;
    r.message += str("\n    and ", short_path(other.file), ":", other.line);
  }
  if (p.count > 1) r.message += str("\n    (", p.count, " accesses gave this report)");
  return r;
}

void keep_reports(LaunchState& s) {
  t_last.clear();
  for (const PendingReport& p : s.reports) t_last.push_back(finish(s, p));
  s.reports.clear();
}

}  // namespace

std::string function_name(const void* entry) {
  static std::mutex mutex;
  static std::map<const void*, std::string> cache;
  std::lock_guard lock(mutex);
  if (auto it = cache.find(entry); it != cache.end()) return it->second;
  auto lines = addr2line(reinterpret_cast<uintptr_t>(entry), "-f -C");
  return cache[entry] = lines.empty() ? "??" : lines.front();
}

const char* kind_name(Kind kind) {
  const char* names[] = {"memcheck", "racecheck", "initcheck", "synccheck"};
  return names[static_cast<int>(kind)];
}

void add_report(Kind kind, uintptr_t pc, uintptr_t other_pc, std::string text) {
  add_report(ReportKey{kind, pc, other_pc}, std::move(text));
}

void add_report(const ReportKey& key, std::string text) {
  LaunchState& s = launch_state();
  for (PendingReport& p : s.reports)
    if (p.key == key) {
      p.count++;
      return;
    }
  if (s.reports.size() >= kMaxReports) {
    s.reports.back().count++;
    return;
  }
  s.reports.push_back({key, std::move(text), 1});
}

std::vector<Report> take_reports() { return std::exchange(t_last, {}); }
void set_throw_on_report(bool on) { g_throw = on; }

void report_sync_error(const std::string& message, const CallSite& at, const CallSite& other) {
  LaunchState& s = launch_state();
  if (s.active) add_report(ReportKey{Kind::synccheck, 0, 0, at, other}, message);
}

void on_launch_abort() {
  LaunchState& s = launch_state();
  if (!s.active) return;
  s.active = false;
  s.traces.clear();
  if (!s.reports.empty()) keep_reports(s);
}

void on_launch_end() {
  LaunchState& s = launch_state();
  if (!s.active) return;
  flush_requests(s);
  s.metrics.dram_bytes = 32 * (s.sectors_loaded.size() + s.sectors_stored.size());
  add_metrics(s.kernel, s.entry, s.metrics);
  s.active = false;
  if (s.reports.empty()) return;
  keep_reports(s);
  if (!g_throw) return;
  std::string text = str("sim-check: kernel '", s.kernel, "': ", t_last.size(), " report",
                         t_last.size() > 1 ? "s" : "");
  for (const Report& r : t_last) text += "\n  " + r.message;
  RG_FAIL(text);
}

}  // namespace rg::sim::check
