// GGUF v3 writer: header, metadata, tensor infos, zero padding to the alignment, then each
// tensor's data padded to the alignment (the layout ggml writes, so other tools load our files).
#include "gguf/gguf_writer.hpp"

#include <cstring>
#include <utility>

#include "common/atomic_file.hpp"

namespace graft::gguf {
namespace {

bool valid_alignment(std::uint64_t a) { return a != 0 && (a & (a - 1)) == 0; }

std::uint64_t pad_to(std::uint64_t n, std::uint64_t a) { return (n + a - 1) / a * a; }

class Out {
 public:
  explicit Out(std::vector<std::uint8_t>& b) : b_(b) {}
  void le(std::uint64_t v, unsigned n) {
    for (unsigned k = 0; k < n; ++k) b_.push_back(static_cast<std::uint8_t>(v >> (8 * k)));
  }
  void u32(std::uint32_t v) { le(v, 4); }
  void u64(std::uint64_t v) { le(v, 8); }
  void str(std::string_view s) {
    u64(s.size());
    b_.insert(b_.end(), s.begin(), s.end());
  }
  void bytes(std::span<const std::uint8_t> d) { b_.insert(b_.end(), d.begin(), d.end()); }
  void zeros(std::uint64_t n) { b_.resize(b_.size() + n, 0); }
  std::size_t size() const { return b_.size(); }

  // Writes v as type t (t, not v.type, decides the encoding: array elements follow their
  // array's element type).
  void value(ValueType t, const Value& v) {
    switch (t) {
      case ValueType::u8: case ValueType::boolean: case ValueType::i8:
        le(t == ValueType::boolean ? (v.b ? 1 : 0) : raw_int(v), 1);
        break;
      case ValueType::u16: case ValueType::i16: le(raw_int(v), 2); break;
      case ValueType::u32: case ValueType::i32: le(raw_int(v), 4); break;
      case ValueType::u64: case ValueType::i64: le(raw_int(v), 8); break;
      case ValueType::f32: {
        float x = static_cast<float>(v.f);
        std::uint32_t bits;
        std::memcpy(&bits, &x, 4);
        u32(bits);
        break;
      }
      case ValueType::f64: {
        std::uint64_t bits;
        std::memcpy(&bits, &v.f, 8);
        u64(bits);
        break;
      }
      case ValueType::string: str(v.str); break;
      case ValueType::array:
        u32(static_cast<std::uint32_t>(v.elem_type));
        u64(v.items.size());
        for (const auto& item : v.items) value(v.elem_type, item);
        break;
    }
  }

 private:
  static std::uint64_t raw_int(const Value& v) {
    return is_signed_integer(v.type) ? static_cast<std::uint64_t>(v.i) : v.u;
  }
  std::vector<std::uint8_t>& b_;
};

}  // namespace

Writer::Writer(const TypeTable& types) : types_(&types) {}

void Writer::set_alignment(std::uint32_t alignment) {
  alignment_ = alignment;
  add_u32("general.alignment", alignment);
}

void Writer::add(std::string key, Value value) {
  for (auto& kv : kv_) {
    if (kv.key == key) {
      kv.value = std::move(value);
      return;
    }
  }
  kv_.push_back(KeyValue{std::move(key), std::move(value)});
}

void Writer::add_string(std::string key, std::string v) { add(std::move(key), Value::from_string(std::move(v))); }
void Writer::add_u32(std::string key, std::uint32_t v) { add(std::move(key), Value::from_uint(ValueType::u32, v)); }
void Writer::add_i32(std::string key, std::int32_t v) { add(std::move(key), Value::from_int(ValueType::i32, v)); }
void Writer::add_u64(std::string key, std::uint64_t v) { add(std::move(key), Value::from_uint(ValueType::u64, v)); }
void Writer::add_f32(std::string key, float v) { add(std::move(key), Value::from_real(ValueType::f32, v)); }
void Writer::add_bool(std::string key, bool v) { add(std::move(key), Value::from_bool(v)); }

void Writer::add_string_array(std::string key, std::vector<std::string> v) {
  std::vector<Value> items;
  items.reserve(v.size());
  for (auto& s : v) items.push_back(Value::from_string(std::move(s)));
  add(std::move(key), Value::from_array(ValueType::string, std::move(items)));
}

void Writer::add_i32_array(std::string key, std::vector<std::int32_t> v) {
  std::vector<Value> items;
  items.reserve(v.size());
  for (auto x : v) items.push_back(Value::from_int(ValueType::i32, x));
  add(std::move(key), Value::from_array(ValueType::i32, std::move(items)));
}

void Writer::add_f32_array(std::string key, std::vector<float> v) {
  std::vector<Value> items;
  items.reserve(v.size());
  for (auto x : v) items.push_back(Value::from_real(ValueType::f32, x));
  add(std::move(key), Value::from_array(ValueType::f32, std::move(items)));
}

Status Writer::add_tensor(std::string name, std::span<const std::uint64_t> ne, TypeId type,
                          std::span<const std::uint8_t> data) {
  auto bad = [&](const std::string& why) { return Status(Errc::invalid_argument, "tensor '" + name + "': " + why); };
  if (name.empty()) return Status(Errc::invalid_argument, "tensor name is empty");
  if (name.size() > kMaxTensorName) {
    return bad("name is " + std::to_string(name.size()) + " bytes, ggml allows at most " +
               std::to_string(kMaxTensorName));
  }
  for (const auto& t : tensors_) {
    if (t.name == name) return bad("duplicate tensor name");
  }
  if (ne.empty() || ne.size() > 4) return bad("needs 1 to 4 dimensions, got " + std::to_string(ne.size()));
  const TypeInfo* info = types_->find(type);
  if (!info) return bad("unknown ggml type id " + std::to_string(type));
  auto row = types_->row_bytes(type, ne[0]);
  if (!row) {
    return bad("ne[0]=" + std::to_string(ne[0]) + " is not a multiple of the " + info->name + " block size " +
               std::to_string(info->block_elems));
  }
  std::uint64_t bytes = *row;
  for (std::size_t j = 1; j < ne.size(); ++j) {
    if (__builtin_mul_overflow(bytes, ne[j], &bytes)) return bad("byte size overflows");
  }
  if (bytes != data.size()) {
    return bad("shape and type need " + std::to_string(bytes) + " bytes, got " + std::to_string(data.size()));
  }
  tensors_.push_back(PendingTensor{std::move(name), std::vector<std::uint64_t>(ne.begin(), ne.end()), type,
                                   std::vector<std::uint8_t>(data.begin(), data.end())});
  return {};
}

std::vector<std::uint8_t> Writer::to_bytes() const {
  // An invalid alignment is still written as the key (corrupt-file fixtures rely on that), but
  // the layout falls back to the default so the arithmetic stays defined.
  std::uint64_t align = valid_alignment(alignment_) ? alignment_ : 32;
  std::vector<std::uint8_t> buf;
  Out out(buf);
  out.u32(0x46554747);  // "GGUF"
  out.u32(3);
  out.u64(tensors_.size());
  out.u64(kv_.size());
  for (const auto& kv : kv_) {
    out.str(kv.key);
    out.u32(static_cast<std::uint32_t>(kv.value.type));
    out.value(kv.value.type, kv.value);
  }
  std::uint64_t offset = 0;
  for (const auto& t : tensors_) {
    out.str(t.name);
    out.u32(static_cast<std::uint32_t>(t.ne.size()));
    for (auto n : t.ne) out.u64(n);
    out.u32(t.type);
    out.u64(offset);
    offset += pad_to(t.data.size(), align);
  }
  if (tensors_.empty()) return buf;  // no data blob, no padding (as the reference vocab files)
  out.zeros(pad_to(out.size(), align) - out.size());
  for (const auto& t : tensors_) {
    out.bytes(t.data);
    out.zeros(pad_to(t.data.size(), align) - t.data.size());
  }
  return buf;
}

Status Writer::write(const std::filesystem::path& path) const {
  if (!valid_alignment(alignment_)) {
    return Status(Errc::invalid_argument,
                  path.string() + ": alignment " + std::to_string(alignment_) + " is not a power of two");
  }
  std::vector<std::uint8_t> bytes;
  try {
    bytes = to_bytes();
  } catch (const std::bad_alloc&) {
    return Status(Errc::out_of_memory, path.string() + ": out of memory building the file");
  }
  return write_file_atomically(path, bytes);
}

}  // namespace graft::gguf
