// A GGUF v3 writer that never holds tensor data: all tensor shapes are declared first, so the
// header (metadata, tensor infos with their final offsets) is written up front, then each
// tensor's bytes are streamed in declaration order, in as many pieces as the caller likes.
// The file appears atomically (temp file + rename) and only once finish() succeeds. Produces the
// same bytes as gguf::Writer for the same content.
#pragma once

#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

#include "graft/status.hpp"
#include "gguf/gguf_writer.hpp"

namespace graft::synth {

class StreamingWriter {
 public:
  explicit StreamingWriter(const gguf::TypeTable& types);
  ~StreamingWriter();
  StreamingWriter(const StreamingWriter&) = delete;
  StreamingWriter& operator=(const StreamingWriter&) = delete;

  // Metadata keys (written with gguf::Writer's encoding). The alignment is 32 and is stored.
  gguf::Writer& metadata() { return meta_; }

  // Before open(): one tensor's name, shape and type (checked as gguf::Writer checks them).
  Status declare(std::string name, std::vector<std::uint64_t> ne, TypeId type);
  std::uint64_t tensor_bytes(std::size_t index) const { return tensors_[index].bytes; }
  std::uint64_t total_tensor_bytes() const;

  // Creates the temporary file next to `path` and writes the header.
  Status open(const std::filesystem::path& path);
  // Appends bytes of the current tensor; the tensor ends (and is padded) once its size is
  // reached. Bytes past the end of a tensor are an error.
  Status append(std::span<const std::uint8_t> bytes);
  // Every tensor not yet written as zeros the file system does not store (a sparse hole): a file
  // with the shapes and the size of a real one, for planning memory, not for running.
  Status skip_rest();
  // Checks every tensor was written completely, syncs and renames into place.
  Status finish();

 private:
  struct Declared {
    std::string name;
    std::vector<std::uint64_t> ne;
    TypeId type;
    std::uint64_t bytes;
  };
  Status put(const void* data, std::size_t n);
  Status flush_buffer();
  Status io_error(const char* what);
  void abandon();

  const gguf::TypeTable* types_;
  gguf::Writer meta_;
  std::vector<Declared> tensors_;
  std::filesystem::path path_;
  std::string tmp_;
  int fd_ = -1;
  std::vector<std::uint8_t> buf_;
  std::size_t current_ = 0;         // index of the tensor being written
  std::uint64_t written_ = 0;       // bytes of it written so far
};

}  // namespace graft::synth
