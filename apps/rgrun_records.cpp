// rgrun's failure records: the private directory whose rank-<N>.json files the ranks write
// when they fail (RG_ERROR_FILE, see dist/dist_error.h), and reading them back. rgrun blames
// from these fields and from exit codes and signals, never from the ranks' messages.
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "apps/rgrun.h"

namespace rgrun {

std::string make_error_dir() {
  std::string dir = (std::filesystem::temp_directory_path() / "rgrun-errors.XXXXXX").string();
  if (!mkdtemp(dir.data())) return "";
  return dir;
}

void remove_error_dir(const std::string& dir) {
  if (dir.empty()) return;
  std::error_code ignored;
  std::filesystem::remove_all(dir, ignored);
}

std::string error_file(const std::string& dir, int rank) {
  return dir + "/rank-" + std::to_string(rank) + ".json";
}

// Sets each failed rank's `blames` from its record (the rank it blames, when not itself) and
// its `message` (shown in rgrun's last line, never read for blame), and removes the records,
// so that a restarted attempt starts without them.
void read_failure_records(const std::string& dir, std::vector<Rank>& ranks) {
  if (dir.empty()) return;
  for (Rank& r : ranks) {
    const std::string path = error_file(dir, r.rank);
    std::ifstream in(path);
    if (!in) continue;
    const nlohmann::json record = nlohmann::json::parse(in, nullptr, false);
    in.close();
    unlink(path.c_str());
    if (!record.is_object()) continue;
    if (record.contains("message") && record["message"].is_string())
      r.message = record["message"].get<std::string>().substr(0, 500);
    std::replace(r.message.begin(), r.message.end(), '\n', ' ');
    if (!record.contains("blamed_rank")) continue;
    const auto& blamed = record["blamed_rank"];
    if (!blamed.is_number_integer()) continue;
    const int64_t named = blamed.get<int64_t>();
    if (named >= 0 && named < (int64_t(1) << 30) && named != r.rank) r.blames = int(named);
  }
}

}  // namespace rgrun
