// Corrupt files: each starts as valid Writer output, gets one precise mutation, and must fail
// with the exact one-line message that names the cause (docs/gguf.md lists the checks).
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "gguf_test_util.hpp"

namespace fs = std::filesystem;
using namespace graft::gguf;
using namespace gguf_test;

namespace {

const std::string M = "<memory>: ";

// Offset of tensor `name`'s n_dims field (right after its name).
std::size_t tensor_info(const Bytes& b, std::string_view name) { return after(b, name); }

}  // namespace

TEST(ggufCorrupt, SampleIsValid) {
  Bytes b = sample_bytes();
  EXPECT_EQ(parse_error(b), "");
}

TEST(ggufCorrupt, BadMagic) {
  Bytes b = sample_bytes();
  b[3] = 'X';
  EXPECT_EQ(parse_error(b), M + "bad magic 'GGUX' at offset 0 (expected 'GGUF'): not a GGUF file");
  b[0] = 0;
  b[1] = 0xff;
  EXPECT_EQ(parse_error(b), M + "bad magic '\\x00\\xffUX' at offset 0 (expected 'GGUF'): not a GGUF file");
}

TEST(ggufCorrupt, UnsupportedVersion) {
  Bytes b = sample_bytes();
  put_u32(b, 4, 2);
  EXPECT_EQ(parse_error(b), M + "unsupported GGUF version 2: graft reads version 3");
  put_u32(b, 4, 0x03000000);  // a big-endian v3 file
  EXPECT_EQ(parse_error(b), M + "unsupported GGUF version 50331648: graft reads version 3");
}

TEST(ggufCorrupt, TensorCountBeyondFile) {
  Bytes b = sample_bytes();
  std::uint64_t rest = b.size() - 24;
  put_u64(b, 8, 1ull << 62);
  EXPECT_EQ(parse_error(b), M + "tensor count 4611686018427387904 at offset 8 is impossible: the " +
                                std::to_string(rest) + " bytes after the header hold at most " +
                                std::to_string(rest / 24) + " tensor infos");
}

TEST(ggufCorrupt, KeyCountBeyondFile) {
  Bytes b = sample_bytes();
  std::uint64_t rest = b.size() - 24;
  put_u64(b, 16, ~0ull);
  EXPECT_EQ(parse_error(b), M + "metadata key count 18446744073709551615 at offset 16 is impossible: the " +
                                std::to_string(rest) + " bytes after the header hold at most " +
                                std::to_string(rest / 13) + " key/value pairs");
}

TEST(ggufCorrupt, KeyLengthPastEof) {
  Bytes b = sample_bytes();
  put_u64(b, 24, 1ull << 40);  // the first key's length
  EXPECT_EQ(parse_error(b), M + "key #0: string length 1099511627776 at offset 24 runs past end of file (" +
                                std::to_string(b.size() - 32) + " bytes left)");
}

TEST(ggufCorrupt, StringValueLengthPastEof) {
  Bytes b = sample_bytes();
  std::size_t len_at = after(b, "general.name") + 4;  // key, type, then the value's length
  put_u64(b, len_at, b.size());
  EXPECT_EQ(parse_error(b), M + "key 'general.name': string length " + std::to_string(b.size()) + " at offset " +
                                std::to_string(len_at) + " runs past end of file (" +
                                std::to_string(b.size() - len_at - 8) + " bytes left)");
}

TEST(ggufCorrupt, UnknownValueType) {
  Bytes b = sample_bytes();
  std::size_t type_at = after(b, "llama.block_count");
  put_u32(b, type_at, 13);
  EXPECT_EQ(parse_error(b), M + "key 'llama.block_count': unknown value type 13 at offset " + std::to_string(type_at));
}

TEST(ggufCorrupt, UnknownArrayElementType) {
  Bytes b = sample_bytes();
  std::size_t elem_at = after(b, "ints") + 4;
  put_u32(b, elem_at, 0xffffffff);
  EXPECT_EQ(parse_error(b), M + "key 'ints': unknown array element type 4294967295 at offset " + std::to_string(elem_at));
}

TEST(ggufCorrupt, ArrayCountPastEof) {
  Bytes b = sample_bytes();
  std::size_t elem_at = after(b, "reals") + 4;
  std::size_t left = b.size() - (elem_at + 12);
  put_u64(b, elem_at + 4, left / 4 + 1);  // one f32 more than the rest of the file holds
  EXPECT_EQ(parse_error(b), M + "key 'reals': array of " + std::to_string(left / 4 + 1) + " f32 elements at offset " +
                                std::to_string(elem_at) + " runs past end of file (" + std::to_string(left) + " bytes left)");
}

TEST(ggufCorrupt, ArraysNestedTooDeep) {
  Writer w;
  Value deep = Value::from_array(ValueType::u8, {});
  for (int k = 0; k < 4; ++k) deep = Value::from_array(ValueType::array, {deep});  // five levels
  w.add("deep", deep);
  Bytes b = w.to_bytes();
  // The fourth array declares arrays as its elements: that is the fifth level.
  std::size_t fourth = after(b, "deep") + 4 + 3 * 12;
  EXPECT_EQ(parse_error(b), M + "key 'deep': arrays nested deeper than 4 at offset " + std::to_string(fourth));
}

TEST(ggufCorrupt, DuplicateKey) {
  Bytes b = sample_bytes();
  // Rename "flag" (4 bytes) to "ints" so the later "ints" key is the duplicate.
  std::size_t flag = find(b, "flag");
  std::memcpy(&b[flag], "ints", 4);
  std::size_t second = find(Bytes(b.begin() + flag + 4, b.end()), "ints") + flag + 4 - 8;
  EXPECT_EQ(parse_error(b), M + "duplicate key 'ints' at offset " + std::to_string(second));
}

TEST(ggufCorrupt, AlignmentNotPowerOfTwo) {
  Writer w = sample_writer();
  w.set_alignment(48);
  EXPECT_EQ(parse_error(w.to_bytes()), M + "general.alignment must be a u32 power of two, got u32 48");
  w.set_alignment(0);
  EXPECT_EQ(parse_error(w.to_bytes()), M + "general.alignment must be a u32 power of two, got u32 0");
  w.add("general.alignment", Value::from_uint(ValueType::u64, 32));
  EXPECT_EQ(parse_error(w.to_bytes()), M + "general.alignment must be a u32 power of two, got u64 32");
  w.add_string("general.alignment", "32");
  EXPECT_EQ(parse_error(w.to_bytes()), M + "general.alignment must be a u32 power of two, got string \"32\"");
}

TEST(ggufCorrupt, EmptyTensorName) {
  Bytes b = sample_bytes();
  std::size_t len_at = find(b, "tensor_a") - 8;
  put_u64(b, len_at, 0);
  EXPECT_EQ(parse_error(b), M + "tensor #0: empty name at offset " + std::to_string(len_at));
}

TEST(ggufCorrupt, TensorNameTooLong) {
  Writer w;
  std::uint64_t ne[] = {4};
  std::string name(63, 'n');
  ASSERT_TRUE(w.add_tensor(name, ne, graft::type_id::f32, pattern(16, 0)).ok());
  Bytes b = w.to_bytes();
  std::size_t len_at = find(b, name) - 8;
  put_u64(b, len_at, 64);
  b.insert(b.begin() + static_cast<std::ptrdiff_t>(len_at + 8), 'n');
  EXPECT_EQ(parse_error(b), M + "tensor #0: name is 64 bytes at offset " + std::to_string(len_at) +
                                ", ggml allows at most 63");
}

TEST(ggufCorrupt, DuplicateTensorName) {
  Bytes b = sample_bytes();
  std::size_t at = find(b, "tensor_b");
  b[at + 7] = 'a';
  EXPECT_EQ(parse_error(b), M + "tensor #1: duplicate tensor name 'tensor_a' at offset " + std::to_string(at - 8));
}

TEST(ggufCorrupt, NDimsOutOfRange) {
  Bytes b = sample_bytes();
  put_u32(b, tensor_info(b, "tensor_b"), 0);
  EXPECT_EQ(parse_error(b), M + "tensor 'tensor_b': n_dims 0 is out of range 1..4");
  put_u32(b, tensor_info(b, "tensor_b"), 5);
  EXPECT_EQ(parse_error(b), M + "tensor 'tensor_b': n_dims 5 is out of range 1..4");
}

TEST(ggufCorrupt, ElementCountOverflow) {
  Bytes b = sample_bytes();
  std::size_t ne_at = tensor_info(b, "tensor_a") + 4;
  put_u64(b, ne_at + 8, 1ull << 62);  // 32 * 2^62 overflows u64
  EXPECT_EQ(parse_error(b), M + "tensor 'tensor_a': element count of shape [32, 4611686018427387904] overflows int64");
  put_u64(b, ne_at + 8, 1ull << 58);  // 32 * 2^58 = 2^63: fits u64, not int64
  EXPECT_EQ(parse_error(b), M + "tensor 'tensor_a': element count of shape [32, 288230376151711744] overflows int64");
  put_u64(b, ne_at, 1ull << 63);  // one dimension alone past INT64_MAX, even with a zero elsewhere
  put_u64(b, ne_at + 8, 0);
  EXPECT_EQ(parse_error(b), M + "tensor 'tensor_a': element count of shape [9223372036854775808, 0] overflows int64");
}

TEST(ggufCorrupt, UnknownTypeId) {
  Bytes b = sample_bytes();
  std::size_t type_at = tensor_info(b, "tensor_c") + 4 + 16;
  put_u32(b, type_at, 99);
  EXPECT_EQ(parse_error(b), M + "tensor 'tensor_c': unknown ggml type id 99 at offset " + std::to_string(type_at));
  // A type the caller's table lacks is unknown too (plugins decide which ids exist).
  TypeTable no_q8;
  no_q8.add(graft::type_id::f32, TypeInfo{"f32", 1, 4});
  no_q8.add(graft::type_id::q4_0, TypeInfo{"q4_0", 32, 18});
  Bytes ok = sample_bytes();
  auto f = File::parse(ok, no_q8);
  ASSERT_FALSE(f.has_value());
  EXPECT_EQ(f.status().message(), M + "tensor 'tensor_b': unknown ggml type id 8 at offset " +
                                      std::to_string(tensor_info(ok, "tensor_b") + 4 + 8));
  EXPECT_EQ(f.status().code(), graft::Errc::corrupt);
}

TEST(ggufCorrupt, RowNotWholeBlocks) {
  Bytes b = sample_bytes();
  put_u64(b, tensor_info(b, "tensor_a") + 4, 48);
  EXPECT_EQ(parse_error(b), M + "tensor 'tensor_a': ne[0]=48 is not a multiple of the q4_0 block size 32");
}

TEST(ggufCorrupt, MisalignedOffset) {
  Bytes b = sample_bytes();
  std::size_t off_at = tensor_info(b, "tensor_b") + 4 + 8 + 4;
  put_u64(b, off_at, get_u64(b, off_at) + 16);
  EXPECT_EQ(parse_error(b), M + "tensor 'tensor_b': offset 80 is not a multiple of the alignment 32");
}

TEST(ggufCorrupt, TensorPastEof) {
  Bytes b = sample_bytes();
  auto valid = File::parse(b);
  ASSERT_TRUE(valid.has_value());
  std::uint64_t start = (*valid)->data_offset();
  std::uint64_t blob = b.size() - start;
  std::size_t off_at = tensor_info(b, "tensor_c") + 4 + 16 + 4;
  put_u64(b, off_at, blob - 64);  // 96 bytes from 64 before the end
  EXPECT_EQ(parse_error(b), M + "tensor 'tensor_c': 96 bytes at data offset " + std::to_string(blob - 64) +
                                " run past end of file (the data blob holds " + std::to_string(blob) +
                                " bytes from offset " + std::to_string(start) + ")");
  put_u64(b, off_at, ~0ull - 31);  // offset + size would wrap around u64
  EXPECT_NE(parse_error(b).find("tensor 'tensor_c': 96 bytes at data offset 18446744073709551584 run past end of file"),
            std::string::npos);
  // Truncation that removes only tensor data is caught the same way.
  Bytes cut = sample_bytes();
  cut.resize(cut.size() - 1);
  EXPECT_NE(parse_error(cut).find("tensor 'tensor_c': 96 bytes at data offset 160 run past end of file"),
            std::string::npos) << parse_error(cut);
}

TEST(ggufCorrupt, OverlappingTensors) {
  Bytes b = sample_bytes();
  std::size_t off_at = tensor_info(b, "tensor_b") + 4 + 8 + 4;
  put_u64(b, off_at, 32);  // tensor_a occupies [0, 36)
  EXPECT_EQ(parse_error(b), M + "tensors 'tensor_a' and 'tensor_b' overlap (data [0, 36) and [32, 100))");
  // A later tensor running into the next one's start: [64, 132) and [96, 192).
  Bytes c = sample_bytes();
  put_u64(c, tensor_info(c, "tensor_c") + 4 + 16 + 4, 96);
  EXPECT_EQ(parse_error(c), M + "tensors 'tensor_b' and 'tensor_c' overlap (data [64, 132) and [96, 192))");
  // Equal starts: the message order follows the file order.
  Bytes d = sample_bytes();
  put_u64(d, tensor_info(d, "tensor_c") + 4 + 16 + 4, 0);
  EXPECT_EQ(parse_error(d), M + "tensors 'tensor_a' and 'tensor_c' overlap (data [0, 36) and [0, 96))");
}

TEST(ggufCorrupt, DataBlobStartsPastEof) {
  Bytes b = sample_bytes();
  auto valid = File::parse(b);
  ASSERT_TRUE(valid.has_value());
  std::uint64_t start = (*valid)->data_offset();
  std::size_t header_end = tensor_info(b, "tensor_c") + 4 + 16 + 4 + 8;
  ASSERT_LT(header_end, start) << "fixture must need padding";
  b.resize(header_end);
  EXPECT_EQ(parse_error(b), M + "tensor data blob would start at offset " + std::to_string(start) +
                                ", past end of file (" + std::to_string(header_end) + " bytes)");
}

TEST(ggufCorrupt, TruncatedHeader) {
  Bytes b = sample_bytes();
  b.resize(10);
  EXPECT_EQ(parse_error(b), M + "tensor count: truncated at offset 8 (needs 8 bytes, 2 left)");
  b.resize(2);
  EXPECT_EQ(parse_error(b), M + "magic: truncated at offset 0 (needs 4 bytes, 2 left)");
  EXPECT_EQ(parse_error(Bytes{}), M + "magic: truncated at offset 0 (needs 4 bytes, 0 left)");
}

TEST(ggufCorrupt, HostileNameIsEscaped) {
  Bytes b = sample_bytes();
  std::size_t at = find(b, "tensor_b");
  b[at + 6] = '\n';
  put_u32(b, at + 8, 9);  // bad n_dims, so the error names the tensor
  EXPECT_EQ(parse_error(b), M + "tensor 'tensor\\x0ab': n_dims 9 is out of range 1..4");
}

TEST(ggufCorrupt, OpenErrors) {
  fs::path dir = fs::temp_directory_path() / ("graft_gguf_corrupt_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  fs::path empty = dir / "empty.gguf";
  std::ofstream(empty).close();
  auto e = File::open(empty);
  ASSERT_FALSE(e.has_value());
  EXPECT_EQ(e.status().message(), empty.string() + ": empty file (0 bytes): not a GGUF file");
  EXPECT_EQ(e.status().code(), graft::Errc::corrupt);

  auto missing = File::open(dir / "missing.gguf");
  ASSERT_FALSE(missing.has_value());
  EXPECT_EQ(missing.status().message(), (dir / "missing.gguf").string() + ": cannot open: No such file or directory");

  auto d = File::open(dir);
  ASSERT_FALSE(d.has_value());
  EXPECT_EQ(d.status().message(), dir.string() + ": not a regular file");

  // Errors from a mapped file carry its path; the mapping is released on failure.
  Bytes b = sample_bytes();
  put_u32(b, 4, 1);
  fs::path bad = dir / "v1.gguf";
  std::ofstream(bad, std::ios::binary).write(reinterpret_cast<const char*>(b.data()), std::streamsize(b.size()));
  auto v = File::open(bad);
  ASSERT_FALSE(v.has_value());
  EXPECT_EQ(v.status().message(), bad.string() + ": unsupported GGUF version 1: graft reads version 3");
  fs::remove_all(dir);
}
