// DistError and the failure record (dist/dist_error.h): the fields a failure carries, as they
// reach the other ranks through an abort and RG_ERROR_FILE through record_failure.
#include <doctest/doctest.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>

#include "core/tensor.h"
#include "dist/dist_error.h"
#include "dist/threads_group.h"

using namespace rg;
using namespace rg::dist;

namespace {

nlohmann::json record_of(const std::exception& e) {
  const std::string path =
      (std::filesystem::temp_directory_path() / ("rg-record-" + std::to_string(getpid()) + ".json"))
          .string();
  setenv("RG_ERROR_FILE", path.c_str(), 1);
  record_failure(e);
  unsetenv("RG_ERROR_FILE");
  std::ifstream in(path);
  const std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  std::filesystem::remove(path);
  return nlohmann::json::parse(text);
}

}  // namespace

TEST_CASE("an abort reaches the other ranks as kind aborted, blaming the rank that aborted") {
  auto groups = make_thread_groups(2);
  groups[1]->abort("test abort");
  Tensor t = empty({10});
  try {
    groups[0]->allreduce(t)->wait();
    FAIL("no error");
  } catch (const DistError& e) {
    CHECK(e.kind() == FailureKind::aborted);
    CHECK(e.blamed_rank() == 1);
    CHECK(std::string(e.what()).find("rank 1 aborted: test abort") != std::string::npos);
  }
}

TEST_CASE("an abort passed on keeps the rank at fault, the operation and the sequence number") {
  const Failure gone{FailureKind::peer_gone, 3, "allreduce #7 (sum of 10 float32)", 7};
  auto [heard, message] = parse_abort(abort_payload(gone, 1, "rank 3 has gone"), 1);
  CHECK(heard.kind == FailureKind::aborted);
  CHECK(heard.blamed_rank == 3);
  CHECK(heard.operation == gone.operation);
  CHECK(heard.seq == 7);
  CHECK(message == "rank 3 has gone");
  // Passed on again by the rank that heard it: still rank 3.
  CHECK(parse_abort(abort_payload(heard, 2, message), 2).first.blamed_rank == 3);
  // A mismatch blames no rank: its sender is named. A payload without fields: all message.
  CHECK(
      parse_abort(abort_payload({FailureKind::mismatch, -1, "", 0}, 4, "m"), 4).first.blamed_rank ==
      4);
  auto [plain, text] = parse_abort("short", 5);
  CHECK(plain.blamed_rank == 5);
  CHECK(text == "short");
}

TEST_CASE("record_failure writes the fields as JSON; other errors are local, blaming no one") {
  const nlohmann::json dist =
      record_of(DistError({FailureKind::timeout, 2, "broadcast #4 (5 int64 from root 0)", 4},
                          "rank 0: timed out \"waiting\"\nfor rank 2"));
  CHECK(dist["kind"] == "timeout");
  CHECK(dist["blamed_rank"] == 2);
  CHECK(dist["operation"] == "broadcast #4 (5 int64 from root 0)");
  CHECK(dist["seq"] == 4);
  CHECK(dist["message"] == "rank 0: timed out \"waiting\"\nfor rank 2");
  CHECK(dist["time"].get<int64_t>() > 0);
  const nlohmann::json local = record_of(std::runtime_error("disk full"));
  CHECK(local["kind"] == "local");
  CHECK(local["blamed_rank"] == -1);
  CHECK(local["message"] == "disk full");
  // A message with bytes that are not UTF-8 (a peer's malformed text) is still recorded.
  const nlohmann::json odd = record_of(std::runtime_error("peer said \xff\xfe here"));
  CHECK(odd["kind"] == "local");
  CHECK(odd["message"].get<std::string>().find("peer said") == 0);
  CHECK(odd["message"].get<std::string>().find("here") != std::string::npos);
}

TEST_CASE("RG_TEST_REWORD_ERRORS rewords every DistError message, once") {
  CHECK(dist_message("rank 1 has gone") == "rank 1 has gone");
  setenv("RG_TEST_REWORD_ERRORS", "1", 1);
  const std::string reworded = dist_message("rank 1 has gone");
  const DistError e({FailureKind::peer_gone, 1, "", 0}, "rank 1 has gone");
  unsetenv("RG_TEST_REWORD_ERRORS");
  CHECK(reworded == "[reworded] Rank 1 Has Gone");
  CHECK(std::string(e.what()) == reworded);
  setenv("RG_TEST_REWORD_ERRORS", "1", 1);
  CHECK(dist_message(reworded) == reworded);
  unsetenv("RG_TEST_REWORD_ERRORS");
}
