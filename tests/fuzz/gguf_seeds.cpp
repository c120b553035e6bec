// gguf_fuzz_seeds DIR: writes a handful of small valid GGUF files for the fuzzer to mutate.
#include <cstdio>
#include <filesystem>
#include <string>

#include "gguf/gguf_writer.hpp"

using namespace graft::gguf;

namespace {

std::vector<std::uint8_t> bytes(std::size_t n) {
  std::vector<std::uint8_t> d(n);
  for (std::size_t k = 0; k < n; ++k) d[k] = static_cast<std::uint8_t>(k * 31 + 7);
  return d;
}

bool save(const Writer& w, const std::filesystem::path& p) {
  graft::Status s = w.write(p);
  if (!s.ok()) std::fprintf(stderr, "gguf_fuzz_seeds: %s\n", s.message().c_str());
  return s.ok();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: gguf_fuzz_seeds DIR\n");
    return 2;
  }
  std::filesystem::path dir = argv[1];
  std::filesystem::create_directories(dir);
  bool ok = true;

  Writer empty;
  ok &= save(empty, dir / "empty.gguf");

  Writer scalars;
  scalars.add("u8", Value::from_uint(ValueType::u8, 1));
  scalars.add("i8", Value::from_int(ValueType::i8, -1));
  scalars.add("u16", Value::from_uint(ValueType::u16, 2));
  scalars.add("i16", Value::from_int(ValueType::i16, -2));
  scalars.add_u32("u32", 3);
  scalars.add_i32("i32", -3);
  scalars.add_f32("f32", 0.5f);
  scalars.add_bool("bool", true);
  scalars.add_string("string", "text");
  scalars.add_u64("u64", 4);
  scalars.add("i64", Value::from_int(ValueType::i64, -4));
  scalars.add("f64", Value::from_real(ValueType::f64, 0.25));
  ok &= save(scalars, dir / "scalars.gguf");

  Writer arrays;
  arrays.add_string_array("tokenizer.ggml.tokens", {"a", "b", "<s>"});
  arrays.add_i32_array("tokenizer.ggml.token_type", {1, 1, 3});
  arrays.add_f32_array("tokenizer.ggml.scores", {0.f, -1.f, -2.f});
  arrays.add("nested", Value::from_array(ValueType::array, {Value::from_array(ValueType::u8, {Value::from_uint(ValueType::u8, 9)})}));
  ok &= save(arrays, dir / "arrays.gguf");

  Writer model;
  model.set_alignment(64);
  model.add_string("general.architecture", "llama");
  model.add_u32("general.quantization_version", 2);
  std::uint64_t a[] = {32, 2}, b[] = {256}, c[] = {4, 2, 1, 1}, d[] = {128};
  ok &= model.add_tensor("blk.0.attn_q.weight", a, graft::type_id::q4_0, bytes(36)).ok();
  ok &= model.add_tensor("blk.0.ffn_up.weight", b, graft::type_id::q4_k, bytes(144)).ok();
  ok &= model.add_tensor("output_norm.weight", c, graft::type_id::f32, bytes(32)).ok();
  ok &= model.add_tensor("token_embd.weight", d, graft::type_id::q1_0, bytes(18)).ok();
  ok &= save(model, dir / "model.gguf");
  return ok ? 0 : 1;
}
