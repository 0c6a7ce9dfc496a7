// DistError, its test-only rewording, the abort frame's payload and the failure record (see
// dist_error.h).
#include "dist/dist_error.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <nlohmann/json.hpp>

#include "core/atomic_file.h"

namespace rg::dist {
namespace {

constexpr const char* kReworded = "[reworded] ";

struct AbortHead {
  uint32_t magic;
  int32_t blamed;
  uint64_t seq;
  uint32_t operation_bytes;
};
constexpr uint32_t kAbortMagic = 0x52474631;  // "RGF1"

int env_rank() {
  const char* rank = std::getenv("RANK");
  return rank ? std::atoi(rank) : -1;
}

}  // namespace

const char* failure_kind_name(FailureKind kind) {
  switch (kind) {
    case FailureKind::timeout:
      return "timeout";
    case FailureKind::peer_gone:
      return "peer_gone";
    case FailureKind::mismatch:
      return "mismatch";
    case FailureKind::aborted:
      return "aborted";
    case FailureKind::local:
      return "local";
  }
  return "local";
}

std::string dist_message(const std::string& message) {
  const char* reword = std::getenv("RG_TEST_REWORD_ERRORS");
  if (!reword || std::string(reword) != "1" || message.starts_with(kReworded)) return message;
  // Every word a text scan could key on changes: "rank 1 has gone" -> "Rank 1 Has Gone".
  std::string out = message;
  bool word_start = true;
  for (char& c : out) {
    if (word_start && c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
    word_start = c == ' ' || c == '(' || c == ';';
  }
  return kReworded + out;
}

DistError::DistError(Failure failure, const std::string& message)
    : Error(dist_message(message)), failure_(std::move(failure)) {}

std::string abort_payload(const Failure& f, int from, const std::string& message) {
  const AbortHead head{kAbortMagic, f.blamed_rank >= 0 ? f.blamed_rank : from, f.seq,
                       static_cast<uint32_t>(f.operation.size())};
  std::string out(reinterpret_cast<const char*>(&head), sizeof(head));
  return out + f.operation + message;
}

std::pair<Failure, std::string> parse_abort(const std::string& payload, int from) {
  AbortHead head{};
  if (payload.size() >= sizeof(head)) std::memcpy(&head, payload.data(), sizeof(head));
  if (head.magic != kAbortMagic || payload.size() - sizeof(head) < head.operation_bytes)
    return {Failure{FailureKind::aborted, from, "", 0}, payload};
  Failure f{FailureKind::aborted, head.blamed, payload.substr(sizeof(head), head.operation_bytes),
            head.seq};
  return {f, payload.substr(sizeof(head) + head.operation_bytes)};
}

void record_failure(const std::exception& error) {
  const char* path = std::getenv("RG_ERROR_FILE");
  if (!path || !*path) return;
  Failure f;
  if (auto* d = dynamic_cast<const DistError*>(&error)) f = d->failure();
  try {
    const nlohmann::ordered_json record = {{"kind", failure_kind_name(f.kind)},
                                           {"blamed_rank", f.blamed_rank},
                                           {"operation", f.operation},
                                           {"seq", f.seq},
                                           {"message", error.what()},
                                           {"rank", env_rank()},
                                           {"time", static_cast<int64_t>(std::time(nullptr))}};
    // Invalid UTF-8 in a message (bytes from a peer) is replaced, never a throw.
    write_file_atomically(
        path, record.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rg::dist::record_failure: %s\n", e.what());
  }
}

}  // namespace rg::dist
