// Builders and byte surgery for the gguf tests: fixtures start as valid Writer output and are
// then mutated at offsets found by searching for the names they contain.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "gguf/gguf_file.hpp"
#include "gguf/gguf_writer.hpp"

namespace gguf_test {

using Bytes = std::vector<std::uint8_t>;

// Offset of the first occurrence of s in b; fails the test when absent.
inline std::size_t find(const Bytes& b, std::string_view s) {
  auto it = std::search(b.begin(), b.end(), s.begin(), s.end());
  EXPECT_NE(it, b.end()) << "fixture lacks '" << s << "'";
  return it == b.end() ? 0 : static_cast<std::size_t>(it - b.begin());
}

// Offset just past a length-prefixed string equal to s (a key or a tensor name).
inline std::size_t after(const Bytes& b, std::string_view s) { return find(b, s) + s.size(); }

inline void put(Bytes& b, std::size_t at, std::uint64_t v, unsigned n) {
  for (unsigned k = 0; k < n; ++k) b.at(at + k) = static_cast<std::uint8_t>(v >> (8 * k));
}
inline void put_u32(Bytes& b, std::size_t at, std::uint32_t v) { put(b, at, v, 4); }
inline void put_u64(Bytes& b, std::size_t at, std::uint64_t v) { put(b, at, v, 8); }
inline std::uint64_t get_u64(const Bytes& b, std::size_t at) {
  std::uint64_t v = 0;
  for (unsigned k = 0; k < 8; ++k) v |= std::uint64_t{b.at(at + k)} << (8 * k);
  return v;
}

inline Bytes pattern(std::size_t n, std::uint8_t seed) {
  Bytes d(n);
  for (std::size_t k = 0; k < n; ++k) d[k] = static_cast<std::uint8_t>(seed + 7 * k);
  return d;
}

// A small file with every kind of metadata and three tensors of different types.
inline graft::gguf::Writer sample_writer() {
  using namespace graft::gguf;
  Writer w;
  w.add_string("general.architecture", "llama");
  w.add_string("general.name", "tiny");
  w.add_u32("llama.block_count", 2);
  w.add_f32("llama.rope.freq_base", 10000.0f);
  w.add_bool("flag", true);
  w.add_string_array("tokenizer.ggml.tokens", {"a", "b", "c"});
  w.add_i32_array("ints", {1, -2, 3});
  w.add_f32_array("reals", {0.5f, 1.5f});
  w.add_u32("general.quantization_version", 2);
  std::uint64_t ne_a[] = {32, 2};
  std::uint64_t ne_b[] = {64};
  std::uint64_t ne_c[] = {8, 3};
  EXPECT_TRUE(w.add_tensor("tensor_a", ne_a, graft::type_id::q4_0, pattern(2 * 18, 1)).ok());
  EXPECT_TRUE(w.add_tensor("tensor_b", ne_b, graft::type_id::q8_0, pattern(2 * 34, 2)).ok());
  EXPECT_TRUE(w.add_tensor("tensor_c", ne_c, graft::type_id::f32, pattern(8 * 3 * 4, 3)).ok());
  return w;
}

inline Bytes sample_bytes() { return sample_writer().to_bytes(); }

// The error text of parsing b, or "" when it parses.
inline std::string parse_error(const Bytes& b) {
  auto f = graft::gguf::File::parse(b);
  return f ? std::string() : f.status().message();
}

}  // namespace gguf_test
