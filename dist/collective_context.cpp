// The scratch memory of the collectives (see collective_context.h).
#include "dist/collective_context.h"

#include <algorithm>

#include "core/shareable_host_memory.h"

namespace rg::dist {

CollectiveContext::CollectiveContext(Transport& transport, const Options& options)
    : transport_(transport),
      capabilities_(transport.capabilities()),
      options_(options),
      hosts_(host_layout(transport.host_of_ranks(), transport.rank(), transport.size())) {}

const Tensor& CollectiveContext::scratch_bytes(int64_t slot, size_t nbytes, Device device) {
  if (static_cast<int64_t>(scratch_.size()) <= slot) scratch_.resize(slot + 1);
  Tensor& bytes = scratch_[slot];
  const auto need = static_cast<int64_t>(nbytes);
  if (!bytes.defined() || bytes.device() != device || bytes.numel() < need) {
    ShareableAllocations shared;  // the collectives' buffers: peers of this host may map them
    bytes = empty({std::max<int64_t>(need, 1)}, DType::b8, device);
  }
  return bytes;
}

Tensor CollectiveContext::scratch(int64_t slot, int64_t numel, DType dtype, Device device) {
  const Tensor& bytes = scratch_bytes(slot, numel * itemsize(dtype), device);
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = bytes.storage();
  impl->shape = {numel};
  impl->strides = {1};
  impl->dtype = dtype;
  return Tensor(std::move(impl));
}

}  // namespace rg::dist
