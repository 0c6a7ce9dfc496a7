// Rendezvous of the tcp backend through the store: every rank publishes where it listens and
// reads where the others do. It is also where ranks launched inconsistently are caught, at
// once and on every rank that can see it: two processes with the same rank, or ranks that
// disagree on the world size, make the first rank that notices publish an abort record that
// every waiting rank reads instead of waiting for its timeout.
#pragma once
#include <string>
#include <vector>

#include "dist/store.h"

namespace rg::dist {

struct PeerAddress {
  std::string ip;
  int port = 0;
  std::string host;  // net::host_identity(): equal strings share memory
  int world_size = 0;
  long pid = 0;
};

// Publishes `mine` as rank `rank`'s address under `prefix` and returns every rank's (entry
// `rank` is `mine`). Throws rg::Error naming the rank that did not join by `deadline`, or
// the disagreement (and the ranks involved) when the launch is inconsistent.
std::vector<PeerAddress> exchange_addresses(Store& store, const std::string& prefix, int rank,
                                            int size, const PeerAddress& mine,
                                            Clock::time_point deadline, const std::string& me);

}  // namespace rg::dist
