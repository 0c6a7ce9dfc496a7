// Which ranks share a host: the facts the topology-aware all-reduce is chosen from
// (dist/two_level_allreduce.cpp). Every rank derives them from the same exchanged host
// identities, so every rank sees the same layout.
#pragma once
#include <string>
#include <vector>

namespace rg::dist {

// Host index of every rank from each rank's host identity: hosts are numbered in the order
// of their lowest rank, so rank 0's host is 0.
std::vector<int> number_hosts(const std::vector<std::string>& host_of_rank);

// One rank's view of the hosts.
struct HostLayout {
  int hosts = 1;                  // number of distinct hosts
  int host = 0;                   // this rank's host
  bool uniform = true;            // every host runs the same number of ranks
  std::vector<int> local;         // the ranks of this rank's host, in rank order
  int local_index = 0;            // this rank's position in `local`
  std::vector<int> counterparts;  // the rank at local_index of every host, by host index
};

// The layout seen by `rank` (host_of from number_hosts; empty: one host holding every rank
// of a world of `size`).
HostLayout host_layout(const std::vector<int>& host_of, int rank, int size);

}  // namespace rg::dist
