// The nccl backend: ranks are GPUs (one per process), messages are ncclSend/ncclRecv on a
// dedicated communication stream. The ring collectives run over them like over any backend;
// nccl_allreduce calls NCCL's own all-reduce, the baseline the ring is measured against.
// Built only with CUDA (dist/nccl_group.cpp); without it these functions throw.
#pragma once
#include <memory>
#include <string>

#include "dist/process_group.h"
#include "dist/store.h"

namespace rg::dist {

// True when ringgrad was built with CUDA and NCCL and a GPU is visible.
bool nccl_available();

// Creates the NCCL communicator of this rank on GPU `device_index` (the unique id travels
// through the store under `prefix`). Ranks that do not join within options.timeout make it
// throw an rg::Error.
std::shared_ptr<ProcessGroup> make_nccl_group(std::shared_ptr<Store> store, int rank, int size,
                                              int device_index, Options options = {},
                                              const std::string& prefix = "nccl");

// ncclAllReduce on `pg` (an nccl group) in place, asynchronously on its communication stream.
std::shared_ptr<Work> nccl_allreduce(ProcessGroup& pg, const Tensor& tensor,
                                     CombineOp op = CombineOp::sum);

}  // namespace rg::dist
