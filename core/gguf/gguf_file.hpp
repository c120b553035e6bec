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
#include <vector>

#include "graft/status.hpp"
#include "gguf/gguf_types.hpp"

namespace graft::gguf {

// One metadata value. Arrays hold a type and their elements; nested arrays are allowed.
struct Value {
  ValueType type = ValueType::u8;
  // Scalars: integers widened to i64/u64 as stored signedness dictates.
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
  std::string to_string(std::size_t max_items = 8) const;  // for `graft info`
};

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

  friend class Parser;
};

}  // namespace graft::gguf
