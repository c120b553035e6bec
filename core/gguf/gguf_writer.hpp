// Writes GGUF v3 files (quantize, synth, the model zoo's tests, corrupt-file fixtures).
#pragma once

#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

#include "graft/status.hpp"
#include "gguf/gguf_file.hpp"

namespace graft::gguf {

class Writer {
 public:
  explicit Writer(const TypeTable& types = TypeTable::builtin());

  void set_alignment(std::uint32_t alignment);  // also writes general.alignment
  void add(std::string key, Value value);       // replaces an existing key
  void add_string(std::string key, std::string v);
  void add_u32(std::string key, std::uint32_t v);
  void add_i32(std::string key, std::int32_t v);
  void add_u64(std::string key, std::uint64_t v);
  void add_f32(std::string key, float v);
  void add_bool(std::string key, bool v);
  void add_string_array(std::string key, std::vector<std::string> v);
  void add_i32_array(std::string key, std::vector<std::int32_t> v);
  void add_f32_array(std::string key, std::vector<float> v);

  // data must hold exactly the bytes the type geometry implies; copied.
  Status add_tensor(std::string name, std::span<const std::uint64_t> ne, TypeId type,
                    std::span<const std::uint8_t> data);

  std::vector<std::uint8_t> to_bytes() const;
  Status write(const std::filesystem::path& path) const;  // atomically (temp + rename)

 private:
  const TypeTable* types_;
  std::uint32_t alignment_ = 32;
  std::vector<KeyValue> kv_;
  struct PendingTensor {
    std::string name;
    std::vector<std::uint64_t> ne;
    TypeId type;
    std::vector<std::uint8_t> data;
  };
  std::vector<PendingTensor> tensors_;
};

}  // namespace graft::gguf
