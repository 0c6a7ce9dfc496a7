// Host memory that other processes of this host can map: an arena in a memory file
// (memfd), from which the cpu allocator carves the large blocks of collectives' buffers
// (allocated under a ShareableAllocations scope: DDP's buckets, a group's scratch) once a
// process group asks for it. A peer that may read this process (the same permission as
// process_vm_readv) opens the file through /proc/<pid>/fd/<fd> and maps it, and then reads
// these blocks with plain loads instead of a system call per read (dist/peer_arena.cpp; why:
// docs/dist.md). Any process of the same user that may ptrace this one can map it too, token
// or not, so the arena holds only those buffers: weights, activations and optimizer state
// stay in private memory (which such a process could still read with process_vm_readv).
//
// The arena reserves address space and file size for all of the machine's memory, and pages
// exist only where blocks were touched. Its pages are the file's, so they are 4 KiB pages
// where the kernel gives shared memory no transparent huge pages (shmem_enabled "never").
// After fork, the child gets a private copy of the blocks in use (as fork gives private
// memory), so a child never writes its parent's blocks; new shareable blocks come from an
// arena of its own, once it asks.
#pragma once
#include <cstddef>
#include <cstdint>

namespace rg {

// From now on, host blocks of at least `min_bytes` allocated under a ShareableAllocations
// scope come from the arena (the smallest threshold asked for wins). Returns false, changing
// nothing, where the system has no memory files or refuses the reservation (or after 15
// generations of forks that asked).
bool share_large_host_blocks(size_t min_bytes);

// While one lives, this thread's large host blocks come from the arena (once it is on); the
// scopes nest. For the buffers that collectives read across processes.
class ShareableAllocations {
 public:
  ShareableAllocations();
  ~ShareableAllocations();
  ShareableAllocations(const ShareableAllocations&) = delete;
  ShareableAllocations& operator=(const ShareableAllocations&) = delete;
};

// Where [p, p + bytes) lies in this process's shareable arena.
struct ShareableLocation {
  int fd = -1;          // the arena's file, open in this process
  uint64_t inode = 0;   // its inode, so that a peer can check what it opened
  int64_t offset = -1;  // of p in the file; -1 when the range is not in a shareable arena
};
ShareableLocation shareable_location(const void* p, size_t bytes);

namespace shareable_arena {
// For the cpu allocator (core/cpu_allocator.cpp), which keeps freed arena blocks in lists
// of their own: whether a new block of `bytes` should come from the arena (on this thread,
// now), a fresh arena
// block (nullptr when the arena is full), whether p lies in an arena (or a forked child's
// copy of one: never malloc's), and returning the pages of a cached block except its last
// (where the free list's link lives).
bool wants(size_t bytes);
void* allocate(size_t bytes);
bool contains(const void* p);
void release_pages(void* p, size_t bytes);
}  // namespace shareable_arena

}  // namespace rg
