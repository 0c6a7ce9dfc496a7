// The threads backend: every rank is a thread of this process; messages go through rings in
// the process's memory. For tests, and to study the algorithms in one debugger session.
#pragma once
#include <functional>
#include <memory>
#include <vector>

#include "dist/process_group.h"

namespace rg::dist {

// The groups of all `size` ranks of a world living in this process; groups[r] is rank r's.
// `host_of` (optional) pretends the ranks run on hosts: element q is rank q's host, as
// Transport::host_of_ranks gives it (the tests of the topology-aware algorithms).
std::vector<std::shared_ptr<ProcessGroup>> make_thread_groups(int size, Options options = {},
                                                              std::vector<int> host_of = {});

// Runs fn(group) on `size` threads, each as one rank with its own group, and waits for all.
// When a rank throws, its group is aborted (so the others fail fast instead of waiting for
// the timeout) and, once every thread has ended, the first failure is rethrown as
// rg::Error("rank R: <what>").
void run_threads(int size, const std::function<void(ProcessGroup&)>& fn, Options options = {},
                 std::vector<int> host_of = {});

}  // namespace rg::dist
