// setup(): builds a RunState in the order that makes every mistake cheap to report: join the
// group, agree on the settings, check the batch split, load the data, check the model's
// memory, then build the model, load --init or --resume, and wrap it in DDP.
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <sstream>

#include "apps/rgtrain/agreement.h"
#include "apps/rgtrain/checkpoint.h"
#include "apps/rgtrain/memory_budget.h"
#include "apps/rgtrain/model.h"
#include "apps/rgtrain/resume.h"
#include "apps/rgtrain/run_state.h"
#include "apps/rgtrain/util.h"
#include "core/parallel.h"
#include "dist/init.h"
#include "kernels/cuda/stream.h"
#include "nn/optim/decay_groups.h"

namespace rgtrain {
namespace {

// Whether an MPI launcher started this process: Open MPI's, MPICH's (PMI) or PMIx's
// variables, or Slurm's.
bool under_mpi_launcher(const rg::dist::LaunchInfo& info) {
  auto has = [](const char* name) { return std::getenv(name) && *std::getenv(name); };
  return info.source != "default" || has("PMI_SIZE") || has("PMIX_RANK");
}

// --backend mpi: the rank and world are MPI_COMM_WORLD's. Launcher variables that name
// another world (RANK/WORLD_SIZE without mpirun) are a launch mistake, named here.
void join_mpi(RunState& s, const rg::dist::LaunchInfo& info) {
  if (!under_mpi_launcher(info)) return;  // one process, as without a launcher
  s.group = rg::dist::init_process_group("mpi");
  if (info.source != "default" && info.world_size != s.group->size())
    fail("--backend mpi: MPI_COMM_WORLD has ", s.group->size(), " process(es) but the ",
         info.source, " launcher's variables say a world of ", info.world_size,
         " (start the ranks with mpirun or srun, or use --backend tcp)");
}

void join_group(RunState& s) {
  // Any launcher variable (RANK, WORLD_SIZE, Slurm's, Open MPI's) means a distributed run;
  // init_process_group names the variable that is missing or malformed.
  const rg::dist::LaunchInfo info = rg::dist::launch_info_from_env();
  if (s.args.backend == "mpi")
    join_mpi(s, info);
  else if (info.source != "default")
    s.group = rg::dist::init_process_group(s.args.backend);
  if (!s.group) return;
  s.world = s.group->size();
  s.rank = s.group->rank();
  s.lead = s.rank == 0;
}

void split_batch(RunState& s) {
  const Args& a = s.args;
  if (a.global_batch % (s.world * a.micro_batch) != 0) {
    std::ostringstream ok;
    int shown = 0;
    for (int64_t m = 1; m <= a.global_batch && shown < 6; ++m)
      if (a.global_batch % (s.world * m) == 0) ok << (shown++ ? ", " : "") << m;
    fail("--global-batch ", a.global_batch, " is not a multiple of world (", s.world,
         ") x --micro-batch (", a.micro_batch, "); micro-batches that divide it: ",
         shown ? ok.str()
               : "none (make --global-batch a multiple of " + std::to_string(s.world) + ")");
  }
  s.accum = a.global_batch / (s.world * a.micro_batch);
  s.per_rank = s.accum * a.micro_batch;
}

void load_data(RunState& s) {
  const Args& a = s.args;
  s.data = make_data(a);
  const int64_t T = s.data.train->context_length();
  s.vocab = s.data.train->vocab_size();
  if (a.vocab > 0) {
    if (a.vocab < s.vocab) fail("--vocab ", a.vocab, " is smaller than the data's ", s.vocab);
    s.vocab = a.vocab;
  }
  if (a.context > 0 && a.context < T)
    fail("--context ", a.context, " is shorter than the data's ", T);
  s.context = std::max(a.context, T);
  s.schedule = std::make_unique<Schedule>(s.data.train->size(), s.world, s.per_rank, a.seed);
  s.lr_of = {a.lr, a.lr / 10, std::min(a.warmup, a.steps - 1), a.steps};
}

// The shortest text that reads back as exactly `v` ("0.003", not "0.0030000000000000001").
std::string exact(double v) {
  char text[64];
  const auto end = std::to_chars(text, text + sizeof text, v).ptr;
  return std::string(text, end);
}

std::string config_string(const RunState& s) {
  const Args& a = s.args;
  std::ostringstream os;
  os << "model=" << a.model << " layers=" << a.layers << " heads=" << a.heads
     << " width=" << a.width << " vocab=" << s.vocab << " context=" << s.context
     << " data=" << (a.data.empty() ? "addition" + std::to_string(a.digits) : a.data)
     << " optimizer=" << a.optimizer << " global_batch=" << a.global_batch
     << " micro_batch=" << a.micro_batch << " world=" << s.world << " seed="
     << a.seed
     // The optimizer's settings: resuming with others would continue another run.
     << " lr=" << exact(a.lr) << " warmup=" << a.warmup << " beta1=" << exact(a.beta1)
     << " beta2=" << exact(a.beta2) << " eps=" << exact(a.eps)
     << " weight_decay=" << exact(a.weight_decay)
     << " no_decay=" << rg::optim::to_string(rg::optim::parse_no_decay(a.no_decay))
     << " clip=" << exact(a.clip);
  return os.str();
}

// Rank 0's clock, shared so that every rank's trace has one time origin (exact on one node).
rg::dist::TraceRecorder::TimePoint shared_origin(RunState& s) {
  auto now = std::chrono::steady_clock::now();
  if (!s.group) return now;
  const int64_t mine = now.time_since_epoch().count();
  std::string bytes(sizeof mine, '\0');
  std::memcpy(bytes.data(), &mine, sizeof mine);
  int64_t lead = 0;
  std::memcpy(&lead, allgather_bytes(*s.group, bytes)[0].data(), sizeof lead);
  return rg::dist::TraceRecorder::TimePoint(std::chrono::steady_clock::duration(lead));
}

void build_model(RunState& s) {
  const Args& a = s.args;
  check_model_memory(a, s.vocab, s.context, s.world);
  s.model = make_model(a, s.vocab, s.context);
  s.model_md = model_metadata(a, s.vocab, s.context);
  s.model->to(s.device);
  s.config = config_string(s);
  s.ckpt_path = checkpoint_path(a);
  if (!a.init.empty()) load_into(*s.model, s.model_md, load_checked(a.init, "--init"), a.init);
  if (a.zero == 0 || !s.group) s.opt = make_optimizer(a, *s.model);  // else: wrap_ddp's
  if (s.lead && !s.ckpt_path.empty()) {
    s.ckpt_lock = std::make_unique<DirectoryLock>(a.checkpoint);  // before touching anything
    remove_stale_checkpoint_temps(s.ckpt_path);
  }
  s.start_step = resume_if_asked(s);
}

void wrap_ddp(RunState& s) {
  const Args& a = s.args;
  if (!a.trace.empty()) s.trace = std::make_shared<rg::dist::TraceRecorder>(shared_origin(s));
  if (s.group && a.zero == 3) {
    rg::nn::FSDPOptions o;
    o.reshard_after_forward = a.fsdp_reshard_after_forward;
    o.trace = s.trace;
    if (a.reduce_dtype == "bf16") o.reduce_dtype = rg::DType::bf16;
    s.fsdp = std::make_unique<rg::nn::FullyShardedDataParallel>(s.model, *s.group, o);
    s.opt = make_fsdp_optimizer(a, *s.fsdp);  // needs the FSDP's shards
    resume_optimizer(s);
  } else if (s.group) {
    rg::nn::DDPOptions o;
    o.bucket_cap_mb = a.bucket_cap_mb;
    o.overlap = !a.no_overlap;
    o.gradient_as_bucket_view = a.grad_view;
    o.trace = s.trace;
    o.zero_stage = a.zero;
    if (a.reduce_dtype == "bf16") o.comm_hook = rg::dist::bf16_compress_hook;
    s.ddp = std::make_unique<rg::nn::DistributedDataParallel>(s.model, *s.group, o);
    if (a.zero >= 1) {
      s.opt = make_zero_optimizer(a, *s.ddp);  // needs the DDP's buckets
      resume_optimizer(s);
    }
  }
  // After DDP's (or FSDP's) broadcast every rank holds rank 0's weights.
  with_full_parameters(s, [&] {
    for (auto& p : s.model->parameters()) s.initial.push_back(p.detach().clone());
  });
}

void build(RunState& s) {
  const Args& a = s.args;
  if (a.threads > 0)
    rg::set_num_threads(int(a.threads));
  else if (s.world > 1)
    rg::set_num_threads(1);  // one thread per rank: the ranks share the cores
  if (s.group) check_agreement(*s.group, shared_settings(a, s.world));
  if (s.group) s.run_id = allgather_bytes(*s.group, s.run_id)[0];  // rank 0's, on every rank
  s.device = rg::Device(a.device);
  rg::set_allow_tf32(a.tf32);
  if (a.memory_budget.empty()) {
    split_batch(s);
    load_data(s);
  } else {  // the dry runs need the data; the micro-batch then splits the batch as given
    if (a.global_batch % s.world != 0)
      fail("--global-batch ", a.global_batch, " is not a multiple of world (", s.world, ")");
    s.per_rank = a.global_batch / s.world;
    load_data(s);
    choose_micro_batch(s);
    split_batch(s);
  }
  check_zero_flags(a);
  if ((a.zero == 1 || a.zero == 2) && a.reduce_dtype == "bf16")
    fail("--reduce-dtype bf16 cannot be combined with --zero ", a.zero,
         " (its reduce-scatter is f32)");
  build_model(s);
  wrap_ddp(s);
}

}  // namespace

RunState setup(const Args& a) {
  RunState s;
  s.args = a;
  join_group(s);
  s.run_id = new_run_id();
  try {
    build(s);
  } catch (const std::exception& e) {
    // A mistake only this rank sees (a missing file): the others fail at once, naming it.
    if (s.group) s.group->abort(e.what());
    throw;
  }
  return s;
}

}  // namespace rgtrain
