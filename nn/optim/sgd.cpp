// SGD (see nn/optim/sgd.h). Tensor arithmetic under NoGradGuard, updating in place.
#include "nn/optim/sgd.h"

#include <string>

#include "autograd/grad_mode.h"

namespace rg::optim {

SGD::SGD(std::vector<Tensor> params, SGDOptions opts)
    : SGD(std::vector<ParamGroup>{ParamGroup{std::move(params), std::nullopt}}, opts) {}

SGD::SGD(std::vector<ParamGroup> groups, SGDOptions opts)
    : Optimizer(std::move(groups), opts.lr, "SGD"), options(opts) {
  RG_CHECK(opts.momentum >= 0 && opts.weight_decay >= 0, "SGD: momentum ", opts.momentum,
           " and weight_decay ", opts.weight_decay, " must be >= 0");
  RG_CHECK(!opts.nesterov || (opts.momentum > 0 && opts.dampening == 0),
           "SGD: nesterov needs momentum > 0 and dampening 0");
  buffers_.resize(parameters().size());
}

void SGD::step() {
  NoGradGuard no_grad;
  options.lr = lr_;
  for_each_with_grad(options.weight_decay,
                     [&](size_t i, const Tensor& p, const Tensor& grad, double weight_decay) {
                       Tensor g = weight_decay != 0 ? add(grad, p.detach(), weight_decay) : grad;
                       if (options.momentum != 0) {
                         Tensor& buf = buffers_[i];
                         if (!buf.defined()) {
                           buf = clone(g);
                           tag_optimizer_state({buf});
                         } else {
                           buf.mul_(options.momentum).add_(g, 1.0 - options.dampening);
                         }
                         g = options.nesterov ? add(g, buf, options.momentum) : buf;
                       }
                       p.detach().add_(g, -lr_);
                     });
}

nn::StateDict SGD::state_dict() const {
  nn::StateDict dict;
  for (size_t i = 0; i < buffers_.size(); ++i)
    if (buffers_[i].defined())
      dict.insert("state." + std::to_string(i) + ".momentum_buffer", buffers_[i]);
  return dict;
}

void SGD::load_state_dict(const nn::StateDict& dict) {
  std::vector<Tensor> params = parameters();
  for (size_t i = 0; i < params.size(); ++i) {
    buffers_[i] = Tensor();
    if (!dict.contains("state." + std::to_string(i) + ".momentum_buffer")) continue;
    const Tensor& t = moment_entry(dict, i, "momentum_buffer", params[i]);
    buffers_[i] = clone(t.detach().to(params[i].device(), params[i].dtype()));
    tag_optimizer_state({buffers_[i]});
  }
}

}  // namespace rg::optim
