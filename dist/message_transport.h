// The transport of the host backends (threads and tcp): point-to-point messages over byte
// streams, one pair of streams per peer, moved by the message pump (dist/message_pump.h, where
// the protocol is described).
#pragma once
#include <memory>
#include <vector>

#include "dist/byte_stream.h"
#include "dist/process_group.h"

namespace rg::dist {

// The streams to one peer: `data` carries messages; `control` carries failure reports and
// tells when the peer's process is gone (for a shared-memory `data`, which cannot).
struct PeerLink {
  std::unique_ptr<ByteStream> data;
  std::unique_ptr<ByteStream> control;
};

// A process group over that transport. links[rank] is left empty. `doorbell` (may be null) is rung
// by peers when bytes move to or from this rank; without it an idle rank polls its sockets.
// `keepalive` lives as long as the group (the store, the doorbell's memory...). `host_of`:
// every rank's host (Transport::host_of_ranks); empty: one host where no peer is reached
// through a socket, else unknown.
std::shared_ptr<ProcessGroup> make_message_group(const char* backend, int rank, int size,
                                                 Options options, std::vector<PeerLink> links,
                                                 Doorbell* doorbell,
                                                 std::shared_ptr<void> keepalive = nullptr,
                                                 std::vector<int> host_of = {});

}  // namespace rg::dist
