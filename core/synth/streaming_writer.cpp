#include "synth/streaming_writer.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace graft::synth {
namespace {

constexpr std::uint64_t kAlignment = 32;
constexpr std::size_t kBufferBytes = 4u << 20;

std::uint64_t pad_to(std::uint64_t n, std::uint64_t a) { return (n + a - 1) / a * a; }

void put_le(std::vector<std::uint8_t>& b, std::uint64_t v, unsigned n) {
  for (unsigned k = 0; k < n; ++k) b.push_back(static_cast<std::uint8_t>(v >> (8 * k)));
}

}  // namespace

StreamingWriter::StreamingWriter(const gguf::TypeTable& types) : types_(&types), meta_(types) {}

StreamingWriter::~StreamingWriter() { abandon(); }

void StreamingWriter::abandon() {
  if (fd_ >= 0) {
    ::close(fd_);
    fd_ = -1;
    ::unlink(tmp_.c_str());
  }
}

Status StreamingWriter::declare(std::string name, std::vector<std::uint64_t> ne, TypeId type) {
  auto bad = [&](const std::string& why) { return Status(Errc::invalid_argument, "tensor '" + name + "': " + why); };
  if (fd_ >= 0) return bad("declared after open()");
  if (name.empty()) return Status(Errc::invalid_argument, "tensor name is empty");
  if (name.size() > gguf::kMaxTensorName) return bad(fmt::format("name is longer than {} bytes", gguf::kMaxTensorName));
  for (const auto& t : tensors_)
    if (t.name == name) return bad("duplicate tensor name");
  if (ne.empty() || ne.size() > 4) return bad(fmt::format("needs 1 to 4 dimensions, got {}", ne.size()));
  const gguf::TypeInfo* info = types_->find(type);
  if (!info) return bad(fmt::format("unknown ggml type id {}", type));
  auto row = types_->row_bytes(type, ne[0]);
  if (!row) return bad(fmt::format("ne[0]={} is not a multiple of the {} block size {}", ne[0], info->name, info->block_elems));
  std::uint64_t bytes = *row;
  for (std::size_t j = 1; j < ne.size(); ++j)
    if (__builtin_mul_overflow(bytes, ne[j], &bytes)) return bad("byte size overflows");
  tensors_.push_back({std::move(name), std::move(ne), type, bytes});
  return {};
}

std::uint64_t StreamingWriter::total_tensor_bytes() const {
  std::uint64_t n = 0;
  for (const auto& t : tensors_) n += t.bytes;
  return n;
}

Status StreamingWriter::io_error(const char* what) {
  Status s(Errc::io_error, fmt::format("{}: {}: {}", path_.string(), what, std::strerror(errno)));
  abandon();
  return s;
}

Status StreamingWriter::flush_buffer() {
  const std::uint8_t* p = buf_.data();
  std::size_t left = buf_.size();
  while (left > 0) {
    const ssize_t n = ::write(fd_, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      return io_error("write failed");
    }
    p += n;
    left -= static_cast<std::size_t>(n);
  }
  buf_.clear();
  return {};
}

Status StreamingWriter::put(const void* data, std::size_t n) {
  const auto* p = static_cast<const std::uint8_t*>(data);
  while (n > 0) {
    const std::size_t take = std::min(n, kBufferBytes - buf_.size());
    buf_.insert(buf_.end(), p, p + take);
    p += take;
    n -= take;
    if (buf_.size() == kBufferBytes) GRAFT_TRY(flush_buffer());
  }
  return {};
}

Status StreamingWriter::open(const std::filesystem::path& path) {
  if (fd_ >= 0) return Status(Errc::internal, "StreamingWriter::open called twice");
  path_ = path;
  meta_.set_alignment(static_cast<std::uint32_t>(kAlignment));
  // gguf::Writer with no tensors emits exactly magic, version, tensor_count (0), kv_count and the
  // metadata: reuse its value encoding, then patch the count and add the tensor infos.
  std::vector<std::uint8_t> head = meta_.to_bytes();
  for (unsigned k = 0; k < 8; ++k) head[8 + k] = static_cast<std::uint8_t>(static_cast<std::uint64_t>(tensors_.size()) >> (8 * k));
  std::uint64_t offset = 0;
  for (const auto& t : tensors_) {
    put_le(head, t.name.size(), 8);
    head.insert(head.end(), t.name.begin(), t.name.end());
    put_le(head, t.ne.size(), 4);
    for (const auto d : t.ne) put_le(head, d, 8);
    put_le(head, t.type, 4);
    put_le(head, offset, 8);
    offset += pad_to(t.bytes, kAlignment);
  }
  if (!tensors_.empty()) head.resize(pad_to(head.size(), kAlignment), 0);

  // Same folder as the target, so the final rename is atomic.
  tmp_ = path.string() + ".tmp-XXXXXX";
  fd_ = ::mkstemp(tmp_.data());
  if (fd_ < 0) return Status(Errc::io_error, fmt::format("{}: cannot create temporary file: {}", path.string(), std::strerror(errno)));
  buf_.reserve(kBufferBytes);
  current_ = 0;
  written_ = 0;
  return put(head.data(), head.size());
}

Status StreamingWriter::append(std::span<const std::uint8_t> bytes) {
  if (fd_ < 0) return Status(Errc::internal, "StreamingWriter::append before open");
  static const std::uint8_t zeros[kAlignment] = {};
  while (!bytes.empty()) {
    while (current_ < tensors_.size() && tensors_[current_].bytes == 0) ++current_;
    if (current_ >= tensors_.size()) {
      abandon();
      return Status(Errc::internal, fmt::format("{}: more tensor data than declared", path_.string()));
    }
    const Declared& t = tensors_[current_];
    const auto n = static_cast<std::size_t>(std::min<std::uint64_t>(t.bytes - written_, bytes.size()));
    GRAFT_TRY(put(bytes.data(), n));
    bytes = bytes.subspan(n);
    written_ += n;
    if (written_ == t.bytes) {
      GRAFT_TRY(put(zeros, static_cast<std::size_t>(pad_to(t.bytes, kAlignment) - t.bytes)));
      ++current_;
      written_ = 0;
    }
  }
  return {};
}

Status StreamingWriter::skip_rest() {
  if (fd_ < 0) return Status(Errc::internal, "StreamingWriter::skip_rest before open");
  GRAFT_TRY(flush_buffer());
  const off_t here = ::lseek(fd_, 0, SEEK_CUR);
  if (here < 0) return io_error("seek failed");
  std::uint64_t end = static_cast<std::uint64_t>(here) - written_;  // the current tensor's start
  for (std::size_t i = current_; i < tensors_.size(); ++i) end += pad_to(tensors_[i].bytes, kAlignment);
  if (::ftruncate(fd_, static_cast<off_t>(end)) != 0) return io_error("truncate failed");
  if (::lseek(fd_, static_cast<off_t>(end), SEEK_SET) < 0) return io_error("seek failed");
  current_ = tensors_.size();
  written_ = 0;
  return {};
}

Status StreamingWriter::finish() {
  if (fd_ < 0) return Status(Errc::internal, "StreamingWriter::finish before open");
  while (current_ < tensors_.size() && tensors_[current_].bytes == 0) ++current_;
  if (current_ < tensors_.size()) {
    Status s(Errc::internal, fmt::format("{}: tensor '{}' got {} of its {} bytes", path_.string(),
                                         tensors_[current_].name, written_, tensors_[current_].bytes));
    abandon();
    return s;
  }
  GRAFT_TRY(flush_buffer());
  if (::fchmod(fd_, 0644) != 0) return io_error("chmod failed");
  if (::fsync(fd_) != 0) return io_error("fsync failed");
  const int rc = ::close(fd_);
  fd_ = -1;
  if (rc != 0) {
    Status s(Errc::io_error, fmt::format("{}: close failed: {}", path_.string(), std::strerror(errno)));
    ::unlink(tmp_.c_str());
    return s;
  }
  if (::rename(tmp_.c_str(), path_.c_str()) != 0) {
    Status s(Errc::io_error, fmt::format("{}: rename failed: {}", path_.string(), std::strerror(errno)));
    ::unlink(tmp_.c_str());
    return s;
  }
  return {};
}

}  // namespace graft::synth
