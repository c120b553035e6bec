// A validated, read-only GGUF v3 file. Everything is checked once at open time (see
// docs/gguf.md): after a successful open every offset, size, string and array is in bounds, so
// accessors never fail on hostile input.
#pragma once

#include <array>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "graft/status.hpp"
#include "gguf/gguf_types.hpp"

namespace graft::gguf {

// Longest tensor name ggml accepts (GGML_MAX_NAME is 64 including the NUL).
inline constexpr std::size_t kMaxTensorName = 63;
// Deepest array nesting accepted; real files use at most one level.
inline constexpr int kMaxArrayDepth = 4;

// One metadata value. Arrays hold a type and their elements; nested arrays are allowed.
struct Value {
  ValueType type = ValueType::u8;
  // Scalars: integers widened to i64/u64 as stored signedness dictates. The parser fills
  // both fields whenever the value fits either, so `i` of a small u32 is valid too.
  std::int64_t i = 0;
  std::uint64_t u = 0;
  double f = 0;
  bool b = false;
  std::string str;
  ValueType elem_type = ValueType::u8;  // arrays only
  std::vector<Value> items;             // arrays only

  // Typed views that accept any integer type in range; nullopt otherwise.
  std::optional<std::int64_t> as_int() const;
  std::optional<double> as_real() const;  // integers too
  // For `graft info`: strings quoted and escaped, cut after max_chars bytes; arrays as
  // "[n items: a, b, ...]" showing at most max_items elements.
  std::string to_string(std::size_t max_items = 8, std::size_t max_chars = 120) const;

  // Builders for the Writer and tests. from_uint/from_int expect an integer type, from_real
  // f32/f64; out-of-range values are truncated to the type when written.
  static Value from_uint(ValueType t, std::uint64_t v);
  static Value from_int(ValueType t, std::int64_t v);
  static Value from_real(ValueType t, double v);
  static Value from_bool(bool v);
  static Value from_string(std::string v);
  static Value from_array(ValueType elem, std::vector<Value> items);
};

bool is_integer(ValueType t) noexcept;
bool is_signed_integer(ValueType t) noexcept;

struct KeyValue {
  std::string key;
  Value value;
};

struct TensorInfo {
  std::string name;
  std::uint32_t n_dims = 0;
  std::array<std::uint64_t, 4> ne{1, 1, 1, 1};
  TypeId type = 0;
  std::uint64_t offset = 0;  // relative to the data blob
  std::uint64_t bytes = 0;   // exact size from type geometry
  const std::uint8_t* data = nullptr;
  std::uint64_t elements() const { return ne[0] * ne[1] * ne[2] * ne[3]; }
};

class File {
 public:
  // Maps the file read-only and validates it. Errors are one line: "FILE: cause".
  static Expected<std::shared_ptr<const File>> open(const std::filesystem::path& path,
                                                   const TypeTable& types = TypeTable::builtin());
  // Validates bytes the caller keeps alive (tests and the fuzzer).
  static Expected<std::shared_ptr<const File>> parse(std::span<const std::uint8_t> bytes,
                                                    const TypeTable& types = TypeTable::builtin(),
                                                    std::string name = "<memory>");
  ~File();
  File(const File&) = delete;
  File& operator=(const File&) = delete;

  const std::string& name() const { return name_; }
  std::uint32_t version() const { return version_; }
  std::uint64_t alignment() const { return alignment_; }
  std::uint64_t data_offset() const { return data_offset_; }
  std::uint64_t file_size() const { return bytes_.size(); }

  const std::vector<KeyValue>& metadata() const { return kv_; }
  const Value* find(std::string_view key) const;
  std::optional<std::string> get_string(std::string_view key) const;
  std::optional<std::int64_t> get_int(std::string_view key) const;
  std::optional<double> get_real(std::string_view key) const;
  std::optional<bool> get_bool(std::string_view key) const;
  // Array of strings / integers / reals; nullopt if absent or of another element type.
  std::optional<std::vector<std::string>> get_string_array(std::string_view key) const;
  std::optional<std::vector<std::int64_t>> get_int_array(std::string_view key) const;
  std::optional<std::vector<double>> get_real_array(std::string_view key) const;

  const std::vector<TensorInfo>& tensors() const { return tensors_; }
  const TensorInfo* tensor(std::string_view name) const;

  // For a file opened from a path: drops this process's pages wholly inside [data, data + bytes)
  // of the mapping (MADV_DONTNEED; the bytes stay valid, a later read faults them back in from the
  // file). Used for tensors whose kernels keep a copy of their own. Returns the bytes released: 0
  // for a parsed in-memory file or a range outside the mapping.
  std::uint64_t release(const std::uint8_t* data, std::uint64_t bytes) const noexcept;
  // The bytes release(data, bytes) would give back, releasing nothing (the memory planner).
  std::uint64_t releasable(const std::uint8_t* data, std::uint64_t bytes) const noexcept;

 private:
  File() = default;
  std::string name_;
  std::span<const std::uint8_t> bytes_;
  void* map_ = nullptr;  // mmap base when opened from a path
  std::size_t map_size_ = 0;
  std::uint32_t version_ = 0;
  std::uint64_t alignment_ = 32;
  std::uint64_t data_offset_ = 0;
  std::vector<KeyValue> kv_;
  std::vector<TensorInfo> tensors_;
  // Views into kv_[i].key / tensors_[i].name: both vectors are sized before they fill.
  std::unordered_map<std::string_view, std::size_t> key_index_;
  std::unordered_map<std::string_view, std::size_t> tensor_index_;

  friend class Parser;
};

}  // namespace graft::gguf
