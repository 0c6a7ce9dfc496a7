// The nccl backend's entry points in a build without CUDA: they explain why they cannot run.
#include "dist/nccl_group.h"

namespace rg::dist {

bool nccl_available() { return false; }

std::shared_ptr<ProcessGroup> make_nccl_group(std::shared_ptr<Store>, int, int, int, Options,
                                              const std::string&) {
  RG_FAIL("nccl backend: ringgrad was built without CUDA (nvcc was not found at configure time)");
}

std::shared_ptr<Work> nccl_allreduce(ProcessGroup&, const Tensor&, CombineOp) {
  RG_FAIL("nccl_allreduce: ringgrad was built without CUDA");
}

}  // namespace rg::dist
