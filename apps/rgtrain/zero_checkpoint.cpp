// --zero 1, 2 and 3's optimizer shard files; see zero_checkpoint.h.
//
// Fault-injection hook for tests: RG_TEST_HOLD_SHARD=N makes every rank stop inside the write
// of its shard of step N, after the bytes are written and before the rename, printing
// "checkpoint: rank R holding the write of its shard of step N", until a signal ends it.
#include "apps/rgtrain/zero_checkpoint.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <set>

#include "apps/rgtrain/agreement.h"
#include "apps/rgtrain/model.h"
#include "apps/rgtrain/util.h"
#include "core/atomic_file.h"
#include "data/read_file.h"
#include "nn/safetensors.h"

namespace rgtrain {
namespace {

namespace fs = std::filesystem;

// A shard file of any run (and of the older "optim-step-<S>-shard-..." names).
bool is_shard_name(const std::string& name) {
  const std::string tail = ".safetensors";
  return name.rfind("optim-", 0) == 0 && name.find("-shard-") != std::string::npos &&
         name.size() > tail.size() &&
         name.compare(name.size() - tail.size(), tail.size(), tail) == 0;
}

std::vector<fs::path> entries_of(const fs::path& dir) {
  std::vector<fs::path> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) out.push_back(e.path());
  return out;
}

void hold_if_asked(int64_t step, int64_t rank) {
  const char* s = std::getenv("RG_TEST_HOLD_SHARD");
  if (!s || std::atoll(s) != step) return;
  std::cout << "checkpoint: rank " << rank << " holding the write of its shard of step " << step
            << std::endl;
  for (;;) pause();
}

// Writes this rank's shard; returns its record. The file's bytes are made in memory first, to
// be hashed for the record (the shard is 2/N of the parameters' bytes, or 4/N in f64).
ShardRecord write_shard(const std::string& path, const rg::optim::Optimizer& opt,
                        const CheckpointIdentity& id, int64_t rank, int64_t world) {
  rg::nn::NamedTensors ts;
  for (auto& [n, t] : opt.state_dict()) ts.emplace_back(n, t);
  rg::nn::SafetensorsMetadata md;
  put_identity(md, id);
  md["zero_shard"] = std::to_string(rank);
  md["zero_shards"] = std::to_string(world);
  const std::string bytes = rg::nn::serialize_safetensors(ts, md);
  rg::AtomicFile file(path);
  file.write(bytes.data(), bytes.size());
  hold_if_asked(id.step, rank);
  file.commit();
  return {fs::path(path).filename().string(), static_cast<int64_t>(bytes.size()), fnv1a_hex(bytes)};
}

// Shard `r` of `n` of the checkpoint `id`, read and checked against its record and its identity
// (the identity first: a file of another run is named as such); fails naming the file.
rg::nn::SafetensorsContents read_shard(const std::string& ckpt_path, const CheckpointIdentity& id,
                                       const ShardRecord& record, int64_t r, int64_t n) {
  const std::string path = shard_path(ckpt_path, id, r, n);
  if (record.file != fs::path(path).filename().string())
    fail(ckpt_path, ": records shard ", r, " as '", record.file, "', not ",
         fs::path(path).filename().string(), " (its run id, step and world size)");
  if (!fs::exists(path))
    fail(ckpt_path, " names ", n, " optimizer shards, but ", path, " is missing");
  std::string bytes;
  rg::nn::SafetensorsContents file;
  try {
    bytes = rg::data::read_file(path, "--resume");
    file = rg::nn::parse_safetensors(bytes, path);
  } catch (const rg::Error& e) {
    fail(e.what());
  }
  check_belongs(path, file.metadata, id, ckpt_path);
  const std::string hash = fnv1a_hex(bytes);
  if (int64_t(bytes.size()) != record.bytes || hash != record.fnv1a)
    fail(path, " does not belong to ", ckpt_path, ": it has ", bytes.size(), " bytes, fnv1a ", hash,
         "; the checkpoint recorded ", record.bytes, " bytes, fnv1a ", record.fnv1a,
         " (the file was replaced or changed after the checkpoint was committed)");
  auto& md = file.metadata;
  if (md["zero_shard"] != std::to_string(r) || md["zero_shards"] != std::to_string(n))
    fail(path, ": holds shard '", md["zero_shard"], "' of '", md["zero_shards"], "', but ",
         ckpt_path, " names it shard ", r, " of ", n);
  return file;
}

}  // namespace

std::string shard_path(const std::string& ckpt_path, const CheckpointIdentity& id, int64_t rank,
                       int64_t world) {
  const fs::path dir = fs::path(ckpt_path).parent_path();
  return (dir / ("optim-" + id.run_id + "-step-" + std::to_string(id.step) + "-shard-" +
                 std::to_string(rank) + "-of-" + std::to_string(world) + ".safetensors"))
      .string();
}

std::vector<ShardRecord> save_zero_shard(const std::string& ckpt_path,
                                         const rg::optim::Optimizer& opt,
                                         const CheckpointIdentity& id,
                                         rg::dist::ProcessGroup& group) {
  const int64_t rank = group.rank(), world = group.size();
  std::string status;  // "ok <record>" or "error: <what>"
  try {
    fs::create_directories(fs::path(ckpt_path).parent_path());
    status =
        "ok " + write_shard(shard_path(ckpt_path, id, rank, world), opt, id, rank, world).encode();
  } catch (const std::exception& e) {
    status = std::string("error: ") + e.what();
  }
  // The barrier between the shards' commits and rank 0's commit of the ckpt.
  const std::vector<std::string> all = allgather_bytes(group, status);
  std::vector<ShardRecord> records;
  rg::nn::SafetensorsMetadata as_metadata;
  for (size_t r = 0; r < all.size(); ++r) {
    if (all[r].rfind("ok ", 0) != 0)
      fail("rank ", r, " could not save its optimizer shard: ", all[r].substr(7));
    as_metadata[shard_record_key(int64_t(r))] = all[r].substr(3);
    records.push_back(shard_record("rank " + std::to_string(r), as_metadata, int64_t(r)));
  }
  return records;
}

rg::nn::StateDict read_zero_shards(const std::string& ckpt_path, const CheckpointIdentity& id,
                                   const std::vector<ShardRecord>& shards,
                                   const rg::optim::Optimizer& opt, rg::Device device,
                                   rg::DType moment_dtype) {
  std::vector<rg::nn::StateDict> dicts;
  const int64_t n = int64_t(shards.size());
  for (int64_t r = 0; r < n; ++r) {
    const std::string path = shard_path(ckpt_path, id, r, n);
    rg::nn::SafetensorsContents file = read_shard(ckpt_path, id, shards[r], r, n);
    check_optimizer_state(path, file.tensors, "", optimizer_step_field(path, file.metadata),
                          moment_dtype);
    rg::nn::StateDict d;
    for (auto& [name, t] : file.tensors) d.insert(name, t.to(device));
    dicts.push_back(std::move(d));
  }
  return opt.merge_state_dicts(dicts);
}

void remove_other_shards(const std::string& ckpt_path, const std::vector<ShardRecord>& keep) {
  std::set<std::string> kept;
  for (const ShardRecord& r : keep) kept.insert(r.file);
  for (const fs::path& p : entries_of(fs::path(ckpt_path).parent_path())) {
    const std::string name = p.filename().string();
    if (!is_shard_name(name) || kept.count(name)) continue;
    std::error_code ec;
    fs::remove(p, ec);  // best effort: the committed ckpt never names it
  }
}

void remove_stale_shard_temps(const std::string& ckpt_path) {
  std::set<std::string> targets;  // the shard paths whose temp files ".<name>.tmp.*" remain
  for (const fs::path& p : entries_of(fs::path(ckpt_path).parent_path())) {
    const std::string name = p.filename().string();
    const size_t tmp = name.find(".tmp.");
    if (name.size() > 1 && name[0] == '.' && tmp != std::string::npos &&
        is_shard_name(name.substr(1, tmp - 1)))
      targets.insert((p.parent_path() / name.substr(1, tmp - 1)).string());
  }
  for (const std::string& target : targets)
    for (const std::string& stale : rg::remove_stale_temp_files(target))
      std::cout << "rgtrain: removed " << stale << ", left by an interrupted save\n";
}

}  // namespace rgtrain
