// Writer -> parser round trips: every value type, arrays, nested arrays, tensors of several
// types, alignment, and the file-level write/open path.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <limits>

#include "gguf_test_util.hpp"

namespace fs = std::filesystem;
using namespace graft::gguf;
using namespace gguf_test;

namespace {

std::shared_ptr<const File> reparse(const Writer& w, Bytes& keep) {
  keep = w.to_bytes();
  auto f = File::parse(keep);
  EXPECT_TRUE(f.has_value()) << (f ? "" : f.status().message());
  return f ? *f : nullptr;
}

fs::path temp_dir() {
  fs::path d = fs::temp_directory_path() / ("graft_gguf_test_" + std::to_string(::getpid()));
  fs::create_directories(d);
  return d;
}

}  // namespace

TEST(ggufRoundTrip, EveryScalarType) {
  Writer w;
  w.add("u8", Value::from_uint(ValueType::u8, 200));
  w.add("i8", Value::from_int(ValueType::i8, -100));
  w.add("u16", Value::from_uint(ValueType::u16, 65535));
  w.add("i16", Value::from_int(ValueType::i16, -32768));
  w.add("u32", Value::from_uint(ValueType::u32, 4000000000u));
  w.add("i32", Value::from_int(ValueType::i32, std::numeric_limits<std::int32_t>::min()));
  w.add("u64", Value::from_uint(ValueType::u64, std::numeric_limits<std::uint64_t>::max()));
  w.add("i64", Value::from_int(ValueType::i64, std::numeric_limits<std::int64_t>::min()));
  w.add("f32", Value::from_real(ValueType::f32, 0.1));
  w.add("f64", Value::from_real(ValueType::f64, 0.1));
  w.add_bool("t", true);
  w.add_bool("f", false);
  w.add_string("s", std::string("h\xC3\xA9llo\0x", 8));  // UTF-8 and an embedded NUL
  w.add_string("empty", "");
  Bytes b;
  auto f = reparse(w, b);
  ASSERT_TRUE(f);
  EXPECT_EQ(f->metadata().size(), 14u);
  EXPECT_EQ(f->get_int("u8"), 200);
  EXPECT_EQ(f->get_int("i8"), -100);
  EXPECT_EQ(f->get_int("u16"), 65535);
  EXPECT_EQ(f->get_int("i16"), -32768);
  EXPECT_EQ(f->get_int("u32"), 4000000000);
  EXPECT_EQ(f->get_int("i32"), std::numeric_limits<std::int32_t>::min());
  EXPECT_EQ(f->get_int("u64"), std::nullopt);  // does not fit int64
  EXPECT_EQ(f->find("u64")->u, std::numeric_limits<std::uint64_t>::max());
  EXPECT_EQ(f->get_int("i64"), std::numeric_limits<std::int64_t>::min());
  EXPECT_EQ(f->get_real("f32"), static_cast<double>(0.1f));
  EXPECT_EQ(f->get_real("f64"), 0.1);
  EXPECT_EQ(f->get_real("u16"), 65535.0);
  EXPECT_EQ(f->get_bool("t"), true);
  EXPECT_EQ(f->get_bool("f"), false);
  EXPECT_EQ(f->get_bool("u8"), std::nullopt);
  EXPECT_EQ(f->get_string("s"), std::string("h\xC3\xA9llo\0x", 8));
  EXPECT_EQ(f->get_string("empty"), "");
  const char* names[] = {"u8", "i8", "u16", "i16", "u32", "i32", "f32", "t", "s", "u64", "i64", "f64"};
  const ValueType types[] = {ValueType::u8,  ValueType::i8,      ValueType::u16,    ValueType::i16,
                             ValueType::u32, ValueType::i32,     ValueType::f32,    ValueType::boolean,
                             ValueType::string, ValueType::u64, ValueType::i64, ValueType::f64};
  for (std::size_t k = 0; k < std::size(names); ++k) EXPECT_EQ(f->find(names[k])->type, types[k]) << names[k];
  // Metadata order is file order.
  EXPECT_EQ(f->metadata().front().key, "u8");
  EXPECT_EQ(f->metadata().back().key, "empty");
  EXPECT_TRUE(f->tensors().empty());
  EXPECT_EQ(f->file_size(), b.size());
}

TEST(ggufRoundTrip, Arrays) {
  Writer w;
  w.add_string_array("strs", {"", "one", "two words", std::string(300, 'z')});
  w.add_i32_array("i32s", {0, -1, 2147483647});
  w.add_f32_array("f32s", {0.25f, -8.0f});
  w.add("u8s", Value::from_array(ValueType::u8, {Value::from_uint(ValueType::u8, 1), Value::from_uint(ValueType::u8, 255)}));
  w.add("u64s", Value::from_array(ValueType::u64, {Value::from_uint(ValueType::u64, 1ull << 63)}));
  w.add("i16s", Value::from_array(ValueType::i16, {Value::from_int(ValueType::i16, -7)}));
  w.add("f64s", Value::from_array(ValueType::f64, {Value::from_real(ValueType::f64, 1e300)}));
  w.add("bools", Value::from_array(ValueType::boolean, {Value::from_bool(true), Value::from_bool(false)}));
  w.add("none", Value::from_array(ValueType::string, {}));
  Value inner1 = Value::from_array(ValueType::i32, {Value::from_int(ValueType::i32, 1), Value::from_int(ValueType::i32, 2)});
  Value inner2 = Value::from_array(ValueType::i32, {Value::from_int(ValueType::i32, 3)});
  w.add("nested", Value::from_array(ValueType::array, {inner1, inner2}));
  // Four levels deep is the most the reader takes.
  Value deep = Value::from_array(ValueType::string, {Value::from_string("leaf")});
  for (int k = 0; k < 3; ++k) deep = Value::from_array(ValueType::array, {deep});
  w.add("deep4", deep);
  Bytes b;
  auto f = reparse(w, b);
  ASSERT_TRUE(f);
  EXPECT_EQ(f->get_string_array("strs"), (std::vector<std::string>{"", "one", "two words", std::string(300, 'z')}));
  EXPECT_EQ(f->get_int_array("i32s"), (std::vector<std::int64_t>{0, -1, 2147483647}));
  EXPECT_EQ(f->get_real_array("f32s"), (std::vector<double>{0.25, -8.0}));
  EXPECT_EQ(f->get_int_array("u8s"), (std::vector<std::int64_t>{1, 255}));
  EXPECT_EQ(f->get_int_array("u64s"), std::nullopt);  // 2^63 does not fit
  EXPECT_EQ(f->get_int_array("i16s"), (std::vector<std::int64_t>{-7}));
  EXPECT_EQ(f->get_real_array("f64s"), (std::vector<double>{1e300}));
  EXPECT_EQ(f->get_real_array("i32s"), (std::vector<double>{0, -1, 2147483647}));
  EXPECT_EQ(f->get_string_array("i32s"), std::nullopt);
  EXPECT_EQ(f->get_int_array("f32s"), std::nullopt);
  EXPECT_EQ(f->get_string_array("none"), std::vector<std::string>{});
  const Value* bools = f->find("bools");
  ASSERT_TRUE(bools);
  ASSERT_EQ(bools->items.size(), 2u);
  EXPECT_TRUE(bools->items[0].b);
  EXPECT_FALSE(bools->items[1].b);
  const Value* nested = f->find("nested");
  ASSERT_TRUE(nested);
  EXPECT_EQ(nested->elem_type, ValueType::array);
  ASSERT_EQ(nested->items.size(), 2u);
  EXPECT_EQ(nested->items[0].items.size(), 2u);
  EXPECT_EQ(nested->items[1].items[0].as_int(), 3);
  EXPECT_EQ(nested->to_string(), "[2 items: [2 items: 1, 2], [1 item: 3]]");
  const Value* d = f->find("deep4");
  ASSERT_TRUE(d);
  EXPECT_EQ(d->items[0].items[0].items[0].items[0].str, "leaf");
}

TEST(ggufRoundTrip, TensorsOfSeveralTypes) {
  Writer w;
  w.set_alignment(64);
  w.add_string("general.architecture", "test");
  struct T {
    const char* name;
    std::vector<std::uint64_t> ne;
    graft::TypeId type;
    std::size_t bytes;
  };
  const T ts[] = {
      {"f32.vec", {5}, graft::type_id::f32, 20},
      {"f16.mat", {3, 7}, graft::type_id::f16, 42},
      {"q4_0.mat", {64, 2}, graft::type_id::q4_0, 72},
      {"q8_0.3d", {32, 2, 3}, graft::type_id::q8_0, 204},
      {"q4_k.row", {256}, graft::type_id::q4_k, 144},
      {"q1_0.4d", {128, 1, 2, 2}, graft::type_id::q1_0, 72},
      {"i32.ids", {3}, graft::type_id::i32, 12},
      {"bf16.zero", {0}, graft::type_id::bf16, 0},
  };
  for (std::size_t k = 0; k < std::size(ts); ++k) {
    ASSERT_TRUE(w.add_tensor(ts[k].name, ts[k].ne, ts[k].type, pattern(ts[k].bytes, std::uint8_t(k))).ok()) << ts[k].name;
  }
  Bytes b;
  auto f = reparse(w, b);
  ASSERT_TRUE(f);
  EXPECT_EQ(f->alignment(), 64u);
  EXPECT_EQ(f->get_int("general.alignment"), 64);
  EXPECT_EQ(f->data_offset() % 64, 0u);
  ASSERT_EQ(f->tensors().size(), std::size(ts));
  for (std::size_t k = 0; k < std::size(ts); ++k) {
    const TensorInfo* t = f->tensor(ts[k].name);
    ASSERT_NE(t, nullptr) << ts[k].name;
    EXPECT_EQ(t, &f->tensors()[k]);  // file order kept
    EXPECT_EQ(t->type, ts[k].type);
    EXPECT_EQ(t->n_dims, ts[k].ne.size());
    for (std::size_t j = 0; j < 4; ++j) EXPECT_EQ(t->ne[j], j < ts[k].ne.size() ? ts[k].ne[j] : 1u);
    EXPECT_EQ(t->bytes, ts[k].bytes);
    EXPECT_EQ(t->offset % 64, 0u);
    Bytes expect = pattern(ts[k].bytes, std::uint8_t(k));
    EXPECT_TRUE(std::equal(expect.begin(), expect.end(), t->data)) << ts[k].name;
    EXPECT_EQ(t->data, b.data() + f->data_offset() + t->offset);
  }
  EXPECT_EQ(f->tensor("q8_0.3d")->elements(), 192u);
  EXPECT_EQ(f->tensor("missing"), nullptr);
  EXPECT_EQ(b.size() % 64, 0u);  // the last tensor is padded too
}

TEST(ggufRoundTrip, AddReplacesExistingKey) {
  Writer w;
  w.add_u32("k", 1);
  w.add_string("k", "now a string");
  w.add_u32("other", 2);
  Bytes b;
  auto f = reparse(w, b);
  ASSERT_TRUE(f);
  ASSERT_EQ(f->metadata().size(), 2u);
  EXPECT_EQ(f->metadata()[0].key, "k");
  EXPECT_EQ(f->get_string("k"), "now a string");
}

TEST(ggufRoundTrip, AddTensorRefusesBadInput) {
  Writer w;
  std::uint64_t ne[] = {32};
  std::uint64_t ne5[] = {1, 1, 1, 1, 1};
  std::uint64_t ne33[] = {33};
  auto msg = [](const graft::Status& s) { return s.message(); };
  EXPECT_EQ(msg(w.add_tensor("a", ne, graft::type_id::q4_0, pattern(17, 0))), "tensor 'a': shape and type need 18 bytes, got 17");
  EXPECT_EQ(msg(w.add_tensor("a", ne, 99, pattern(18, 0))), "tensor 'a': unknown ggml type id 99");
  EXPECT_EQ(msg(w.add_tensor("a", ne33, graft::type_id::q4_0, pattern(18, 0))),
            "tensor 'a': ne[0]=33 is not a multiple of the q4_0 block size 32");
  EXPECT_EQ(msg(w.add_tensor("a", ne5, graft::type_id::f32, pattern(4, 0))), "tensor 'a': needs 1 to 4 dimensions, got 5");
  EXPECT_EQ(msg(w.add_tensor("", ne, graft::type_id::q4_0, pattern(18, 0))), "tensor name is empty");
  EXPECT_EQ(msg(w.add_tensor(std::string(64, 'n'), ne, graft::type_id::q4_0, pattern(18, 0))),
            "tensor '" + std::string(64, 'n') + "': name is 64 bytes, ggml allows at most 63");
  EXPECT_TRUE(w.add_tensor(std::string(63, 'n'), ne, graft::type_id::q4_0, pattern(18, 0)).ok());
  EXPECT_EQ(msg(w.add_tensor(std::string(63, 'n'), ne, graft::type_id::q4_0, pattern(18, 0))),
            "tensor '" + std::string(63, 'n') + "': duplicate tensor name");
  EXPECT_EQ(w.add_tensor("a", ne, graft::type_id::q4_0, pattern(18, 0)).code(), graft::Errc::ok);
}

TEST(ggufRoundTrip, WriteThenOpenMapsTheFile) {
  fs::path dir = temp_dir();
  fs::path p = dir / "sample.gguf";
  ASSERT_TRUE(sample_writer().write(p).ok());
  Bytes expect = sample_bytes();
  EXPECT_EQ(fs::file_size(p), expect.size());
  std::size_t entries = std::distance(fs::directory_iterator(dir), fs::directory_iterator());
  EXPECT_EQ(entries, 1u);  // no temporary file left behind
  {
    auto f = File::open(p);
    ASSERT_TRUE(f.has_value()) << f.status().message();
    EXPECT_EQ((*f)->name(), p.string());
    EXPECT_EQ((*f)->get_string("general.name"), "tiny");
    const TensorInfo* c = (*f)->tensor("tensor_c");
    ASSERT_NE(c, nullptr);
    Bytes d = pattern(96, 3);
    EXPECT_TRUE(std::equal(d.begin(), d.end(), c->data));
  }
  // Writing over an existing file replaces it whole.
  Writer small;
  small.add_u32("only", 1);
  ASSERT_TRUE(small.write(p).ok());
  auto f2 = File::open(p);
  ASSERT_TRUE(f2.has_value());
  EXPECT_EQ((*f2)->metadata().size(), 1u);
  fs::remove_all(dir);
}

TEST(ggufRoundTrip, WriteErrors) {
  Writer w;
  w.set_alignment(48);
  EXPECT_EQ(w.write(temp_dir() / "x.gguf").message(), (temp_dir() / "x.gguf").string() + ": alignment 48 is not a power of two");
  Writer ok;
  graft::Status s = ok.write("/nonexistent-dir-graft/x.gguf");
  EXPECT_EQ(s.code(), graft::Errc::io_error);
  EXPECT_NE(s.message().find("cannot create temporary file"), std::string::npos) << s.message();
  fs::remove_all(temp_dir());
}

TEST(ggufRoundTrip, ReleasedPagesOfAMappedFileReadBackTheSame) {
  fs::path dir = temp_dir();
  fs::path p = dir / "release.gguf";
  const std::size_t page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  const std::size_t n = 5 * page;  // f32 elements: 20 pages of data
  Writer w;
  const Bytes data = pattern(n * 4, 9);
  const std::uint64_t ne[] = {n};
  ASSERT_TRUE(w.add_tensor("big", ne, graft::type_id::f32, data).ok());
  ASSERT_TRUE(w.write(p).ok());
  auto f = File::open(p);
  ASSERT_TRUE(f.has_value()) << f.status().message();
  const TensorInfo* t = (*f)->tensor("big");
  ASSERT_NE(t, nullptr);
  ASSERT_TRUE(std::equal(data.begin(), data.end(), t->data));  // faulted in
  // Only whole pages inside the range go: 20 pages of data span 19 or 20 of them.
  const std::uint64_t released = (*f)->release(t->data, t->bytes);
  EXPECT_EQ(released % page, 0u);
  EXPECT_GE(released, 19 * page);
  EXPECT_LE(released, t->bytes);
  EXPECT_TRUE(std::equal(data.begin(), data.end(), t->data));  // read again from the file
  // Nothing to release outside the mapping, in less than a page, or in a parsed in-memory file.
  const std::uint8_t outside[16] = {};
  EXPECT_EQ((*f)->release(outside, sizeof outside), 0u);
  EXPECT_EQ((*f)->release(t->data + 1, page - 2), 0u);
  Bytes keep = w.to_bytes();
  auto mem = File::parse(keep);
  ASSERT_TRUE(mem.has_value());
  const TensorInfo* tm = (*mem)->tensor("big");
  EXPECT_EQ((*mem)->release(tm->data, tm->bytes), 0u);
  EXPECT_TRUE(std::equal(data.begin(), data.end(), tm->data));
  fs::remove_all(dir);
}
