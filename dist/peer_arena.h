// A peer process's shareable arena (core/shareable_host_memory.h), mapped into this
// process: opened through /proc/<pid>/fd/<fd> (allowed where this process may read the
// peer's memory, as process_vm_readv is), checked by its inode and mapped read-only over its
// whole size for reading and writing, once per peer process; later collectives find the mapping
// again.
#pragma once
#include <cstddef>
#include <cstdint>

namespace rg::dist {

// The address in this process of `bytes` at `offset` of the arena (`fd`, `inode`) of
// process `pid`, or nullptr where it cannot be mapped (no /proc, not permitted, another file
// than described, or the range outside the file: then the caller reads another way).
char* map_peer_arena(int64_t pid, int64_t fd, uint64_t inode, int64_t offset, size_t bytes);

}  // namespace rg::dist
