// GGUF v3 reader. The Parser walks the bytes once with a bounded cursor; every check and its
// reason is listed in docs/gguf.md. Nothing here throws past the public API, and no read
// happens before the cursor has proved the bytes exist.
#include "gguf/gguf_file.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <limits>
#include <new>
#include <utility>

namespace graft::gguf {
namespace {

constexpr std::uint64_t kInt64Max = static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());
constexpr std::uint64_t kMinKvBytes = 8 + 4 + 1;  // empty key, type, smallest value
constexpr std::uint64_t kMinTensorBytes = 8 + 4 + 4 + 8;  // empty name, n_dims, type, offset

[[gnu::format(printf, 1, 2)]] std::string format(const char* fmt, ...) {
  char buf[512];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  return buf;
}

// Names come from untrusted bytes: escape them so an error stays one printable line.
std::string printable(std::string_view s, std::size_t max = 64) {
  std::string out;
  for (std::size_t k = 0; k < s.size() && k < max; ++k) {
    auto c = static_cast<unsigned char>(s[k]);
    if (c < 0x20 || c >= 0x7f || c == '\\' || c == '\'') {
      out += format("\\x%02x", c);
    } else {
      out += static_cast<char>(c);
    }
  }
  if (s.size() > max) out += "...";
  return out;
}

// GGUF files written before ggml's Q2_0 (group 64, 18-byte blocks) used type id 42 for PrismML's
// group-128 layout (34-byte blocks). Such a tensor takes less room than id 42 now implies, so its
// data seems to overlap the next tensor or run past the end; say what it really is. True when a
// tensor of `extent` stored bytes matches the legacy size.
constexpr std::uint32_t kQ2_0Id = 42, kLegacyQ2Elems = 128, kLegacyQ2Bytes = 34;
bool legacy_q2_0(const TensorInfo& t, std::uint64_t extent, std::uint64_t alignment) {
  if (t.type != kQ2_0Id || t.n_dims < 1 || t.ne[0] == 0 || t.ne[0] % kLegacyQ2Elems != 0) return false;
  std::uint64_t rows = 1;
  for (std::uint32_t d = 1; d < t.n_dims; ++d) rows *= t.ne[d];
  const std::uint64_t legacy = rows * (t.ne[0] / kLegacyQ2Elems) * kLegacyQ2Bytes;
  return legacy < t.bytes && extent >= legacy && extent - legacy < alignment;
}
std::string legacy_q2_0_message(const TensorInfo& t) {
  return "tensor '" + printable(t.name) +
         "' is in the legacy PrismML Q2_0 layout (34-byte blocks of 128, stored under type id 42 before "
         "ggml's group-64 Q2_0 took that id); graft does not support it: re-convert the model with current tools";
}

bool valid_value_type(std::uint32_t t) { return t <= static_cast<std::uint32_t>(ValueType::f64); }

std::uint64_t scalar_size(ValueType t) {
  switch (t) {
    case ValueType::u8: case ValueType::i8: case ValueType::boolean: return 1;
    case ValueType::u16: case ValueType::i16: return 2;
    case ValueType::u32: case ValueType::i32: case ValueType::f32: return 4;
    case ValueType::u64: case ValueType::i64: case ValueType::f64: return 8;
    case ValueType::string: case ValueType::array: return 0;
  }
  return 0;
}

// The fewest bytes one element of type t can occupy: bounds a declared count before allocating.
std::uint64_t min_encoded_size(ValueType t) {
  if (t == ValueType::string) return 8;
  if (t == ValueType::array) return 4 + 8;
  return scalar_size(t);
}

std::string shape_string(const TensorInfo& t) {
  std::string s = "[";
  for (std::uint32_t j = 0; j < t.n_dims && j < 4; ++j) {
    if (j) s += ", ";
    s += std::to_string(t.ne[j]);
  }
  return s + "]";
}

void append_escaped(std::string& out, std::string_view s, std::size_t max_chars) {
  std::size_t cut = s.size();
  if (cut > max_chars) {
    cut = max_chars;
    // Never split a UTF-8 sequence.
    while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xC0) == 0x80) --cut;
  }
  out += '"';
  for (std::size_t k = 0; k < cut; ++k) {
    auto c = static_cast<unsigned char>(s[k]);
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20 || c == 0x7f) {
          out += format("\\x%02x", c);
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  out += '"';
  if (cut < s.size()) out += format("...(%zu bytes)", s.size());
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Value

bool is_integer(ValueType t) noexcept {
  switch (t) {
    case ValueType::u8: case ValueType::i8: case ValueType::u16: case ValueType::i16:
    case ValueType::u32: case ValueType::i32: case ValueType::u64: case ValueType::i64: return true;
    default: return false;
  }
}

bool is_signed_integer(ValueType t) noexcept {
  return t == ValueType::i8 || t == ValueType::i16 || t == ValueType::i32 || t == ValueType::i64;
}

std::optional<std::int64_t> Value::as_int() const {
  if (!is_integer(type)) return std::nullopt;
  if (is_signed_integer(type)) return i;
  if (u > kInt64Max) return std::nullopt;
  return static_cast<std::int64_t>(u);
}

std::optional<double> Value::as_real() const {
  if (type == ValueType::f32 || type == ValueType::f64) return f;
  if (!is_integer(type)) return std::nullopt;
  return is_signed_integer(type) ? static_cast<double>(i) : static_cast<double>(u);
}

std::string Value::to_string(std::size_t max_items, std::size_t max_chars) const {
  std::string out;
  switch (type) {
    case ValueType::f32: return format("%.7g", f);
    case ValueType::f64: return format("%.15g", f);
    case ValueType::boolean: return b ? "true" : "false";
    case ValueType::string: append_escaped(out, str, max_chars); return out;
    case ValueType::array: {
      out = format("[%zu item%s", items.size(), items.size() == 1 ? "" : "s");
      if (items.empty()) return out + "]";
      out += ": ";
      std::size_t shown = std::min(items.size(), max_items);
      for (std::size_t k = 0; k < shown; ++k) {
        if (k) out += ", ";
        out += items[k].to_string(max_items, std::min<std::size_t>(max_chars, 40));
      }
      if (shown < items.size()) out += ", ...";
      return out + "]";
    }
    default:
      return is_signed_integer(type) ? std::to_string(i) : std::to_string(u);
  }
}

Value Value::from_uint(ValueType t, std::uint64_t v) {
  Value x;
  x.type = t;
  x.u = v;
  x.i = static_cast<std::int64_t>(v);
  return x;
}

Value Value::from_int(ValueType t, std::int64_t v) {
  Value x;
  x.type = t;
  x.i = v;
  x.u = static_cast<std::uint64_t>(v);
  return x;
}

Value Value::from_real(ValueType t, double v) {
  Value x;
  x.type = t;
  x.f = v;
  return x;
}

Value Value::from_bool(bool v) {
  Value x;
  x.type = ValueType::boolean;
  x.b = v;
  return x;
}

Value Value::from_string(std::string v) {
  Value x;
  x.type = ValueType::string;
  x.str = std::move(v);
  return x;
}

Value Value::from_array(ValueType elem, std::vector<Value> items) {
  Value x;
  x.type = ValueType::array;
  x.elem_type = elem;
  x.items = std::move(items);
  return x;
}

// ---------------------------------------------------------------------------------------------
// Parser

class Parser {
 public:
  Parser(File& file, const TypeTable& types)
      : f_(file), types_(types), data_(file.bytes_.data()), size_(file.bytes_.size()) {}

  Status run() {
    GRAFT_TRY(read_header());
    GRAFT_TRY(read_metadata());
    GRAFT_TRY(read_alignment());
    GRAFT_TRY(read_tensor_infos());
    return check_layout();
  }

 private:
  File& f_;
  const TypeTable& types_;
  const std::uint8_t* data_;
  std::uint64_t size_;
  std::uint64_t pos_ = 0;
  std::uint64_t tensor_count_ = 0;
  std::uint64_t kv_count_ = 0;

  std::uint64_t left() const { return size_ - pos_; }

  Status fail(const std::string& msg) const { return Status(Errc::corrupt, f_.name_ + ": " + msg); }

  Status need(std::uint64_t n, const std::string& where) const {
    if (n <= left()) return {};
    return fail(format("%s: truncated at offset %" PRIu64 " (needs %" PRIu64 " bytes, %" PRIu64 " left)",
                       where.c_str(), pos_, n, left()));
  }

  // Little-endian regardless of the host; callers have checked need(n).
  std::uint64_t take(unsigned n) {
    std::uint64_t v = 0;
    for (unsigned k = 0; k < n; ++k) v |= std::uint64_t{data_[pos_ + k]} << (8 * k);
    pos_ += n;
    return v;
  }

  Status read_u32(std::uint32_t& v, const std::string& where) {
    GRAFT_TRY(need(4, where));
    v = static_cast<std::uint32_t>(take(4));
    return {};
  }

  Status read_u64(std::uint64_t& v, const std::string& where) {
    GRAFT_TRY(need(8, where));
    v = take(8);
    return {};
  }

  Status read_string(std::string& out, const std::string& where) {
    std::uint64_t at = pos_;
    std::uint64_t len = 0;
    GRAFT_TRY(read_u64(len, where));
    if (len > left()) {
      return fail(format("%s: string length %" PRIu64 " at offset %" PRIu64
                         " runs past end of file (%" PRIu64 " bytes left)",
                         where.c_str(), len, at, left()));
    }
    out.assign(reinterpret_cast<const char*>(data_ + pos_), static_cast<std::size_t>(len));
    pos_ += len;
    return {};
  }

  Status read_header() {
    GRAFT_TRY(need(4, "magic"));
    if (std::memcmp(data_, "GGUF", 4) != 0) {
      std::string_view magic(reinterpret_cast<const char*>(data_), 4);
      return fail("bad magic '" + printable(magic) + "' at offset 0 (expected 'GGUF'): not a GGUF file");
    }
    pos_ = 4;
    GRAFT_TRY(read_u32(f_.version_, "version"));
    if (f_.version_ != 3) {
      return fail(format("unsupported GGUF version %" PRIu32 ": graft reads version 3", f_.version_));
    }
    GRAFT_TRY(read_u64(tensor_count_, "tensor count"));
    GRAFT_TRY(read_u64(kv_count_, "metadata key count"));
    // A hostile count must fail here, before anything is sized by it.
    if (tensor_count_ > left() / kMinTensorBytes) {
      return fail(format("tensor count %" PRIu64 " at offset 8 is impossible: the %" PRIu64
                         " bytes after the header hold at most %" PRIu64 " tensor infos",
                         tensor_count_, left(), left() / kMinTensorBytes));
    }
    if (kv_count_ > left() / kMinKvBytes) {
      return fail(format("metadata key count %" PRIu64 " at offset 16 is impossible: the %" PRIu64
                         " bytes after the header hold at most %" PRIu64 " key/value pairs",
                         kv_count_, left(), left() / kMinKvBytes));
    }
    return {};
  }

  Status read_value(ValueType t, int depth, const std::string& where, Value& out) {
    out.type = t;
    if (t == ValueType::string) return read_string(out.str, where);
    if (t == ValueType::array) return read_array(depth, where, out);
    std::uint64_t n = scalar_size(t);
    GRAFT_TRY(need(n, where));
    std::uint64_t raw = take(static_cast<unsigned>(n));
    switch (t) {
      case ValueType::f32: {
        float x;
        auto bits = static_cast<std::uint32_t>(raw);
        std::memcpy(&x, &bits, 4);
        out.f = x;
        break;
      }
      case ValueType::f64: std::memcpy(&out.f, &raw, 8); break;
      case ValueType::boolean: out.b = raw != 0; break;
      default:
        if (is_signed_integer(t)) {
          unsigned shift = static_cast<unsigned>(64 - 8 * n);
          out.i = static_cast<std::int64_t>(raw << shift) >> shift;  // sign-extend
          if (out.i >= 0) out.u = static_cast<std::uint64_t>(out.i);
        } else {
          out.u = raw;
          if (raw <= kInt64Max) out.i = static_cast<std::int64_t>(raw);
        }
    }
    return {};
  }

  Status read_array(int depth, const std::string& where, Value& out) {
    std::uint64_t at = pos_;
    std::uint32_t et = 0;
    GRAFT_TRY(read_u32(et, where));
    if (!valid_value_type(et)) {
      return fail(format("%s: unknown array element type %" PRIu32 " at offset %" PRIu64, where.c_str(), et, at));
    }
    out.elem_type = static_cast<ValueType>(et);
    if (out.elem_type == ValueType::array && depth + 1 > kMaxArrayDepth) {
      return fail(format("%s: arrays nested deeper than %d at offset %" PRIu64, where.c_str(), kMaxArrayDepth, at));
    }
    std::uint64_t count = 0;
    GRAFT_TRY(read_u64(count, where));
    if (count > left() / min_encoded_size(out.elem_type)) {
      return fail(format("%s: array of %" PRIu64 " %s elements at offset %" PRIu64
                         " runs past end of file (%" PRIu64 " bytes left)",
                         where.c_str(), count, value_type_name(out.elem_type), at, left()));
    }
    out.items.resize(static_cast<std::size_t>(count));
    for (auto& item : out.items) GRAFT_TRY(read_value(out.elem_type, depth + 1, where, item));
    return {};
  }

  Status read_metadata() {
    f_.kv_.reserve(static_cast<std::size_t>(kv_count_));
    for (std::uint64_t k = 0; k < kv_count_; ++k) {
      std::uint64_t at = pos_;
      KeyValue& kv = f_.kv_.emplace_back();
      GRAFT_TRY(read_string(kv.key, format("key #%" PRIu64, k)));
      if (!f_.key_index_.emplace(kv.key, f_.kv_.size() - 1).second) {
        return fail(format("duplicate key '%s' at offset %" PRIu64, printable(kv.key).c_str(), at));
      }
      std::string where = "key '" + printable(kv.key) + "'";
      std::uint64_t type_at = pos_;
      std::uint32_t t = 0;
      GRAFT_TRY(read_u32(t, where));
      if (!valid_value_type(t)) {
        return fail(format("%s: unknown value type %" PRIu32 " at offset %" PRIu64, where.c_str(), t, type_at));
      }
      GRAFT_TRY(read_value(static_cast<ValueType>(t), 1, where, kv.value));
    }
    return {};
  }

  Status read_alignment() {
    const Value* v = f_.find("general.alignment");
    if (!v) return {};
    if (v->type != ValueType::u32 || v->u == 0 || (v->u & (v->u - 1)) != 0) {
      return fail("general.alignment must be a u32 power of two, got " +
                  std::string(value_type_name(v->type)) + " " + v->to_string(4, 20));
    }
    f_.alignment_ = v->u;
    return {};
  }

  Status read_tensor_infos() {
    f_.tensors_.reserve(static_cast<std::size_t>(tensor_count_));
    for (std::uint64_t k = 0; k < tensor_count_; ++k) {
      std::uint64_t at = pos_;
      TensorInfo& t = f_.tensors_.emplace_back();
      std::string where = format("tensor #%" PRIu64, k);
      GRAFT_TRY(read_string(t.name, where + " name"));
      if (t.name.empty()) return fail(format("%s: empty name at offset %" PRIu64, where.c_str(), at));
      if (t.name.size() > kMaxTensorName) {
        return fail(format("%s: name is %zu bytes at offset %" PRIu64 ", ggml allows at most %zu", where.c_str(),
                           t.name.size(), at, kMaxTensorName));
      }
      if (!f_.tensor_index_.emplace(t.name, f_.tensors_.size() - 1).second) {
        return fail(format("%s: duplicate tensor name '%s' at offset %" PRIu64, where.c_str(),
                           printable(t.name).c_str(), at));
      }
      where = "tensor '" + printable(t.name) + "'";
      GRAFT_TRY(read_u32(t.n_dims, where));
      if (t.n_dims == 0 || t.n_dims > 4) {
        return fail(format("%s: n_dims %" PRIu32 " is out of range 1..4", where.c_str(), t.n_dims));
      }
      std::uint64_t elems = 1;
      bool overflow = false;
      for (std::uint32_t j = 0; j < t.n_dims; ++j) {
        GRAFT_TRY(read_u64(t.ne[j], where));
        overflow |= t.ne[j] > kInt64Max || __builtin_mul_overflow(elems, t.ne[j], &elems);
      }
      if (overflow || elems > kInt64Max) {
        return fail(where + ": element count of shape " + shape_string(t) + " overflows int64");
      }
      std::uint64_t type_at = pos_;
      GRAFT_TRY(read_u32(t.type, where));
      const TypeInfo* info = types_.find(t.type);
      if (!info) {
        return fail(format("%s: unknown ggml type id %" PRIu32 " at offset %" PRIu64 " (no weight-format plugin provides it)", where.c_str(), t.type, type_at));
      }
      auto row = types_.row_bytes(t.type, t.ne[0]);
      if (!row) {
        return fail(format("%s: ne[0]=%" PRIu64 " is not a multiple of the %s block size %" PRIu32, where.c_str(),
                           t.ne[0], info->name.c_str(), info->block_elems));
      }
      std::uint64_t rows = elems == 0 ? 0 : elems / t.ne[0];
      if (__builtin_mul_overflow(*row, rows, &t.bytes)) {
        return fail(where + ": byte size of shape " + shape_string(t) + " overflows u64");
      }
      GRAFT_TRY(read_u64(t.offset, where));
      if (t.offset % f_.alignment_ != 0) {
        return fail(format("%s: offset %" PRIu64 " is not a multiple of the alignment %" PRIu64, where.c_str(),
                           t.offset, f_.alignment_));
      }
    }
    return {};
  }

  Status check_layout() {
    std::uint64_t a = f_.alignment_;
    std::uint64_t start = (pos_ + a - 1) / a * a;
    f_.data_offset_ = start;
    // Tensor-less files (vocabularies) end right after their metadata, unpadded.
    if (f_.tensors_.empty()) return {};
    if (start > size_) {
      return fail(format("tensor data blob would start at offset %" PRIu64 ", past end of file (%" PRIu64 " bytes)",
                         start, size_));
    }
    std::uint64_t blob = size_ - start;
    for (auto& t : f_.tensors_) {
      if (t.offset > blob || t.bytes > blob - t.offset) {
        if (t.offset <= blob && legacy_q2_0(t, blob - t.offset, a)) return fail(legacy_q2_0_message(t));
        return fail(format("tensor '%s': %" PRIu64 " bytes at data offset %" PRIu64
                           " run past end of file (the data blob holds %" PRIu64 " bytes from offset %" PRIu64 ")",
                           printable(t.name).c_str(), t.bytes, t.offset, blob, start));
      }
      t.data = data_ + start + t.offset;
    }
    std::vector<const TensorInfo*> order;
    order.reserve(f_.tensors_.size());
    for (const auto& t : f_.tensors_) {
      if (t.bytes > 0) order.push_back(&t);
    }
    // Stable, so equal starts report in file order.
    std::stable_sort(order.begin(), order.end(), [](auto* x, auto* y) { return x->offset < y->offset; });
    // Sorted by start: a tensor overlaps an earlier one iff it starts before the furthest end so far.
    const TensorInfo* reach = order.empty() ? nullptr : order[0];
    for (std::size_t k = 1; k < order.size(); ++k) {
      const TensorInfo* cur = order[k];
      if (cur->offset < reach->offset + reach->bytes) {
        if (legacy_q2_0(*reach, cur->offset - reach->offset, f_.alignment_)) return fail(legacy_q2_0_message(*reach));
        return fail(format("tensors '%s' and '%s' overlap (data [%" PRIu64 ", %" PRIu64 ") and [%" PRIu64
                           ", %" PRIu64 "))",
                           printable(reach->name).c_str(), printable(cur->name).c_str(), reach->offset,
                           reach->offset + reach->bytes, cur->offset, cur->offset + cur->bytes));
      }
      if (cur->offset + cur->bytes > reach->offset + reach->bytes) reach = cur;
    }
    return {};
  }
};

// ---------------------------------------------------------------------------------------------
// File

File::~File() {
  if (map_) ::munmap(map_, map_size_);
}

std::uint64_t File::releasable(const std::uint8_t* data, std::uint64_t bytes) const noexcept {
  if (!map_ || !data) return 0;
  const auto base = reinterpret_cast<std::uintptr_t>(map_), b = reinterpret_cast<std::uintptr_t>(data);
  if (b < base || bytes > map_size_ || b - base > map_size_ - bytes) return 0;
  const auto page = static_cast<std::uintptr_t>(::sysconf(_SC_PAGESIZE));
  const std::uintptr_t first = (b + page - 1) / page * page, last = (b + bytes) / page * page;
  return last > first ? last - first : 0;
}

std::uint64_t File::release(const std::uint8_t* data, std::uint64_t bytes) const noexcept {
  if (releasable(data, bytes) == 0) return 0;
  const auto page = static_cast<std::uintptr_t>(::sysconf(_SC_PAGESIZE)), b = reinterpret_cast<std::uintptr_t>(data);
  const std::uintptr_t first = (b + page - 1) / page * page, last = (b + bytes) / page * page;
  // A private read-only file mapping: the dropped pages are read again from the file if touched.
  if (::madvise(reinterpret_cast<void*>(first), last - first, MADV_DONTNEED) != 0) return 0;
  return last - first;
}

Expected<std::shared_ptr<const File>> File::parse(std::span<const std::uint8_t> bytes, const TypeTable& types,
                                                  std::string name) {
  try {
    std::shared_ptr<File> file(new File());
    file->name_ = name;
    file->bytes_ = bytes;
    Parser parser(*file, types);
    GRAFT_TRY(parser.run());
    return std::shared_ptr<const File>(std::move(file));
  } catch (const std::bad_alloc&) {
    return Status(Errc::out_of_memory, name + ": out of memory while reading metadata");
  } catch (const std::exception& e) {
    return Status(Errc::internal, name + ": " + e.what());
  }
}

Expected<std::shared_ptr<const File>> File::open(const std::filesystem::path& path, const TypeTable& types) {
  std::string name = path.string();
  try {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return Status(Errc::io_error, name + ": cannot open: " + std::strerror(errno));
    struct stat st{};
    if (::fstat(fd, &st) != 0) {
      int err = errno;
      ::close(fd);
      return Status(Errc::io_error, name + ": cannot stat: " + std::strerror(err));
    }
    if (!S_ISREG(st.st_mode)) {
      ::close(fd);
      return Status(Errc::invalid_argument, name + ": not a regular file");
    }
    if (st.st_size == 0) {
      ::close(fd);
      return Status(Errc::corrupt, name + ": empty file (0 bytes): not a GGUF file");
    }
    auto size = static_cast<std::size_t>(st.st_size);
    void* map = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
    int err = errno;
    ::close(fd);  // the mapping keeps the file alive
    if (map == MAP_FAILED) return Status(Errc::io_error, name + ": cannot map file: " + std::strerror(err));

    std::shared_ptr<File> file(new File());
    file->map_ = map;  // owned from here: unmapped by ~File on every path
    file->map_size_ = size;
    file->name_ = name;
    file->bytes_ = std::span<const std::uint8_t>(static_cast<const std::uint8_t*>(map), size);
    Parser parser(*file, types);
    GRAFT_TRY(parser.run());
    return std::shared_ptr<const File>(std::move(file));
  } catch (const std::bad_alloc&) {
    return Status(Errc::out_of_memory, name + ": out of memory while reading metadata");
  } catch (const std::exception& e) {
    return Status(Errc::internal, name + ": " + e.what());
  }
}

const Value* File::find(std::string_view key) const {
  auto it = key_index_.find(key);
  return it == key_index_.end() ? nullptr : &kv_[it->second].value;
}

std::optional<std::string> File::get_string(std::string_view key) const {
  const Value* v = find(key);
  if (!v || v->type != ValueType::string) return std::nullopt;
  return v->str;
}

std::optional<std::int64_t> File::get_int(std::string_view key) const {
  const Value* v = find(key);
  return v ? v->as_int() : std::nullopt;
}

std::optional<double> File::get_real(std::string_view key) const {
  const Value* v = find(key);
  return v ? v->as_real() : std::nullopt;
}

std::optional<bool> File::get_bool(std::string_view key) const {
  const Value* v = find(key);
  if (!v || v->type != ValueType::boolean) return std::nullopt;
  return v->b;
}

std::optional<std::vector<std::string>> File::get_string_array(std::string_view key) const {
  const Value* v = find(key);
  if (!v || v->type != ValueType::array || v->elem_type != ValueType::string) return std::nullopt;
  std::vector<std::string> out;
  out.reserve(v->items.size());
  for (const auto& item : v->items) out.push_back(item.str);
  return out;
}

std::optional<std::vector<std::int64_t>> File::get_int_array(std::string_view key) const {
  const Value* v = find(key);
  if (!v || v->type != ValueType::array || !is_integer(v->elem_type)) return std::nullopt;
  std::vector<std::int64_t> out;
  out.reserve(v->items.size());
  for (const auto& item : v->items) {
    auto x = item.as_int();
    if (!x) return std::nullopt;  // a u64 above INT64_MAX
    out.push_back(*x);
  }
  return out;
}

std::optional<std::vector<double>> File::get_real_array(std::string_view key) const {
  const Value* v = find(key);
  if (!v || v->type != ValueType::array) return std::nullopt;
  if (v->elem_type != ValueType::f32 && v->elem_type != ValueType::f64 && !is_integer(v->elem_type)) {
    return std::nullopt;
  }
  std::vector<double> out;
  out.reserve(v->items.size());
  for (const auto& item : v->items) out.push_back(*item.as_real());
  return out;
}

const TensorInfo* File::tensor(std::string_view name) const {
  auto it = tensor_index_.find(name);
  return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

}  // namespace graft::gguf
