// The streaming writer produces exactly what gguf::Writer produces, and refuses short tensors.
#include <gtest/gtest.h>

#include <fstream>
#include <iterator>

#include "synth/streaming_writer.hpp"
#include "test_util.hpp"

namespace graft::synth {
namespace {

std::vector<std::uint8_t> read_all(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

TEST(StreamingWriter, SameBytesAsTheBufferedWriter) {
  TempDir dir;
  std::vector<std::uint8_t> a(4 * 3 * 2), b(4 * 5);  // f32 [3,2] and f32 [5]
  for (std::size_t i = 0; i < a.size(); ++i) a[i] = static_cast<std::uint8_t>(i * 7);
  for (std::size_t i = 0; i < b.size(); ++i) b[i] = static_cast<std::uint8_t>(200 - i);

  gguf::Writer ref;
  ref.add_string("general.architecture", "llama");
  ref.add_u32("llama.block_count", 2);
  ref.add_string_array("tokenizer.ggml.tokens", {"a", "b"});
  const std::vector<std::uint64_t> sa = {3, 2}, sb = {5};
  ASSERT_TRUE(ref.add_tensor("t.a", sa, type_id::f32, a).ok());
  ASSERT_TRUE(ref.add_tensor("t.b", sb, type_id::f32, b).ok());
  ref.set_alignment(32);
  ASSERT_TRUE(ref.write(dir.path() / "ref.gguf").ok());

  StreamingWriter w(gguf::TypeTable::builtin());
  w.metadata().add_string("general.architecture", "llama");
  w.metadata().add_u32("llama.block_count", 2);
  w.metadata().add_string_array("tokenizer.ggml.tokens", {"a", "b"});
  ASSERT_TRUE(w.declare("t.a", sa, type_id::f32).ok());
  ASSERT_TRUE(w.declare("t.b", sb, type_id::f32).ok());
  ASSERT_TRUE(w.open(dir.path() / "streamed.gguf").ok());
  // Arbitrary pieces, one of them crossing the tensor boundary.
  ASSERT_TRUE(w.append(std::span(a).first(5)).ok());
  std::vector<std::uint8_t> rest(a.begin() + 5, a.end());
  rest.insert(rest.end(), b.begin(), b.begin() + 3);
  ASSERT_TRUE(w.append(rest).ok());
  ASSERT_TRUE(w.append(std::span(b).subspan(3)).ok());
  ASSERT_TRUE(w.finish().ok());

  EXPECT_EQ(read_all(dir.path() / "streamed.gguf"), read_all(dir.path() / "ref.gguf"));
}

TEST(StreamingWriter, ShortTensorIsAnErrorAndLeavesNoFile) {
  TempDir dir;
  StreamingWriter w(gguf::TypeTable::builtin());
  const std::vector<std::uint64_t> shape = {4};
  ASSERT_TRUE(w.declare("x", shape, type_id::f32).ok());
  ASSERT_TRUE(w.open(dir.path() / "short.gguf").ok());
  const std::uint8_t bytes[8] = {};
  ASSERT_TRUE(w.append(bytes).ok());
  const Status s = w.finish();
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("tensor 'x' got 8 of its 16 bytes"), std::string::npos) << s.message();
  EXPECT_TRUE(std::filesystem::is_empty(dir.path())) << "no final file and no temporary left";
}

TEST(StreamingWriter, RejectsBadDeclarations) {
  StreamingWriter w(gguf::TypeTable::builtin());
  const std::vector<std::uint64_t> odd = {33};
  EXPECT_EQ(w.declare("q", odd, type_id::q4_0).message(), "tensor 'q': ne[0]=33 is not a multiple of the q4_0 block size 32");
  const std::vector<std::uint64_t> ok = {32};
  ASSERT_TRUE(w.declare("q", ok, type_id::q4_0).ok());
  EXPECT_EQ(w.declare("q", ok, type_id::q4_0).message(), "tensor 'q': duplicate tensor name");
}

}  // namespace
}  // namespace graft::synth
