#include "tensor_check.hpp"

#include <cmath>

#include <cstdint>
#include <cstdio>
#include <cstdlib>

namespace graft::cpu {

namespace {
// Keeps element counts and byte sizes far from int64/size_t overflow (2^48 bytes = 256 TiB).
constexpr std::int64_t kMaxBytes = std::int64_t{1} << 48;

std::string list_types(std::initializer_list<TypeId> types) {
  std::string s;
  std::size_t i = 0;
  for (TypeId t : types) {
    if (i > 0) s += (i + 1 == types.size()) ? " or " : ", ";
    s += type_name(t);
    ++i;
  }
  return s;
}
}  // namespace

std::string type_name(TypeId type) {
  switch (type) {
    case type_id::f32: return "f32";
    case type_id::f16: return "f16";
    case type_id::bf16: return "bf16";
    case type_id::i8: return "i8";
    case type_id::i16: return "i16";
    case type_id::i32: return "i32";
    case type_id::i64: return "i64";
    case type_id::f64: return "f64";
    case type_id::q4_0: return "q4_0";
    case type_id::q4_1: return "q4_1";
    case type_id::q5_0: return "q5_0";
    case type_id::q5_1: return "q5_1";
    case type_id::q8_0: return "q8_0";
    case type_id::q8_1: return "q8_1";
    case type_id::q2_k: return "q2_k";
    case type_id::q3_k: return "q3_k";
    case type_id::q4_k: return "q4_k";
    case type_id::q5_k: return "q5_k";
    case type_id::q6_k: return "q6_k";
    case type_id::q8_k: return "q8_k";
    case type_id::tq1_0: return "tq1_0";
    case type_id::tq2_0: return "tq2_0";
    case type_id::mxfp4: return "mxfp4";
    case type_id::nvfp4: return "nvfp4";
    case type_id::q1_0: return "q1_0";
    case type_id::q2_0: return "q2_0";
    default: return "id " + std::to_string(type);
  }
}

std::size_t dense_element_size(TypeId type) noexcept {
  switch (type) {
    case type_id::f32:
    case type_id::i32: return 4;
    case type_id::f16:
    case type_id::bf16: return 2;
    case type_id::i8: return 1;
    default: return 0;
  }
}

namespace {

std::string check_tensor(const char* name, const TensorView& t, std::initializer_list<TypeId> types, bool strided_rows) {
  auto n = [name] { return std::string(name); };
  bool type_ok = false;
  for (TypeId ty : types) type_ok = type_ok || ty == t.type;
  if (!type_ok) return n() + " has type " + type_name(t.type) + "; expected " + list_types(types);
  if (t.n_dims < 1 || t.n_dims > kMaxDims)
    return n() + " has n_dims = " + std::to_string(t.n_dims) + "; expected 1 to " + std::to_string(kMaxDims);
  // (The texts are built only on failure: every op checks its tensors on every call.)
  auto ne = [&](int d) { return "ne[" + std::to_string(d) + "] = " + std::to_string(t.ne[d]); };
  for (int d = 0; d < kMaxDims; ++d) {
    if (d == 0 && t.ne[0] < 1) return n() + " has " + ne(d) + "; rows must not be empty";
    if (t.ne[d] < 0) return n() + " has " + ne(d);
    if (d >= t.n_dims && t.ne[d] != 1)
      return n() + " has " + ne(d) + " beyond its n_dims = " + std::to_string(t.n_dims);
  }
  const std::size_t esize = dense_element_size(t.type);
  std::int64_t bytes = static_cast<std::int64_t>(esize ? esize : 1);
  for (int d = 0; d < kMaxDims; ++d) {
    if (t.ne[d] == 0) break;  // empty tensor: no size to overflow
    if (t.ne[d] > kMaxBytes / bytes) return n() + " is too large: " + shape_string(t);
    bytes *= t.ne[d];
  }
  if (t.nb[0] != esize)
    return n() + " is not contiguous: nb[0] = " + std::to_string(t.nb[0]) + ", expected " + std::to_string(esize);
  std::size_t packed = esize;
  std::size_t spanned = esize * static_cast<std::size_t>(t.ne[0]);  // bytes dimensions < d span
  for (int d = 1; d < kMaxDims; ++d) {
    packed *= static_cast<std::size_t>(t.ne[d - 1]);
    if (t.ne[d] <= 1) continue;
    if (!strided_rows && t.nb[d] != packed)
      return n() + " is not contiguous: nb[" + std::to_string(d) + "] = " + std::to_string(t.nb[d]) + ", expected " +
             std::to_string(packed);
    if (strided_rows && (t.nb[d] < spanned || t.nb[d] % esize != 0 || t.nb[d] > std::size_t(kMaxBytes)))
      return n() + " has nb[" + std::to_string(d) + "] = " + std::to_string(t.nb[d]) +
             "; rows must not overlap: expected a multiple of " + std::to_string(esize) + " of at least " +
             std::to_string(spanned);
    spanned = t.nb[d] * static_cast<std::size_t>(t.ne[d] - 1) + spanned;
    if (spanned > std::size_t(kMaxBytes)) return n() + " is too large: " + shape_string(t);
  }
  if (t.data == nullptr && t.elements() > 0) return n() + " has no data (null pointer)";
  return {};
}

}  // namespace

std::string check_dense(const char* name, const TensorView& t, std::initializer_list<TypeId> types) {
  return check_tensor(name, t, types, false);
}

std::string check_rows(const char* name, const TensorView& t, std::initializer_list<TypeId> types) {
  return check_tensor(name, t, types, true);
}

std::string check_index(const char* name, const TensorView& t, std::int64_t n, bool optional,
                        const std::int32_t** out) {
  *out = nullptr;
  if (!t.data) {
    if (optional || n == 0) return "";
    return std::string(name) + " is null";
  }
  if (t.type != type_id::i32) return std::string(name) + " has type " + type_name(t.type) + "; expected i32";
  if (t.ne[0] != n || t.ne[1] != 1 || t.ne[2] != 1 || t.ne[3] != 1)
    return std::string(name) + " has shape " + shape_string(t) + "; expected [" + std::to_string(n) + "]";
  if (t.nb[0] != sizeof(std::int32_t)) return std::string(name) + " is not packed";
  *out = static_cast<const std::int32_t*>(t.data);
  return "";
}

std::size_t span_bytes(const TensorView& t) noexcept {
  if (t.elements() == 0) return 0;
  std::size_t s = dense_element_size(t.type) * static_cast<std::size_t>(t.ne[0]);
  for (int d = 1; d < kMaxDims; ++d)
    if (t.ne[d] > 1) s += t.nb[d] * static_cast<std::size_t>(t.ne[d] - 1);
  return s;
}

std::string shape_string(const TensorView& t) {
  std::string s = "[";
  const int dims = t.n_dims < 1 ? 1 : (t.n_dims > kMaxDims ? kMaxDims : t.n_dims);
  for (int d = 0; d < dims; ++d) {
    if (d) s += ", ";
    s += std::to_string(t.ne[d]);
  }
  return s + "]";
}

bool same_shape(const TensorView& a, const TensorView& b) noexcept { return a.ne == b.ne; }

Overlap overlap(const TensorView& a, const TensorView& b) noexcept {
  const auto begin_a = reinterpret_cast<std::uintptr_t>(a.data);
  const auto begin_b = reinterpret_cast<std::uintptr_t>(b.data);
  const std::uintptr_t size_a = span_bytes(a), size_b = span_bytes(b);
  if (size_a == 0 || size_b == 0) return Overlap::none;
  if (begin_a + size_a <= begin_b || begin_b + size_b <= begin_a) return Overlap::none;
  bool same = begin_a == begin_b && a.type == b.type && a.ne == b.ne;
  for (int d = 1; same && d < kMaxDims; ++d) same = a.ne[d] <= 1 || a.nb[d] == b.nb[d];
  return same ? Overlap::same : Overlap::partial;
}

std::string check_output(const char* out_name, const TensorView& out, const char* in_name, const TensorView& in,
                         bool in_place_ok) {
  const std::string o = out_name, i = in_name;
  if (!same_shape(out, in)) return o + " has shape " + shape_string(out) + "; expected " + shape_string(in) + " like " + i;
  switch (overlap(out, in)) {
    case Overlap::none: return {};
    case Overlap::same:
      if (in_place_ok) return {};
      return o + " is " + i + "; this op cannot run in place";
    case Overlap::partial:
      return o + " partially overlaps " + i + (in_place_ok ? "; in place needs " + o + " and " + i + " to be the same memory" : "");
  }
  return {};
}

std::string check_eps(float eps) {
  if (!std::isfinite(eps) || eps < 0.0f) return "eps = " + number(eps) + " must be finite and >= 0";
  return "";
}

std::string check_rope_params(const TensorView& x, const RopeParams& p) {
  const std::int64_t head_dim = x.ne[0];
  if (p.n_rot < 2 || p.n_rot % 2 != 0 || p.n_rot > head_dim)
    return "n_rot = " + std::to_string(p.n_rot) + " must be even and between 2 and head_dim = " + std::to_string(head_dim);
  if (!std::isfinite(p.freq_base) || p.freq_base <= 0.0f)
    return "freq_base = " + number(p.freq_base) + " must be positive and finite";
  if (!std::isfinite(p.freq_scale) || p.freq_scale <= 0.0f)
    return "freq_scale = " + number(p.freq_scale) + " must be positive and finite";
  return "";
}

std::string number(float v) {
  char buf[32];
  for (int precision = 1; precision <= 9; ++precision) {
    std::snprintf(buf, sizeof buf, "%.*g", precision, static_cast<double>(v));
    if (std::strtof(buf, nullptr) == v) break;  // NaN never compares equal: ends at 9 digits, "nan"
  }
  return buf;
}

Status op_error(const char* op, const std::string& what) {
  return Status(Errc::invalid_argument, std::string("cpu backend: ") + op + ": " + what);
}

}  // namespace graft::cpu
