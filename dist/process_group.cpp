// ProcessGroup, the public face: argument checks, then each collective handed to the
// scheduler as the algorithm that does it over the group's transport.
#include "dist/process_group.h"

#include "dist/allreduce_choice.h"
#include "dist/broadcast.h"
#include "dist/dist_error.h"
#include "dist/ring_allreduce.h"
#include "dist/stream_work.h"

namespace rg::dist {
namespace {

const Options& checked(int rank, int size, const Options& options, const Transport* transport) {
  RG_CHECK(options.timeout.count() > 0, "ProcessGroup: timeout must be positive");
  RG_CHECK(options.chunk_bytes >= 64, "ProcessGroup: chunk_bytes must be at least 64");
  RG_CHECK(transport && transport->rank() == rank && transport->size() == size,
           "ProcessGroup: the transport is not rank ", rank, " of ", size);
  return options;
}

void check_reduction(const char* what, DType dtype, CombineOp op) {
  bool floating = dtype == DType::f32 || dtype == DType::f64 || dtype == DType::bf16;
  bool integer = dtype == DType::i32 || dtype == DType::i64;
  RG_CHECK(floating || (integer && op != CombineOp::avg), what, ": ", combine_op_name(op), " of ",
           dtype_name(dtype), " is not supported (f32, f64, bf16; i32/i64 for sum, max)");
}

}  // namespace

ProcessGroup::ProcessGroup(int rank, int size, Options options,
                           std::unique_ptr<Transport> transport)
    : rank_(rank),
      size_(size),
      options_(checked(rank, size, options, transport.get())),
      transport_(std::move(transport)),
      scheduler_(*transport_, options_) {}

// The scheduler's thread stops first (the running collective ends), then the transport closes.
ProcessGroup::~ProcessGroup() {
  scheduler_.shutdown();
  transport_->close(!scheduler_.failure().empty());
}

void ProcessGroup::abort(const std::string& reason) {
  const DistError error({FailureKind::aborted, rank_, "", 0},
                        str("rank ", rank_, " aborted: ", reason));
  transport_->abort(error.failure(), error.what());
  scheduler_.fail(error.what(), std::make_exception_ptr(error));
}

std::string ProcessGroup::peer_link(int peer) const {
  RG_CHECK(peer >= 0 && peer < size_, "peer_link: rank ", peer, " outside world of size ", size_);
  return transport_->link(peer);
}

std::string ProcessGroup::describe_links() const {
  std::string out;
  for (int q = 0; q < size_; ++q) out += str(q == 0 ? "" : ", ", q, " ", peer_link(q));
  return out;
}

void ProcessGroup::check_tensor(const Tensor& t, const char* what) const {
  RG_CHECK(t.defined(), what, ": undefined tensor");
  RG_CHECK(t.numel() == 0 || t.is_contiguous(), what, ": tensor of shape ", shape_str(t.shape()),
           " must be contiguous");
  RG_CHECK(supports_device(t.device()), what, ": the ", backend_name(),
           " backend cannot use tensors on ", t.device().str());
}

std::shared_ptr<Work> ProcessGroup::send(const Tensor& tensor, int dst, int tag) {
  check_tensor(tensor, "send");
  RG_CHECK(dst >= 0 && dst < size_ && dst != rank_, "send: rank ", rank_, " cannot send to rank ",
           dst, " (world size ", size_, ")");
  RG_CHECK(tag >= 0, "send: tags must be >= 0, got ", tag);
  Envelope env{Collective::p2p, CombineOp::sum, tensor.dtype(), tag, -1, 0, tensor.numel()};
  return transport_->send_message(tensor, dst, env);
}

std::shared_ptr<Work> ProcessGroup::recv(const Tensor& tensor, int src, int tag) {
  check_tensor(tensor, "recv");
  RG_CHECK(src >= 0 && src < size_ && src != rank_, "recv: rank ", rank_,
           " cannot receive from rank ", src, " (world size ", size_, ")");
  RG_CHECK(tag >= 0, "recv: tags must be >= 0, got ", tag);
  Envelope env{Collective::p2p, CombineOp::sum, tensor.dtype(), tag, -1, 0, tensor.numel()};
  return transport_->recv_message(tensor, src, env);
}

std::shared_ptr<Work> ProcessGroup::allreduce(const Tensor& tensor, CombineOp op) {
  check_tensor(tensor, "allreduce");
  check_reduction("allreduce", tensor.dtype(), op);
  if (auto lean = scheduler_.issue_lean(Collective::allreduce, tensor, op)) return lean;
  Envelope env = scheduler_.next_envelope(Collective::allreduce, tensor, tensor.numel());
  env.op = op;
  return scheduler_.enqueue(
      Collective::allreduce,
      [tensor, op, env](CollectiveContext& ctx) { allreduce_by_size(ctx, tensor, op, env); },
      {tensor});
}

std::shared_ptr<Work> ProcessGroup::broadcast(const Tensor& tensor, int root) {
  check_tensor(tensor, "broadcast");
  RG_CHECK(root >= 0 && root < size_, "broadcast: root ", root, " outside world of size ", size_);
  Envelope env = scheduler_.next_envelope(Collective::broadcast, tensor, tensor.numel());
  env.root = root;
  return scheduler_.enqueue(
      Collective::broadcast,
      [tensor, root, env](CollectiveContext& ctx) { chain_broadcast(ctx, tensor, root, env); },
      {tensor});
}

std::shared_ptr<Work> ProcessGroup::allgather(const Tensor& out, const Tensor& in) {
  check_tensor(out, "allgather");
  check_tensor(in, "allgather");
  RG_CHECK(out.dtype() == in.dtype() && out.device() == in.device(), "allgather: out is ",
           out.dtype(), " on ", out.device().str(), ", in is ", in.dtype(), " on ",
           in.device().str());
  RG_CHECK(out.numel() == in.numel() * size_, "allgather: out has ", out.numel(),
           " elements, expected world size ", size_, " x ", in.numel());
  Envelope env = scheduler_.next_envelope(Collective::allgather, in, in.numel());
  return scheduler_.enqueue(
      Collective::allgather,
      [out, in, env](CollectiveContext& ctx) { ring_allgather(ctx, out, in, env); }, {out, in});
}

std::shared_ptr<Work> ProcessGroup::reduce_scatter(const Tensor& out, const Tensor& in,
                                                   CombineOp op) {
  check_tensor(out, "reduce_scatter");
  check_tensor(in, "reduce_scatter");
  check_reduction("reduce_scatter", in.dtype(), op);
  RG_CHECK(out.dtype() == in.dtype() && out.device() == in.device(), "reduce_scatter: out is ",
           out.dtype(), " on ", out.device().str(), ", in is ", in.dtype(), " on ",
           in.device().str());
  RG_CHECK(in.numel() == out.numel() * size_, "reduce_scatter: in has ", in.numel(),
           " elements, expected world size ", size_, " x ", out.numel());
  Envelope env = scheduler_.next_envelope(Collective::reduce_scatter, out, out.numel());
  env.op = op;
  return scheduler_.enqueue(
      Collective::reduce_scatter,
      [out, in, op, env](CollectiveContext& ctx) { ring_reduce_scatter(ctx, out, in, op, env); },
      {out, in});
}

std::shared_ptr<Work> ProcessGroup::barrier() {
  std::call_once(barrier_token_made_,
                 [this] { barrier_token_ = empty({0}, DType::i32, default_device()); });
  if (auto lean = scheduler_.issue_lean(Collective::barrier, barrier_token_, CombineOp::sum))
    return lean;
  Tensor token = barrier_token_;
  Envelope env = scheduler_.next_envelope(Collective::barrier, token, 0);
  auto work = scheduler_.enqueue(Collective::barrier,
                                 [token, env](CollectiveContext& ctx) {
                                   // An all-reduce waits for a message from every rank
                                   // (directly, or along the ring), so no rank can finish it
                                   // before every rank has started it.
                                   allreduce_by_size(ctx, token, CombineOp::sum, env);
                                 },
                                 {token});
  // A barrier holds the host: on device streams its wait blocks until the stream ran it.
  if (auto* on_stream = dynamic_cast<StreamWork*>(work.get())) on_stream->block_host();
  return work;
}

}  // namespace rg::dist
