// Facts of the GGUF container: value types and the block geometry of every ggml type id the
// loader knows. Weight-format plugins extend the table at run time (TypeTable::add), so a
// new format id needs no host recompile.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "graft/tensor.hpp"

namespace graft::gguf {

enum class ValueType : std::uint32_t {
  u8 = 0, i8 = 1, u16 = 2, i16 = 3, u32 = 4, i32 = 5, f32 = 6, boolean = 7,
  string = 8, array = 9, u64 = 10, i64 = 11, f64 = 12,
};

const char* value_type_name(ValueType t) noexcept;

struct TypeInfo {
  std::string name;
  std::uint32_t block_elems = 1;
  std::uint32_t block_bytes = 0;
};

class TypeTable {
 public:
  // Every ggml type with a fixed block geometry (F32, F16, BF16, Q4_0 ... Q1_0, Q2_0, TQ*, ...).
  static const TypeTable& builtin();

  const TypeInfo* find(TypeId id) const;
  void add(TypeId id, TypeInfo info);

  // Bytes of a row of n elements, or nullopt when n is not a whole number of blocks.
  std::optional<std::uint64_t> row_bytes(TypeId id, std::uint64_t n) const;

 private:
  std::map<TypeId, TypeInfo> types_;
};

}  // namespace graft::gguf
