// NB_MODULE: the entry point of ringgrad._C. The pure-Python package ringgrad/ (python/ringgrad)
// re-exports what users call; this module is its private engine room.
#include "python/src/bindings.h"

NB_MODULE(_C, m) {
  using namespace rg::python;
  m.doc() = "ringgrad's C++ core: tensors, autograd, ops and optimizers (import ringgrad)";
  bind_errors(m);
  bind_tensor(m);
  bind_numpy(m);
  bind_ops(m);
  bind_optim(m);
  bind_dist(m);
  bind_hooks(m);
  bind_io(m);
  bind_runtime(m);
  bind_indexing(m);
  bind_random(m);
  bind_composite_ops(m);
}
