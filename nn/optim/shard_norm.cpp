// sharded_grad_norm; see shard_norm.h.
#include "nn/optim/shard_norm.h"

#include <cmath>

#include "autograd/grad_mode.h"
#include "ops/ops.h"

namespace rg::optim {

double sharded_grad_norm(const std::vector<Tensor>& shards, dist::ProcessGroup& group) {
  NoGradGuard no_grad;
  std::vector<double> sums(shards.size(), 0.0);
  std::vector<bool> done(shards.size(), false);
  for (size_t a = 0; a < shards.size(); ++a) {  // one reduction per dtype
    if (done[a]) continue;
    std::vector<Tensor> same_dtype;
    std::vector<size_t> which;
    for (size_t b = a; b < shards.size(); ++b) {
      if (shards[b].dtype() != shards[a].dtype()) continue;
      same_dtype.push_back(shards[b]), which.push_back(b), done[b] = true;
    }
    const Tensor host = sum_squares_multi(same_dtype).to(kCPU);
    for (size_t k = 0; k < which.size(); ++k) sums[which[k]] = host.data<double>()[k];
  }
  Tensor total = zeros({1}, DType::f64, kCPU);
  for (double s : sums) total.data<double>()[0] += s;  // in shard order
  group.allreduce(total, dist::CombineOp::sum)->wait();
  return std::sqrt(total.data<double>()[0]);
}

}  // namespace rg::optim
