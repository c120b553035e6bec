// get_rows (embedding lookup) and the f16/bf16 -> f32 widening it shares with matmul, checked on
// all 65536 bit patterns of each type.
#include "cpu_fixture.hpp"

using namespace cpu_test;
namespace type_id = graft::type_id;

namespace {

class GetRows : public OpTest {};
CPU_OP_TEST_SUITE(GetRows);

// One table row holding every 16-bit pattern, widened by the op. 65536 is a multiple of every
// vector width, so a second, odd-length row (all patterns from 65535 down) covers the tails.
std::vector<std::uint16_t> all_patterns() {
  std::vector<std::uint16_t> v(2 * 65536);
  for (std::uint32_t i = 0; i < 65536; ++i) {
    v[i] = static_cast<std::uint16_t>(i);
    v[65536 + i] = static_cast<std::uint16_t>(65535 - i);
  }
  return v;
}

TEST_P(GetRows, F16WideningIsExactForAllPatterns) {
  auto table = all_patterns();
  std::vector<float> y(2 * 65536);
  const std::int32_t ids[2] = {0, 1};
  ASSERT_TRUE(backend->get_rows(view16(table, type_id::f16, 65536, 2), ids, 2, view(y, 65536, 2)).ok());
  // and an odd row length, through a [13, ...] view of the same patterns
  std::vector<float> y13(13 * 5);
  const std::int32_t ids13[5] = {5040, 1, 5041, 0, 10080};
  ASSERT_TRUE(backend->get_rows(view16(table, type_id::f16, 13, 10081), ids13, 5, view(y13, 13, 5)).ok());
  for (std::size_t r = 0; r < 5; ++r)
    for (std::size_t i = 0; i < 13; ++i) ASSERT_EQ(bits(y13[r * 13 + i]), bits(y[ids13[r] * 13 + i]));

  std::size_t bad = 0;
  for (std::size_t i = 0; i < y.size(); ++i) {
    const std::uint16_t h = table[i];
    const double ref = f16_value(h);
    const float got = y[i];
    bool ok;
    if (std::isnan(ref)) {
      // NaN: sign and payload kept, returned quiet (as x86 F16C does).
      const std::uint32_t expected = (static_cast<std::uint32_t>(h & 0x8000) << 16) | 0x7fc00000u |
                                     (static_cast<std::uint32_t>(h & 0x3ff) << 13);
      ok = bits(got) == expected;
    } else {
      ok = static_cast<double>(got) == ref && std::signbit(got) == std::signbit(ref);
    }
    if (!ok && bad++ < 5) ADD_FAILURE() << "f16 0x" << std::hex << h << " -> " << got << " (bits 0x" << bits(got) << ")";
  }
  EXPECT_EQ(bad, 0u);
}

TEST_P(GetRows, Bf16WideningIsExactForAllPatterns) {
  auto table = all_patterns();
  std::vector<float> y(2 * 65536);
  const std::int32_t ids[2] = {1, 0};
  ASSERT_TRUE(backend->get_rows(view16(table, type_id::bf16, 65536, 2), ids, 2, view(y, 65536, 2)).ok());
  for (std::size_t r = 0; r < 2; ++r)
    for (std::size_t i = 0; i < 65536; ++i) {
      const std::uint16_t h = table[ids[r] * 65536 + i];
      ASSERT_EQ(bits(y[r * 65536 + i]), static_cast<std::uint32_t>(h) << 16) << "bf16 0x" << std::hex << h;
    }
}

TEST_P(GetRows, EmbeddingLookupOfAVocabularyTable) {
  // a [1024, 151936]-like table, kept small in rows but with real row length and ids at both ends
  const std::int64_t k = 1024, rows = 5000;
  auto table = random_floats(k * rows, -1.0f, 1.0f, 61);
  const std::vector<std::int32_t> ids = {0, 4999, 17, 17, 2500, 1, 4998};
  std::vector<float> y(k * ids.size());
  ASSERT_TRUE(backend->get_rows(view(table, k, rows), ids.data(), ids.size(),
                                view(y, k, static_cast<std::int64_t>(ids.size())))
                  .ok());
  for (std::size_t r = 0; r < ids.size(); ++r)
    for (std::size_t i = 0; i < k; ++i) ASSERT_EQ(bits(y[r * k + i]), bits(table[ids[r] * k + i]));
}

TEST_P(GetRows, OutOfRangeIdNamesItAndWritesNothing) {
  const std::int64_t k = 8, rows = 10;
  auto table = random_floats(k * rows, -1.0f, 1.0f, 62);
  std::vector<float> y(k * 3, 5.0f);
  for (std::int32_t bad_id : {10, -1, 1 << 30}) {
    const std::int32_t ids[3] = {1, 2, bad_id};
    auto st = backend->get_rows(view(table, k, rows), ids, 3, view(y, k, 3));
    EXPECT_EQ(st.code(), graft::Errc::out_of_range);
    EXPECT_EQ(st.message(), "cpu backend: get_rows: ids[2] = " + std::to_string(bad_id) +
                                " is out of range for a table of 10 rows");
    for (float v : y) ASSERT_EQ(v, 5.0f);
  }
}

}  // namespace
