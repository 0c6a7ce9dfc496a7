// A buffer whose last byte sits just before an inaccessible page: a kernel that reads or
// writes one element past its operand's end faults at once, whatever the allocator would have
// placed there (the CPU caching allocator rounds blocks up, so such a read usually lands on
// mapped memory and goes unseen, also by AddressSanitizer).
#pragma once
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>

#include "core/error.h"

namespace rg::test {

class GuardedBuffer {
 public:
  explicit GuardedBuffer(size_t bytes) {
    const size_t page = size_t(sysconf(_SC_PAGESIZE));
    const size_t data_pages = (bytes + page - 1) / page;
    mapped_bytes_ = (data_pages + 1) * page;
    void* p =
        mmap(nullptr, mapped_bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    RG_CHECK(p != MAP_FAILED, "GuardedBuffer: mmap of ", mapped_bytes_, " bytes failed");
    base_ = static_cast<char*>(p);
    RG_CHECK(mprotect(base_ + data_pages * page, page, PROT_NONE) == 0,
             "GuardedBuffer: mprotect failed");
    data_ = base_ + data_pages * page - bytes;
  }
  ~GuardedBuffer() { munmap(base_, mapped_bytes_); }
  GuardedBuffer(const GuardedBuffer&) = delete;
  GuardedBuffer& operator=(const GuardedBuffer&) = delete;

  void* data() const { return data_; }

 private:
  char* base_ = nullptr;
  char* data_ = nullptr;
  size_t mapped_bytes_ = 0;
};

}  // namespace rg::test
