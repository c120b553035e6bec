// Validation of the TensorViews handed to the ops: every problem becomes one line of text the op
// prefixes with "cpu backend: <op>: ", so a bad shape is an error and never a crash.
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>

#include "graft/backend.hpp"
#include "graft/status.hpp"
#include "graft/tensor.hpp"

namespace graft::cpu {

// "f32", "bf16", "q8_0", ... (the ids of graft/tensor.hpp) or "id 99" for others.
std::string type_name(TypeId type);
// Bytes per element of f32, f16, bf16, i32 and i8 (the ops' activations are f32, their index
// arrays i32); 0 otherwise.
std::size_t dense_element_size(TypeId type) noexcept;

// "" when t is a packed (contiguous) tensor of one of `types` with a sane shape and data;
// otherwise what is wrong, starting with `name`. Dimensions of extent 1 may have any stride.
std::string check_dense(const char* name, const TensorView& t, std::initializer_list<TypeId> types);

// The same for the ops that take row-strided views (a slice of a fused projection's output):
// each row's ne[0] elements contiguous, and dimensions 1..3 any strides (multiples of the element
// size) that keep rows from overlapping, i.e. nb[d] at least the bytes dimensions < d span.
std::string check_rows(const char* name, const TensorView& t, std::initializer_list<TypeId> types);

// "" when t is a packed i32 vector of n entries (or, when optional, has data null: then *out is
// null); *out is its first entry. The index arrays of the ops (positions, parents, rows).
std::string check_index(const char* name, const TensorView& t, std::int64_t n, bool optional,
                        const std::int32_t** out);

// Bytes from t's first element to the end of its last row (the packed size for a dense tensor).
std::size_t span_bytes(const TensorView& t) noexcept;

// Row r of a checked tensor (rows counted over dimensions 1..3 in order).
template <class T>
T* row_ptr(const TensorView& t, std::size_t r) noexcept {
  const auto n1 = static_cast<std::size_t>(t.ne[1]), n2 = static_cast<std::size_t>(t.ne[2]);
  const std::size_t off = (r % n1) * t.nb[1] + (r / n1 % n2) * t.nb[2] + (r / (n1 * n2)) * t.nb[3];
  return reinterpret_cast<T*>(static_cast<char*>(t.data) + off);
}

// "[1024, 7]": ne[0 .. n_dims).
std::string shape_string(const TensorView& t);
bool same_shape(const TensorView& a, const TensorView& b) noexcept;

enum class Overlap { none, same, partial };
// How the bytes of two (checked) tensors overlap: not at all, exactly (same data, shape and
// strides), or otherwise (by their spans: two interleaved strided views count as overlapping).
Overlap overlap(const TensorView& a, const TensorView& b) noexcept;

// "" when `out` may receive the result of an op on `in`: same shape, and either disjoint from it or,
// when in_place_ok, exactly the same memory.
std::string check_output(const char* out_name, const TensorView& out, const char* in_name, const TensorView& in,
                         bool in_place_ok);

// "" when eps (of rms_norm, l2_norm) is finite and >= 0.
std::string check_eps(float eps);
// "" when p suits rope over x [head_dim, ...]: n_rot even and 2..head_dim, freq_base and
// freq_scale positive and finite. Both backends' rope, so their messages are the same.
std::string check_rope_params(const TensorView& x, const RopeParams& p);

// Shortest round-trip text of a float ("1e-06", "-1", "nan").
std::string number(float v);

// Status(invalid_argument, "cpu backend: <op>: <what>")
Status op_error(const char* op, const std::string& what);

}  // namespace graft::cpu
