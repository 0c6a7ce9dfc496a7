// --zero 1's optimizer shard files; see zero_checkpoint.h.
#include "apps/rgtrain/zero_checkpoint.h"

#include <cstdio>
#include <filesystem>
#include <iostream>
#include <set>

#include "apps/rgtrain/agreement.h"
#include "apps/rgtrain/model.h"
#include "apps/rgtrain/util.h"
#include "core/atomic_file.h"
#include "nn/safetensors.h"

namespace rgtrain {
namespace {

namespace fs = std::filesystem;

struct ShardName {
  long long step = 0, rank = 0, world = 0;
};

// Parses "optim-step-<S>-shard-<r>-of-<N>.safetensors"; false for any other name.
bool parse_shard_name(const std::string& name, ShardName& out) {
  int end = 0;
  const int n = std::sscanf(name.c_str(), "optim-step-%lld-shard-%lld-of-%lld.safetensors%n",
                            &out.step, &out.rank, &out.world, &end);
  return n == 3 && size_t(end) == name.size();
}

std::vector<fs::path> entries_of(const fs::path& dir) {
  std::vector<fs::path> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) out.push_back(e.path());
  return out;
}

void write_shard(const std::string& path, const rg::optim::Optimizer& opt, int64_t step,
                 int64_t rank, int64_t world) {
  rg::nn::NamedTensors ts;
  for (auto& [n, t] : opt.state_dict()) ts.emplace_back(n, t);
  rg::nn::SafetensorsMetadata md;
  md["step"] = std::to_string(step);
  md["zero_shard"] = std::to_string(rank);
  md["zero_shards"] = std::to_string(world);
  rg::AtomicFile file(path);
  rg::nn::write_safetensors(file, ts, md);
  file.commit();
}

}  // namespace

std::string shard_path(const std::string& ckpt_path, int64_t step, int64_t rank, int64_t world) {
  const fs::path dir = fs::path(ckpt_path).parent_path();
  return (dir / ("optim-step-" + std::to_string(step) + "-shard-" + std::to_string(rank) + "-of-" +
                 std::to_string(world) + ".safetensors"))
      .string();
}

void save_zero_shard(const std::string& ckpt_path, const rg::optim::Optimizer& opt, int64_t step,
                     rg::dist::ProcessGroup& group) {
  const int64_t rank = group.rank(), world = group.size();
  std::string status = "ok";  // or "error: <what>"
  try {
    fs::create_directories(fs::path(ckpt_path).parent_path());
    write_shard(shard_path(ckpt_path, step, rank, world), opt, step, rank, world);
  } catch (const std::exception& e) {
    status = std::string("error: ") + e.what();
  }
  // The barrier between the shards' commits and rank 0's commit of the ckpt.
  const std::vector<std::string> all = allgather_bytes(group, status);
  for (size_t r = 0; r < all.size(); ++r)
    if (all[r] != "ok") fail("rank ", r, " could not save its optimizer shard: ", all[r].substr(7));
}

rg::nn::StateDict read_zero_shards(const std::string& ckpt_path, int64_t step, int64_t shards,
                                   const rg::optim::Optimizer& opt, rg::Device device) {
  std::vector<rg::nn::StateDict> dicts;
  for (int64_t r = 0; r < shards; ++r) {
    const std::string path = shard_path(ckpt_path, step, r, shards);
    if (!fs::exists(path))
      fail(ckpt_path, " names ", shards, " optimizer shards of step ", step, ", but ", path,
           " is missing");
    auto file = load_checked(path, "--resume");
    auto& md = file.metadata;
    if (md["step"] != std::to_string(step) || md["zero_shards"] != std::to_string(shards))
      fail(path, ": holds step '", md["step"], "' of '", md["zero_shards"], "' shards, but ",
           ckpt_path, " is at step ", step, " with ", shards, " shards");
    rg::nn::StateDict d;
    for (auto& [n, t] : file.tensors) d.insert(n, t.to(device));
    dicts.push_back(std::move(d));
  }
  return opt.merge_state_dicts(dicts);
}

void remove_other_shards(const std::string& ckpt_path, int64_t step, int64_t shards) {
  for (const fs::path& p : entries_of(fs::path(ckpt_path).parent_path())) {
    ShardName s;
    if (!parse_shard_name(p.filename().string(), s)) continue;
    if (s.step == step && s.world == shards && s.rank < shards) continue;
    std::error_code ec;
    fs::remove(p, ec);  // best effort: the committed ckpt never names it
  }
}

void remove_stale_shard_temps(const std::string& ckpt_path) {
  std::set<std::string> targets;  // the shard paths whose temp files ".<name>.tmp.*" remain
  for (const fs::path& p : entries_of(fs::path(ckpt_path).parent_path())) {
    const std::string name = p.filename().string();
    const size_t tmp = name.find(".tmp.");
    ShardName s;
    if (name.size() > 1 && name[0] == '.' && tmp != std::string::npos &&
        parse_shard_name(name.substr(1, tmp - 1), s))
      targets.insert((p.parent_path() / name.substr(1, tmp - 1)).string());
  }
  for (const std::string& target : targets)
    for (const std::string& stale : rg::remove_stale_temp_files(target))
      std::cout << "rgtrain: removed " << stale << ", left by an interrupted save\n";
}

}  // namespace rgtrain
