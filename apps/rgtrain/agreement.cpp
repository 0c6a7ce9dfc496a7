// The start-up agreement check; see agreement.h.
#include "apps/rgtrain/agreement.h"

#include <algorithm>
#include <cstring>
#include <map>

#include "apps/rgtrain/util.h"
#include "core/hash.h"
#include "data/read_file.h"
#include "nn/optim/decay_groups.h"
#include "ringgrad.h"

namespace rgtrain {
namespace {

std::string encode(const Settings& s) {
  std::string out;
  for (auto& [name, value] : s) out += name + '\0' + value + '\0';
  return out;
}

Settings decode(const std::string& bytes) {
  Settings s;
  size_t pos = 0;
  while (pos < bytes.size()) {
    const size_t a = bytes.find('\0', pos), b = bytes.find('\0', a + 1);
    if (a == std::string::npos || b == std::string::npos) break;
    s.emplace_back(bytes.substr(pos, a - pos), bytes.substr(a + 1, b - a - 1));
    pos = b + 1;
  }
  return s;
}

// "rank 0, 2: 1337; rank 1: 7"
std::string who_holds_what(const std::map<std::string, std::vector<int>>& by_value) {
  std::string out;
  for (auto& [value, ranks] : by_value) {
    if (!out.empty()) out += "; ";
    out += ranks.size() == 1 ? "rank " : "ranks ";
    for (size_t i = 0; i < ranks.size(); ++i) out += (i ? ", " : "") + std::to_string(ranks[i]);
    out += ": " + value;
  }
  return out;
}

}  // namespace

Settings shared_settings(const Args& a, int64_t world) {
  auto str = [](auto v) { return std::to_string(v); };
  return {{"--model", a.model},
          {"--layers", str(a.layers)},
          {"--heads", str(a.heads)},
          {"--width", str(a.width)},
          {"--context", str(a.context)},
          {"--vocab", str(a.vocab)},
          {"--digits", str(a.digits)},
          {"--seed", str(a.seed)},
          {"--steps", str(a.steps)},
          {"--global-batch", str(a.global_batch)},
          {"--micro-batch", str(a.micro_batch)},
          {"--memory-budget", a.memory_budget},
          {"--optimizer", a.optimizer},
          {"--lr", fmt("%.17g", a.lr)},
          {"--warmup", str(a.warmup)},
          {"--beta1", fmt("%.17g", a.beta1)},
          {"--beta2", fmt("%.17g", a.beta2)},
          {"--eps", fmt("%.17g", a.eps)},
          {"--weight-decay", fmt("%.17g", a.weight_decay)},
          {"--no-decay", rg::optim::to_string(rg::optim::parse_no_decay(a.no_decay))},
          {"--clip", fmt("%.17g", a.clip)},
          {"--precision", a.precision},
          {"--reduce-dtype", a.reduce_dtype},
          {"--zero", str(a.zero)},
          {"--backend", a.backend},
          // What changes the sequence of collectives: ranks that differ here would pair
          // mismatched all-reduces, so it is named before the first one.
          {"--bucket-cap-mb", fmt("%.17g", a.bucket_cap_mb)},
          {"--grad-as-bucket-view", a.grad_view ? "on" : "off"},
          {"--no-overlap", a.no_overlap ? "on" : "off"},
          {"--checkpoint", a.checkpoint.empty() ? "off" : "on"},
          {"--checkpoint-every", str(a.checkpoint_every)},
          {"--stop-after", str(a.stop_after)},
          {"--trace", a.trace.empty() ? "off" : "on"},
          {"--verify", a.verify ? "on" : "off"},
          {"--resume", a.resume.empty() ? "no" : a.resume},
          {"WORLD_SIZE", str(world)},
          {"--data file", file_fingerprint(a.data, "--data")},
          {"--init file", file_fingerprint(a.init, "--init")}};
}

std::string file_fingerprint(const std::string& path, const char* flag) {
  if (path.empty()) return "none";
  std::string bytes;
  try {
    bytes = rg::data::read_file(path, flag);
  } catch (const rg::Error& e) {
    fail(e.what());
  }
  char hash[32];
  std::snprintf(hash, sizeof hash, "%016llx",
                static_cast<unsigned long long>(rg::fnv1a(bytes.data(), bytes.size())));
  return "size " + std::to_string(bytes.size()) + " bytes, fnv1a " + hash;
}

std::vector<std::string> allgather_bytes(rg::dist::ProcessGroup& group, const std::string& bytes) {
  const int64_t world = group.size();
  rg::Tensor my_len = rg::scalar_tensor(double(bytes.size()), rg::DType::i64).reshape({1});
  rg::Tensor lens = rg::zeros({world}, rg::DType::i64);
  group.allgather(lens, my_len)->wait();
  int64_t longest = 0;
  for (int64_t r = 0; r < world; ++r) longest = std::max(longest, lens.data<int64_t>()[r]);
  const int64_t words = (longest + 7) / 8;
  rg::Tensor mine = rg::zeros({words}, rg::DType::i64);
  if (!bytes.empty()) std::memcpy(mine.data_ptr(), bytes.data(), bytes.size());
  rg::Tensor all = rg::zeros({world * words}, rg::DType::i64);
  group.allgather(all, mine)->wait();
  std::vector<std::string> out;
  const char* base = static_cast<const char*>(all.data_ptr());
  for (int64_t r = 0; r < world; ++r)
    out.emplace_back(base + r * words * 8, size_t(lens.data<int64_t>()[r]));
  return out;
}

void check_agreement(rg::dist::ProcessGroup& group, const Settings& mine) {
  const std::vector<std::string> all = allgather_bytes(group, encode(mine));
  std::vector<Settings> settings;
  for (const std::string& s : all) settings.push_back(decode(s));
  for (size_t i = 0; i < mine.size(); ++i) {
    std::map<std::string, std::vector<int>> by_value;
    for (size_t r = 0; r < settings.size(); ++r) {
      auto same_name = [&](const auto& setting) { return setting.first == mine[i].first; };
      auto it = std::find_if(settings[r].begin(), settings[r].end(), same_name);
      const bool has = it != settings[r].end();
      by_value[has ? it->second : "(not sent: another rgtrain version)"].push_back(int(r));
    }
    if (by_value.size() > 1)
      fail("the ranks disagree on ", mine[i].first, ": ", who_holds_what(by_value),
           " (every rank must be started with the same settings and files)");
  }
}

}  // namespace rgtrain
