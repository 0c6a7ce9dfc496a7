// rgtrain: trains a GPT (or an MLP) with data-parallel SGD/AdamW, gradient accumulation,
// checkpoints that resume bit for bit, and a single-process reference check (--verify).
// Run `rgtrain --help` for the flags; under rgrun every rank runs this same program.
//
// The parts: config (flags), data, model, agreement (ranks check they were started alike),
// setup, train_step / training (the loop), checkpoint, metrics, evaluate, verify.
// Every rank prints its own errors as one "rgtrain: error:" line and exits 2; a rank that
// fails tells the others through the group, so they stop at once instead of timing out.
// Under mpirun it then calls MPI_Abort, so mpirun ends every rank (a stopped one too).
#include <algorithm>
#include <iostream>
#include <new>

#include "apps/rgtrain/agreement.h"
#include "apps/rgtrain/evaluate.h"
#include "apps/rgtrain/run_state.h"
#include "apps/rgtrain/training.h"
#include "apps/rgtrain/util.h"
#include "apps/rgtrain/verify.h"
#include "core/atomic_file.h"
#include "core/memory_limits.h"
#include "dist/dist_error.h"
#include "dist/mpi_group.h"
#include "nn/safetensors.h"

namespace rgtrain {
namespace {

int compare_files(const std::string& a, const std::string& b) {
  auto A = rg::nn::load_safetensors(a), B = rg::nn::load_safetensors(b);
  if (A.tensors.size() != B.tensors.size()) fail("compare: tensor counts differ");
  for (size_t i = 0; i < A.tensors.size(); ++i) {
    auto& [na, ta] = A.tensors[i];
    auto& [nb, tb] = B.tensors[i];
    if (na != nb) fail("compare: tensor ", i, " is '", na, "' vs '", nb, "'");
    if (ta.shape() != tb.shape() || ta.dtype() != tb.dtype() || !rg::equal(ta, tb)) {
      std::cout << "compare: tensor '" << na << "' differs\n";
      return 1;
    }
  }
  std::cout << "compare: " << A.tensors.size() << " tensors bit-identical\n";
  return 0;
}

// With several ranks, rank 0 gathers every rank's events and writes one file.
void write_trace(RunState& s) {
  if (!s.trace) return;
  std::string mine = s.trace->to_json();
  if (!s.group) {
    rg::write_file_atomically(s.args.trace, mine);
    return;
  }
  auto all = allgather_bytes(*s.group, mine);
  if (s.lead) rg::write_file_atomically(s.args.trace, rg::dist::merge_traces(all));
}

int train_and_report(RunState& s) {
  const double t_start = now_seconds();
  const TrainSummary sum = train(s);
  if (sum.stopped_early) return 0;
  write_trace(s);
  if (s.fsdp) s.fsdp->gather_full_parameters();  // collective: the report reads the weights
  if (!s.lead) return 0;
  print_final_report(s, sum.last_loss, now_seconds() - t_start,
                     sum.train_seconds > 0 ? sum.tokens / sum.train_seconds : 0);
  if (s.args.verify) verify_against_reference(s);
  return 0;
}

int run(const Args& a) {
  if (!a.compare.empty()) return compare_files(a.compare[0], a.compare[1]);
  RunState s = setup(a);
  try {
    return train_and_report(s);
  } catch (const std::exception& e) {
    // The other ranks fail at once, naming this rank and the reason.
    if (s.group) s.group->abort(e.what());
    throw;
  }
}

}  // namespace
}  // namespace rgtrain

namespace {

// The fatal error's report: the failure record (for rgrun), one "rgtrain: error:" line, and
// under mpirun MPI_Abort, so every rank ends (a stopped one too).
int report_fatal(const std::exception& e) {
  rg::dist::record_failure(e);  // for rgrun (RG_ERROR_FILE): whom this rank blames
  std::string msg = e.what();
  std::replace(msg.begin(), msg.end(), '\n', ' ');
  std::cout << std::flush;
  std::cerr << "rgtrain: error: " << msg << std::endl;
  rg::dist::abort_mpi_job(2);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  rg::remove_temp_files_on_signal();  // SIGTERM/SIGINT mid-save leave no partial checkpoint
  try {
    return rgtrain::run(rgtrain::parse_args(argc, argv));
  } catch (const std::bad_alloc&) {  // an allocation outside the allocators, of unknown size
    return report_fatal(rg::Error("out of memory (std::bad_alloc); the limit in force: " +
                                  rg::describe_memory_limit()));
  } catch (const std::exception& e) {
    return report_fatal(e);
  }
}
