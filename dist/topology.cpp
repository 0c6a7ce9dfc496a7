// Host numbering and each rank's host layout (see topology.h).
#include "dist/topology.h"

#include <algorithm>
#include <map>

namespace rg::dist {

std::vector<int> number_hosts(const std::vector<std::string>& host_of_rank) {
  std::map<std::string, int> index;
  std::vector<int> host_of;
  host_of.reserve(host_of_rank.size());
  for (const std::string& name : host_of_rank) {
    auto [it, fresh] = index.try_emplace(name, static_cast<int>(index.size()));
    host_of.push_back(it->second);
  }
  return host_of;
}

HostLayout host_layout(const std::vector<int>& host_of_in, int rank, int size) {
  std::vector<int> host_of = host_of_in;
  if (host_of.empty()) host_of.assign(size, 0);
  HostLayout layout;
  layout.hosts = *std::max_element(host_of.begin(), host_of.end()) + 1;
  std::vector<std::vector<int>> ranks_of(layout.hosts);
  for (int q = 0; q < static_cast<int>(host_of.size()); ++q) ranks_of[host_of[q]].push_back(q);
  layout.host = host_of[rank];
  layout.local = ranks_of[layout.host];
  layout.local_index = static_cast<int>(std::find(layout.local.begin(), layout.local.end(), rank) -
                                        layout.local.begin());
  for (const auto& ranks : ranks_of) {
    layout.uniform = layout.uniform && ranks.size() == layout.local.size();
    if (layout.local_index < static_cast<int>(ranks.size()))
      layout.counterparts.push_back(ranks[layout.local_index]);
  }
  return layout;
}

}  // namespace rg::dist
