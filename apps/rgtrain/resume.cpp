// --resume always / auto; see resume.h.
#include "apps/rgtrain/resume.h"

#include <filesystem>
#include <iostream>

#include "apps/rgtrain/agreement.h"
#include "apps/rgtrain/checkpoint.h"
#include "apps/rgtrain/util.h"

namespace rgtrain {
namespace {

// Rank 0's answer, given to every rank: is there a checkpoint to resume from?
bool checkpoint_found(RunState& s) {
  std::string found = s.lead && std::filesystem::exists(s.ckpt_path) ? "yes" : "no";
  if (s.group) found = allgather_bytes(*s.group, found)[0];
  return found == "yes";
}

// A checkpoint of another world size resumes with the same global batches only when an epoch
// has as many steps at both (resume.h).
void check_same_data_order(const RunState& s, int64_t saved_world) {
  const Args& a = s.args;
  if (saved_world < 1 || a.global_batch % saved_world != 0)
    fail(s.ckpt_path, ": its config names world size ", saved_world, ", which does not divide ",
         "--global-batch ", a.global_batch);
  const Schedule then(s.data.train->size(), saved_world, a.global_batch / saved_world, a.seed);
  if (then.per_epoch() != s.schedule->per_epoch())
    fail(s.ckpt_path, ": written at world size ", saved_world, "; at world size ", s.world,
         " an epoch has ", s.schedule->per_epoch(), " steps instead of ", then.per_epoch(),
         ", so the data order would differ (resume it at world size ", saved_world, ")");
  if (s.lead)
    std::cout << "rgtrain: resuming a world-size-" << saved_world << " checkpoint at world size "
              << s.world << "\n";
}

int64_t load(RunState& s) {
  Resumed r = resume_from_checkpoint(s.ckpt_path, s.args, s.config, *s.model, s.model_md, s.device);
  // The id too: ranks that read other directories (or another file under the same name) at
  // the same step would each train on from their own state.
  if (s.group)
    check_agreement(*s.group,
                    {{"the step of --checkpoint's ckpt.safetensors", std::to_string(r.step)},
                     {"the checkpoint id of --checkpoint's ckpt.safetensors", r.id.ckpt_id()}});
  if (r.world != s.world) check_same_data_order(s, r.world);
  const int64_t step = r.step;
  s.resumed = std::move(r);
  if (s.opt) resume_optimizer(s);
  return step;
}

}  // namespace

void resume_optimizer(RunState& s) {
  if (!s.resumed) return;
  load_optimizer_state(*s.resumed, s.ckpt_path, s.args, *s.opt, s.device);
  s.resumed.reset();
}

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
