// The tcp backend: ranks are processes, on one host or many. Each pair of ranks is joined by
// a control socket and a data path: a shared-memory ring pair when both run on the same host
// (RG_DIST_SHM=0 turns it off), else a second socket. The store is used to exchange addresses.
#pragma once
#include <memory>
#include <string>

#include "dist/process_group.h"
#include "dist/store.h"

namespace rg::dist {

// Joins the world: publishes this rank's address under `prefix` in the store, connects to
// every other rank, and returns when all are connected. A rank that does not show up within
// options.timeout makes this throw an rg::Error naming it. Groups made with the same store
// need distinct prefixes.
std::shared_ptr<ProcessGroup> make_tcp_group(std::shared_ptr<Store> store, int rank, int size,
                                             Options options = {},
                                             const std::string& prefix = "tcp");

}  // namespace rg::dist
