// rgtrain's checkpoints; see checkpoint.h.
#include "apps/rgtrain/checkpoint.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <map>
#include <sstream>

#include "apps/rgtrain/model.h"
#include "apps/rgtrain/util.h"
#include "apps/rgtrain/zero_checkpoint.h"
#include "core/atomic_file.h"
#include "nn/safetensors.h"

namespace rgtrain {
namespace {

// The test hook of checkpoint.h: blocks until a signal when `step` is the one to hold.
void hold_if_asked(int64_t step) {
  const char* s = std::getenv("RG_TEST_HOLD_CHECKPOINT");
  if (!s || std::atoll(s) != step) return;
  std::cout << "checkpoint: holding the write of step " << step << std::endl;
  for (;;) pause();
}

int64_t parse_count(const std::string& path, const char* field, const std::string& text) {
  char* end = nullptr;
  const long long v = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || v < 0)
    fail(path, ": metadata '", field, "' is '", text, "', not a count");
  return v;
}

// `config` (setup.cpp's config_string) without its " world=N" field; N goes to *world.
std::string without_world(const std::string& config, int64_t* world) {
  const size_t at = config.find(" world=");
  if (at == std::string::npos) return config;
  const size_t end = std::min(config.find(' ', at + 1), config.size());
  if (world) *world = std::atoll(config.substr(at + 7, end - at - 7).c_str());
  return config.substr(0, at) + config.substr(end);
}

// "lr 0.002 in the file, 0.003 in this run; ..." for the "key=value" fields of two config
// strings that differ (the world size aside: a checkpoint may change it).
std::string config_differences(const std::string& file, const std::string& run) {
  auto fields = [](const std::string& config) {
    std::map<std::string, std::string> out;
    std::istringstream words(config);
    for (std::string word; words >> word;)
      if (const size_t eq = word.find('='); eq != std::string::npos)
        out[word.substr(0, eq)] = word.substr(eq + 1);
    return out;
  };
  std::map<std::string, std::string> in_file = fields(file), in_run = fields(run);
  std::string out;
  for (const auto* side : {&in_file, &in_run})
    for (const auto& [key, value] : *side) {
      if (key == "world" || (side == &in_run && in_file.count(key))) continue;
      const std::string a = in_file.count(key) ? in_file[key] : "(none)";
      const std::string b = in_run.count(key) ? in_run[key] : "(none)";
      if (a != b) out += (out.empty() ? "" : "; ") + key + " " + a + " in the file, " + b + " here";
    }
  return out;
}

// The errors of load_optimizer_state when the state is of the other kind.
[[noreturn]] void fail_kind(const std::string& path, const Resumed& r) {
  const char* fresh = ", or pass --reset-optimizer to start the moments afresh";
  if (r.zero_shards > 0)
    fail(path, ": its optimizer state is sharded into ", r.zero_shards,
         " files by --zero 1, 2 or 3; resume it with --zero 1, 2 or 3 under rgrun (at any "
         "number of ranks)",
         fresh);
  fail(path, ": its optimizer state is whole (saved without --zero); resume it without --zero",
       fresh);
}

// The identity a checkpoint's metadata gives (run_id, ckpt_id, step, optimizer_step).
CheckpointIdentity identity_of(const std::string& path, const rg::nn::SafetensorsMetadata& md,
                               int64_t step) {
  auto run = md.find("run_id"), ckpt = md.find("ckpt_id");
  if (run == md.end() || ckpt == md.end())
    fail(path,
         ": its metadata has no run_id and ckpt_id (written by an older rgtrain), so the "
         "files of the checkpoint cannot be checked; resume it with the rgtrain that wrote it");
  CheckpointIdentity id{run->second, step, optimizer_step_field(path, md)};
  if (id.ckpt_id() != ckpt->second)
    fail(path, ": its ckpt_id '", ckpt->second, "' is not its run_id and step ('", id.ckpt_id(),
         "')");
  return id;
}

}  // namespace

std::string checkpoint_path(const Args& a) {
  return a.checkpoint.empty() ? "" : a.checkpoint + "/ckpt.safetensors";
}

void remove_stale_checkpoint_temps(const std::string& path) {
  for (const std::string& stale : rg::remove_stale_temp_files(path))
    std::cout << "rgtrain: removed " << stale << ", left by an interrupted save\n";
  remove_stale_shard_temps(path);
}

void save_checkpoint(const std::string& path, rg::nn::Module& model,
                     const rg::nn::SafetensorsMetadata& model_md, rg::optim::Optimizer& opt,
                     const std::string& config, const CheckpointPosition& at, uint64_t seed,
                     const CheckpointIdentity& id, const std::vector<ShardRecord>& shards) {
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  rg::nn::NamedTensors ts;
  for (auto& [n, t] : model.state_dict()) ts.emplace_back(n, t);
  // A sharded state is only this rank's share: each rank saved its own file.
  if (!opt.state_is_sharded())
    for (auto& [n, t] : opt.state_dict()) ts.emplace_back("optim." + n, t);
  rg::nn::SafetensorsMetadata md = model_md;
  put_identity(md, id);
  md["config"] = config;
  md["data_epoch"] = std::to_string(at.data_epoch);
  md["data_offset"] = std::to_string(at.data_offset);
  md["rng"] = "seed=" + std::to_string(seed) + " (data order is a function of seed, step)";
  if (!shards.empty()) md["zero_shards"] = std::to_string(shards.size());
  for (size_t r = 0; r < shards.size(); ++r) md[shard_record_key(int64_t(r))] = shards[r].encode();
  rg::AtomicFile file(path);
  rg::nn::write_safetensors(file, ts, md);
  hold_if_asked(at.step);
  file.commit();
  remove_other_shards(path, shards);  // only now: until the commit the older ckpt names them
}

Resumed resume_from_checkpoint(const std::string& path, const Args& a, const std::string& config,
                               rg::nn::Module& model, const rg::nn::SafetensorsMetadata& model_md,
                               rg::Device device) {
  auto file = load_checked(path, "--resume");
  auto& md = file.metadata;
  Resumed r;
  if (without_world(md["config"], &r.world) != without_world(config, nullptr))
    fail(path, ": written with another config (", config_differences(md["config"], config),
         "): written with config '", md["config"], "', this run has '", config, "'");
  r.step = parse_count(path, "step", md["step"]);
  if (r.step > a.steps) fail(path, ": at step ", r.step, ", beyond --steps ", a.steps);
  r.id = identity_of(path, md, r.step);
  if (md.count("zero_shards")) r.zero_shards = parse_count(path, "zero_shards", md["zero_shards"]);
  for (int64_t k = 0; k < r.zero_shards; ++k) r.shards.push_back(shard_record(path, md, k));
  load_into(model, model_md, file, path);
  if (!model.parameters().empty()) r.moment_dtype = model.parameters().front().dtype();
  check_optimizer_state(path, file.tensors, "optim.", r.id.optimizer_step, r.moment_dtype);
  for (auto& [n, t] : file.tensors)
    if (n.rfind("optim.", 0) == 0) r.optim.insert(n.substr(6), t.to(device));
  return r;
}

void load_optimizer_state(const Resumed& r, const std::string& path, const Args& a,
                          rg::optim::Optimizer& opt, rg::Device device) {
  const bool sharded = opt.state_is_sharded();
  const bool has_state = r.zero_shards > 0 || !r.optim.empty();
  if (!has_state && r.step > 0 && !a.reset_optimizer)
    fail(path, ": holds no optimizer state (step ", r.step,
         "); resuming would restart the optimizer's moments. Pass --reset-optimizer to do so");
  const bool other_kind = has_state && sharded != (r.zero_shards > 0);
  if (other_kind && !a.reset_optimizer) fail_kind(path, r);
  if (sharded && r.zero_shards > 0 && !other_kind) {
    const rg::nn::StateDict merged =
        read_zero_shards(path, r.id, r.shards, opt, device, r.moment_dtype);
    try {
      opt.load_state_dict(merged);
    } catch (const rg::Error& e) {
      fail(path, ": its optimizer shards do not fit this run: ", e.what());
    }
    return;
  }
  try {
    opt.load_state_dict(other_kind ? rg::nn::StateDict{} : r.optim);
  } catch (const rg::Error& e) {
    std::string why = e.what();  // names "state.N.x"; the file has it as "optim.state.N.x"
    for (size_t at = 0; (at = why.find("'state.", at)) != std::string::npos; at += 8)
      why.insert(at + 1, "optim.");
    fail(path, ": its optimizer state does not fit this run: ", why);
  }
}

}  // namespace rgtrain
