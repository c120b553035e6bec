#include "gguf/gguf_types.hpp"

#include <utility>

namespace graft::gguf {

const char* value_type_name(ValueType t) noexcept {
  switch (t) {
    case ValueType::u8: return "u8";
    case ValueType::i8: return "i8";
    case ValueType::u16: return "u16";
    case ValueType::i16: return "i16";
    case ValueType::u32: return "u32";
    case ValueType::i32: return "i32";
    case ValueType::f32: return "f32";
    case ValueType::boolean: return "bool";
    case ValueType::string: return "string";
    case ValueType::array: return "array";
    case ValueType::u64: return "u64";
    case ValueType::i64: return "i64";
    case ValueType::f64: return "f64";
  }
  return "unknown";
}

const TypeTable& TypeTable::builtin() {
  // Geometry checked against ggml-common.h block structs and ggml.c type_traits.
  static const TypeTable table = [] {
    TypeTable t;
    const struct {
      TypeId id;
      const char* name;
      std::uint32_t elems, bytes;
    } rows[] = {
        {0, "f32", 1, 4},         {1, "f16", 1, 2},         {2, "q4_0", 32, 18},
        {3, "q4_1", 32, 20},      {6, "q5_0", 32, 22},      {7, "q5_1", 32, 24},
        {8, "q8_0", 32, 34},      {9, "q8_1", 32, 36},      {10, "q2_k", 256, 84},
        {11, "q3_k", 256, 110},   {12, "q4_k", 256, 144},   {13, "q5_k", 256, 176},
        {14, "q6_k", 256, 210},   {15, "q8_k", 256, 292},   {16, "iq2_xxs", 256, 66},
        {17, "iq2_xs", 256, 74},  {18, "iq3_xxs", 256, 98}, {19, "iq1_s", 256, 50},
        {20, "iq4_nl", 32, 18},   {21, "iq3_s", 256, 110},  {22, "iq2_s", 256, 82},
        {23, "iq4_xs", 256, 136}, {24, "i8", 1, 1},         {25, "i16", 1, 2},
        {26, "i32", 1, 4},        {27, "i64", 1, 8},        {28, "f64", 1, 8},
        {29, "iq1_m", 256, 56},   {30, "bf16", 1, 2},       {34, "tq1_0", 256, 54},
        {35, "tq2_0", 256, 66},   {39, "mxfp4", 32, 17},    {40, "nvfp4", 64, 36},
        {41, "q1_0", 128, 18},    {42, "q2_0", 64, 18},
    };
    for (const auto& r : rows) t.add(r.id, TypeInfo{r.name, r.elems, r.bytes});
    return t;
  }();
  return table;
}

const TypeInfo* TypeTable::find(TypeId id) const {
  auto it = types_.find(id);
  return it == types_.end() ? nullptr : &it->second;
}

void TypeTable::add(TypeId id, TypeInfo info) { types_[id] = std::move(info); }

std::optional<std::uint64_t> TypeTable::row_bytes(TypeId id, std::uint64_t n) const {
  const TypeInfo* t = find(id);
  if (!t || t->block_elems == 0 || n % t->block_elems != 0) return std::nullopt;
  std::uint64_t out = 0;
  if (__builtin_mul_overflow(n / t->block_elems, std::uint64_t{t->block_bytes}, &out)) return std::nullopt;
  return out;
}

}  // namespace graft::gguf
