// Binds a file's tensors by name to the weight-format kernels of one backend, checking each
// shape, and remembers which it bound: a tensor of the file that no layer binds is refused
// (check_all_used), so a model is never run while computing differently from its definition.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <string_view>

#include "graft/backend.hpp"
#include "graft/host.hpp"
#include "gguf/gguf_file.hpp"

namespace graft {

struct ModelParams;
struct MatrixWeight;
struct VectorWeight;

class TensorBinder {
 public:
  // upload = false: vectors stay in host memory even for a GPU (the memory planner binds to count,
  // not to run).
  TensorBinder(const gguf::File& f, const HostServices& host, Backend& backend, bool upload = true)
      : f_(f), host_(host), backend_(backend), upload_(upload) {}

  // A matrix [k, m] (y = x W^T) bound to its format's kernels. Errors name the file and tensor.
  Status matrix(const std::string& name, std::uint64_t k, std::uint64_t m, MatrixWeight& out);
  // A vector of n elements as f32 (converted when the file stores another type), in memory the
  // backend reads (uploaded where it cannot read the host's).
  Status vector(const std::string& name, std::uint64_t n, VectorWeight& out);
  // Every tensor of the file bound, or in a block after the main layers (an MTP head: drafters
  // bind those); otherwise the first one that is not, with why.
  Status check_all_used(const ModelParams& p) const;

  const gguf::File& file() const { return f_; }

 private:
  const gguf::File& f_;
  const HostServices& host_;
  Backend& backend_;
  bool upload_;
  std::set<std::string> used_;
};

}  // namespace graft
