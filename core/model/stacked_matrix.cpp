#include "model/stacked_matrix.hpp"

#include <fmt/format.h>
#include <sys/mman.h>

#include <cstring>

namespace graft {

Expected<std::shared_ptr<StackedBytes>> StackedBytes::allocate(std::uint64_t bytes) {
  void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED)
    return Status(Errc::out_of_memory, fmt::format("cannot map {} bytes for a stacked matrix", bytes));
  return std::shared_ptr<StackedBytes>(new StackedBytes(static_cast<std::uint8_t*>(p), bytes));
}

StackedBytes::~StackedBytes() { ::munmap(data_, size_); }

std::uint64_t StackedBytes::release() noexcept {
  // Whole pages only: the mapping starts on a page and ends inside the last one.
  return ::madvise(data_, size_, MADV_DONTNEED) == 0 ? size_ : 0;
}

MatrixWeight stacked_shape(std::span<const MatrixWeight* const> parts, std::string name) {
  if (parts.size() < 2) return MatrixWeight{};
  const MatrixWeight& first = *parts[0];
  std::int64_t rows = 0;
  std::uint64_t bytes = 0;
  for (const MatrixWeight* p : parts) {
    if (p->view.type != first.view.type || p->kernels != first.kernels || p->view.ne[0] != first.view.ne[0] ||
        p->view.nb[1] != first.view.nb[1] || p->bytes != static_cast<std::uint64_t>(p->view.ne[1]) * p->view.nb[1])
      return MatrixWeight{};
    rows += p->view.ne[1];
    bytes += p->bytes;
  }
  MatrixWeight m;
  m.name = std::move(name);
  m.kernels = first.kernels;
  m.bytes = bytes;
  m.view = first.view;
  m.view.data = nullptr;
  m.view.ne[1] = rows;
  m.view.nb[2] = m.view.nb[3] = bytes;
  return m;
}

Expected<MatrixWeight> stack_rows(std::span<const MatrixWeight* const> parts, std::string name) {
  MatrixWeight m = stacked_shape(parts, std::move(name));
  if (!m.kernels) return m;
  auto storage = StackedBytes::allocate(m.bytes);
  if (!storage) return std::move(storage).status();
  std::uint8_t* dst = (*storage)->data();
  for (const MatrixWeight* p : parts) {
    std::memcpy(dst, p->view.data, p->bytes);
    dst += p->bytes;
  }
  m.view.data = (*storage)->data();
  m.storage = std::move(*storage);
  return m;
}

}  // namespace graft
