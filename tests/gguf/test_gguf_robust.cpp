// Hostile-input sweeps: every truncation and thousands of random bit flips must give either a
// valid file (whose every tensor lies inside the buffer) or one error line, never a crash.
// Run under ASan (tools/fuzz_gguf.sh builds such a binary) for the strongest form of this.
#include <gtest/gtest.h>

#include <random>

#include "gguf_test_util.hpp"

using namespace graft::gguf;
using namespace gguf_test;

namespace {

// Touches everything a valid parse exposes, so out-of-bounds views would be caught by ASan.
std::size_t exercise(const File& f, const Bytes& b) {
  std::size_t sum = 0;
  for (const auto& kv : f.metadata()) sum += kv.value.to_string().size() + kv.key.size();
  for (const auto& t : f.tensors()) {
    EXPECT_GE(t.data, b.data());
    EXPECT_LE(t.data + t.bytes, b.data() + b.size()) << t.name;
    for (std::uint64_t k = 0; k < t.bytes; ++k) sum += t.data[k];
  }
  return sum;
}

}  // namespace

TEST(ggufRobust, EveryTruncationFails) {
  Bytes full = sample_bytes();
  ASSERT_GT(full.size(), 400u);
  for (std::size_t n = 0; n < full.size(); ++n) {
    Bytes cut(full.begin(), full.begin() + static_cast<std::ptrdiff_t>(n));
    auto f = File::parse(cut);
    ASSERT_FALSE(f.has_value()) << "a " << n << "-byte prefix parsed";
    const std::string& msg = f.status().message();
    EXPECT_EQ(msg.rfind("<memory>: ", 0), 0u) << msg;
    EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
    EXPECT_EQ(f.status().code(), graft::Errc::corrupt);
  }
  EXPECT_TRUE(File::parse(full).has_value());
}

TEST(ggufRobust, RandomBitFlipsNeverCrash) {
  const Bytes base = sample_bytes();
  std::mt19937_64 rng(20240607);
  int failed = 0, parsed = 0;
  std::size_t sink = 0;
  for (int iter = 0; iter < 4000; ++iter) {
    Bytes b = base;
    int flips = 1 + static_cast<int>(rng() % 4);
    for (int k = 0; k < flips; ++k) {
      std::size_t at = rng() % b.size();
      b[at] ^= static_cast<std::uint8_t>(1u << (rng() % 8));
    }
    auto f = File::parse(b);
    if (f) {
      ++parsed;
      sink += exercise(**f, b);
    } else {
      ++failed;
      EXPECT_EQ(f.status().message().find('\n'), std::string::npos);
    }
  }
  // Flips in tensor data or string bytes leave a valid file; flips in counts and types do not.
  EXPECT_GT(failed, 500);
  EXPECT_GT(parsed, 500);
  EXPECT_GT(sink, 0u);
}

TEST(ggufRobust, RandomHeaderBytesNeverCrash) {
  // Overwrite whole words in the structured part of the file: counts, lengths, types.
  const Bytes base = sample_bytes();
  auto valid = File::parse(base);
  ASSERT_TRUE(valid.has_value());
  std::size_t header = (*valid)->data_offset();
  std::mt19937_64 rng(7);
  int failed = 0;
  for (int iter = 0; iter < 3000; ++iter) {
    Bytes b = base;
    std::size_t at = rng() % (header - 8);
    std::uint64_t v = rng();
    switch (rng() % 4) {
      case 0: v = 0; break;
      case 1: v = ~0ull; break;
      case 2: v &= 0xff; break;
      default: break;
    }
    put_u64(b, at, v);
    auto f = File::parse(b);
    if (f) {
      exercise(**f, b);
    } else {
      ++failed;
    }
  }
  EXPECT_GT(failed, 1000);
}

TEST(ggufRobust, HostileCountsDoNotAllocate) {
  // Counts near 2^64 in a tiny file are refused by arithmetic, before any container is sized.
  Writer w;
  w.add_u32("a", 1);
  w.add("arr", Value::from_array(ValueType::string, {Value::from_string("x")}));
  Bytes b = w.to_bytes();
  std::size_t count_at = after(b, "arr") + 4 + 4;
  for (std::uint64_t n : {~0ull, 1ull << 61, 1ull << 32}) {
    put_u64(b, count_at, n);
    std::string err = parse_error(b);
    EXPECT_NE(err.find("key 'arr': array of " + std::to_string(n) + " string elements"), std::string::npos) << err;
  }
}
