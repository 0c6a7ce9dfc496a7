// rgtrain's checkpoints; see checkpoint.h.
#include "apps/rgtrain/checkpoint.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <iostream>

#include "apps/rgtrain/model.h"
#include "apps/rgtrain/util.h"
#include "core/atomic_file.h"
#include "nn/optim/zero_adamw.h"
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

int64_t parse_step(const std::string& path, const std::string& text) {
  char* end = nullptr;
  const long long v = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || v < 0)
    fail(path, ": metadata 'step' is '", text, "', not a step number");
  return v;
}

}  // namespace

std::string checkpoint_path(const Args& a) {
  return a.checkpoint.empty() ? "" : a.checkpoint + "/ckpt.safetensors";
}

void remove_stale_checkpoint_temps(const std::string& path) {
  for (const std::string& stale : rg::remove_stale_temp_files(path))
    std::cout << "rgtrain: removed " << stale << ", left by an interrupted save\n";
}

void save_checkpoint(const std::string& path, rg::nn::Module& model, rg::optim::Optimizer& opt,
                     const std::string& config, const CheckpointPosition& at, uint64_t seed) {
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  rg::nn::NamedTensors ts;
  for (auto& [n, t] : model.state_dict()) ts.emplace_back(n, t);
  // ZeroAdamW holds only this rank's shards: not saved (no per-rank files yet).
  if (!dynamic_cast<rg::optim::ZeroAdamW*>(&opt))
    for (auto& [n, t] : opt.state_dict()) ts.emplace_back("optim." + n, t);
  rg::nn::SafetensorsMetadata md = model_metadata(model);
  md["step"] = std::to_string(at.step);
  md["config"] = config;
  md["data_epoch"] = std::to_string(at.data_epoch);
  md["data_offset"] = std::to_string(at.data_offset);
  md["rng"] = "seed=" + std::to_string(seed) + " (data order is a function of seed, step)";
  rg::AtomicFile file(path);
  rg::nn::write_safetensors(file, ts, md);
  hold_if_asked(at.step);
  file.commit();
}

int64_t resume_from_checkpoint(const std::string& path, const Args& a, const std::string& config,
                               rg::nn::Module& model, rg::optim::Optimizer& opt,
                               rg::Device device) {
  auto file = load_checked(path, "--resume");
  auto& md = file.metadata;
  if (md["config"] != config)
    fail(path, ": written with config '", md["config"], "', this run has '", config, "'");
  const int64_t step = parse_step(path, md["step"]);
  if (step > a.steps) fail(path, ": at step ", step, ", beyond --steps ", a.steps);
  load_into(model, file, path);
  rg::nn::StateDict od;
  for (auto& [n, t] : file.tensors)
    if (n.rfind("optim.", 0) == 0) od.insert(n.substr(6), t.to(device));
  if (od.empty() && step > 0 && !a.reset_optimizer)
    fail(path, ": holds no optimizer state (step ", step,
         "); resuming would restart the optimizer's moments. Pass --reset-optimizer to do so");
  opt.load_state_dict(od);
  return step;
}

}  // namespace rgtrain
