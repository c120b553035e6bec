// Projections that read the same input, stacked into one matrix: q, k and v (and gate and up) are
// multiplied by the same normalized activations, so one matmul over their rows one after another
// converts the activations once and hands the threads one call instead of three. Each row's
// result is the same bits as in its own matrix (rows never share a reduction), and the consumers
// read their part of the output as a row-strided view ([token][q | k | v]).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "graft/status.hpp"
#include "model/model_weights.hpp"

namespace graft {

// Anonymous memory holding a stacked matrix's bytes. Once the kernels have made their own layout of
// it, its pages are returned to the system (the address stays mapped, reading zeros), as the file's
// pages of a prepared matrix are.
class StackedBytes {
 public:
  static Expected<std::shared_ptr<StackedBytes>> allocate(std::uint64_t bytes);
  ~StackedBytes();
  StackedBytes(const StackedBytes&) = delete;
  StackedBytes& operator=(const StackedBytes&) = delete;

  std::uint8_t* data() const noexcept { return data_; }
  std::uint64_t size() const noexcept { return size_; }
  // Drops the pages; returns the bytes given back.
  std::uint64_t release() noexcept;

 private:
  StackedBytes(std::uint8_t* data, std::uint64_t size) : data_(data), size_(size) {}
  std::uint8_t* data_;
  std::uint64_t size_;
};

// The parts' rows one after another as one matrix named `name`, or an empty MatrixWeight
// (kernels == nullptr) when the parts cannot be stacked: different types, kernels or row lengths.
Expected<MatrixWeight> stack_rows(std::span<const MatrixWeight* const> parts, std::string name);
// The matrix stack_rows would make, without its bytes (view.data null, no storage): what the
// memory planner measures.
MatrixWeight stacked_shape(std::span<const MatrixWeight* const> parts, std::string name);

}  // namespace graft
