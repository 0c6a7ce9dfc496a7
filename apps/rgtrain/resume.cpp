// --resume always / auto; see resume.h.
#include "apps/rgtrain/resume.h"

#include <filesystem>
#include <iostream>

#include "apps/rgtrain/agreement.h"
#include "apps/rgtrain/checkpoint.h"

namespace rgtrain {
namespace {

// Rank 0's answer, given to every rank: is there a checkpoint to resume from?
bool checkpoint_found(RunState& s) {
  std::string found = s.lead && std::filesystem::exists(s.ckpt_path) ? "yes" : "no";
  if (s.group) found = allgather_bytes(*s.group, found)[0];
  return found == "yes";
}

int64_t load(RunState& s) {
  const int64_t step =
      resume_from_checkpoint(s.ckpt_path, s.args, s.config, *s.model, *s.opt, s.device);
  if (s.group) check_agreement(*s.group, {{"the step of " + s.ckpt_path, std::to_string(step)}});
  return step;
}

}  // namespace

int64_t resume_if_asked(RunState& s) {
  if (s.args.resume.empty()) return 0;
  if (s.args.resume == "always" || checkpoint_found(s)) {
    const int64_t step = load(s);
    if (s.lead && s.args.resume == "auto")
      std::cout << "rgtrain: --resume auto: resuming from step " << step << " of " << s.ckpt_path
                << "\n";
    return step;
  }
  if (s.lead)
    std::cout << "rgtrain: --resume auto: no checkpoint in " << s.args.checkpoint
              << ", starting fresh\n";
  return 0;
}

}  // namespace rgtrain
