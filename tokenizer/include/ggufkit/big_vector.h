#pragma once
// A vector whose large buffers (512 KiB and up) are their own anonymous maps on huge pages.
// A vocabulary's tables are a few MB each, written once: on a virtual machine the first touch
// of each 4 KiB page costs about 10 us, so 20 MB of them cost 50 ms, fifty times the work
// done in them; a 2 MiB page costs one such touch. Smaller buffers come from operator new,
// and so does every buffer under AddressSanitizer, which guards only what the allocator gives.

#include <sys/mman.h>

#include <cstddef>
#include <cstdint>
#include <new>
#include <vector>

#if defined(__SANITIZE_ADDRESS__)
#define GGUFKIT_BIG_PAGES 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define GGUFKIT_BIG_PAGES 0
#endif
#endif
#ifndef GGUFKIT_BIG_PAGES
#define GGUFKIT_BIG_PAGES 1
#endif

namespace ggufkit {

template <typename T>
struct BigPages {
  using value_type = T;
  static constexpr size_t kBig = GGUFKIT_BIG_PAGES ? size_t{512} << 10 : SIZE_MAX, kHuge = size_t{2} << 20;
  BigPages() = default;
  template <typename U>
  BigPages(const BigPages<U>&) noexcept {}  // NOLINT: rebinds convert

  static size_t mapped(size_t n) { return (n * sizeof(T) + kHuge - 1) / kHuge * kHuge; }
  T* allocate(size_t n) {
    if (n > SIZE_MAX / sizeof(T)) throw std::bad_array_new_length();
    if (n * sizeof(T) < kBig) return static_cast<T*>(::operator new(n * sizeof(T)));
    void* p = ::mmap(nullptr, mapped(n), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) throw std::bad_alloc();
    ::madvise(p, mapped(n), MADV_HUGEPAGE);  // advice: where the kernel has none, plain pages
    return static_cast<T*>(p);
  }
  void deallocate(T* p, size_t n) noexcept {
    if (n * sizeof(T) < kBig) ::operator delete(p);
    else ::munmap(p, mapped(n));
  }
  template <typename U>
  bool operator==(const BigPages<U>&) const noexcept { return true; }
};

template <typename T>
using big_vector = std::vector<T, BigPages<T>>;

}  // namespace ggufkit
