// The training loop; see training.h.
#include "apps/rgtrain/training.h"

#include <unistd.h>

#include <cmath>
#include <iostream>

#include "apps/rgtrain/checkpoint.h"
#include "apps/rgtrain/evaluate.h"
#include "apps/rgtrain/graph_step.h"
#include "apps/rgtrain/metrics.h"
#include "apps/rgtrain/train_step.h"
#include "apps/rgtrain/util.h"
#include "apps/rgtrain/zero_checkpoint.h"
#include "core/cpu_capability.h"

namespace rgtrain {
namespace {

StepContext context_of(RunState& s) {
  StepContext c{*s.model,    *s.opt,        s.ddp.get(), *s.data.train,           s.device,
                s.args.clip, s.trace.get(), int(s.rank), !s.args.allow_nonfinite, s.group.get()};
  c.autocast = s.args.autocast_bf16();
  c.fsdp = s.fsdp.get();
  return c;
}

// This rank's micro-batches of `step`, and the loss denominator (see train_step.h); a
// captured and replayed step under --cuda-graphs.
StepResult run_step(RunState& s, StepContext& c, int64_t step, GraphedSteps* graphed) {
  const double global_count = count_targets(*s.data.train, s.schedule->global_indices(step));
  const double denom = std::max(1.0, global_count) / double(s.world);
  std::vector<std::vector<int64_t>> micro;
  for (int64_t k = 0; k < s.accum; ++k)
    micro.push_back(s.schedule->indices(s.rank, step, k * s.args.micro_batch, s.args.micro_batch));
  if (graphed) return graphed->step(c, micro, denom, s.lr_of(step));
  return train_step(c, micro, denom, s.lr_of(step));
}

// Every rank: with a sharded optimizer state (--zero 1, 2, 3) each writes its shard first
// (collective); then rank 0 commits the ckpt that names them, with the whole weights (under
// --zero 3 gathered for it by every rank). Every file carries the checkpoint's identity: this
// run's id, the step, and the optimizer's step count (equal on every rank when sharded).
void save(RunState& s, int64_t step) {
  if (s.ckpt_path.empty()) return;
  const bool sharded = s.opt->state_is_sharded();
  const CheckpointIdentity id{s.run_id, step, optimizer_step_of(s.opt->state_dict())};
  std::vector<ShardRecord> shards;
  if (sharded) shards = save_zero_shard(s.ckpt_path, *s.opt, id, *s.group);
  with_full_parameters(s, [&] {
    if (!s.lead) return;
    save_checkpoint(s.ckpt_path, *s.model, s.model_md, *s.opt, s.config,
                    {step, s.schedule->epoch_of(step), s.schedule->offset_of(step)}, s.args.seed,
                    id, shards);
  });
}

// --verify: after steps 1, 10, 100, ... (not the last: verify reads the final weights), a
// copy of the weights, compared with the reference at the same step (collective under
// --zero 3).
void snapshot_for_verify(RunState& s, int64_t done) {
  int64_t power = 1;
  while (power < done) power *= 10;
  if (!s.args.verify || power != done || done >= s.args.steps) return;
  with_full_parameters(s, [&] {
    if (!s.lead) return;
    rg::NoGradGuard no_grad;
    std::vector<rg::Tensor> copies;
    for (const rg::Tensor& p : s.model->parameters()) copies.push_back(p.clone());
    s.verify_snapshots.emplace_back(done, std::move(copies));
  });
}

}  // namespace

void check_finite(RunState& s, int64_t step, double loss, double grad_norm) {
  if (s.args.allow_nonfinite) return;
  std::string bad;  // every rank calls this at the same steps (loss and norm are global)
  with_full_parameters(s, [&] { bad = first_nonfinite_parameter(*s.model); });
  if (std::isfinite(loss) && std::isfinite(grad_norm) && bad.empty()) return;
  const std::string bad_grad = bad.empty() ? first_nonfinite_parameter(*s.model, true) : "";
  const std::string values = !bad.empty()        ? "first non-finite parameter " + bad
                             : !bad_grad.empty() ? "the weights are finite (the step was not "
                                                   "applied); first non-finite gradient " +
                                                       bad_grad
                                                 : std::string("all parameters are finite");
  const char* opt_out = " (--allow-nonfinite to continue anyway)";
  if (step == s.start_step) {
    const std::string from = !s.args.init.empty() ? " (from --init '" + s.args.init + "')"
                             : step > 0           ? " (from --resume '" + s.ckpt_path + "')"
                                                  : "";
    fail("the initial weights (before step ", step + 1, ")", from, " are not finite: ", values,
         opt_out);
  }
  fail("training stopped at step ", step, ": loss ", fmt("%g", loss), ", gradient norm ",
       fmt("%g", grad_norm), "; ", values, opt_out);
}

TrainSummary train(RunState& s) {
  const Args& a = s.args;
  StepContext c = context_of(s);
  MetricsWriter metrics(s.lead ? a.metrics : "", s.start_step > 0);
  const bool tty = isatty(1);
  if (s.lead)
    std::cout << "rgtrain: " << s.config << " | accum " << s.accum << " | params "
              << s.model->num_parameters() << " | steps " << s.start_step << "->" << a.steps
              << " | cpu " << rg::cpu_capability_name(rg::cpu_capability()) << "\n"
              << std::flush;
  check_finite(s, s.start_step, 0, 0);  // the weights from --init or --resume
  if (a.cuda_graphs && s.world > 1)
    fail("--cuda-graphs is not supported with DDP (world ", s.world, "); run one process");
  auto graphed = a.cuda_graphs ? std::make_unique<GraphedSteps>() : nullptr;
  TrainSummary sum;
  MemoryReport first(s.device, "first step"), second(s.device, "second step");
  for (int64_t step = s.start_step; step < a.steps; ++step) {
    const int64_t nth = step - s.start_step;
    c.memory = !a.memory_report ? nullptr : nth == 0 ? &first : nth == 1 ? &second : nullptr;
    const StepResult r = run_step(s, c, step, graphed.get());
    if (c.memory && s.lead) std::cout << c.memory->table() << std::flush;
    const int64_t done = step + 1;
    // A parameter scan only when the cheap signs (loss, gradient norm) are bad.
    if (!std::isfinite(r.loss) || !std::isfinite(r.grad_norm))
      check_finite(s, done, r.loss, r.grad_norm);
    sum.train_seconds += r.seconds;
    sum.last_loss = r.loss;
    snapshot_for_verify(s, done);
    if (a.checkpoint_every > 0 && done % a.checkpoint_every == 0 && done < a.steps) save(s, done);
    StepReport rep;
    rep.step = done;
    rep.steps = a.steps;
    rep.loss = r.loss;
    rep.lr = s.lr_of(step);
    rep.grad_norm = r.grad_norm;
    rep.seconds = r.seconds;
    rep.tokens = double(a.global_batch * s.data.train->context_length());
    rep.peak_bytes = rg::memory_stats(s.device).peak_allocated;
    if (s.ddp) {
      rep.comm_seconds = s.ddp->reducer().stats().comm_seconds;
      rep.hidden_seconds = s.ddp->reducer().stats().hidden_seconds;
    }
    if (s.data.addition && a.eval_every > 0 && done % a.eval_every == 0 && done < a.steps)
      with_full_parameters(s, [&] {  // collective under --zero 3; rank 0 evaluates
        if (s.lead) rep.held_out_accuracy = held_out_accuracy(s, 500);
      });
    if (s.lead) {
      rep.eta_seconds = sum.train_seconds / double(done - s.start_step) * double(a.steps - done);
      print_progress(rep, a.print_every, tty);
      metrics.write(rep);
    }
    sum.tokens += rep.tokens;
    if (a.stop_after > 0 && done == a.stop_after && done < a.steps) {  // every rank stops
      save(s, done);
      if (s.lead) std::cout << "stopped after step " << done << " (--stop-after)\n";
      sum.stopped_early = true;
      return sum;
    }
  }
  check_finite(s, a.steps, sum.last_loss, 0);
  save(s, a.steps);
  return sum;
}

}  // namespace rgtrain
