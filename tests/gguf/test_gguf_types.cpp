// The builtin type table must match ggml's block geometry exactly: a wrong size would make
// every tensor of that type fail the layout checks (or worse, read the wrong bytes).
#include <gtest/gtest.h>

#include <limits>

#include "gguf/gguf_file.hpp"
#include "gguf/gguf_types.hpp"
#include "gguf/gguf_writer.hpp"

using namespace graft::gguf;

TEST(ggufTypes, BuiltinGeometryMatchesGgml) {
  struct Row {
    graft::TypeId id;
    const char* name;
    std::uint32_t elems, bytes;
  };
  const Row rows[] = {
      {0, "f32", 1, 4},         {1, "f16", 1, 2},         {2, "q4_0", 32, 18},      {3, "q4_1", 32, 20},
      {6, "q5_0", 32, 22},      {7, "q5_1", 32, 24},      {8, "q8_0", 32, 34},      {9, "q8_1", 32, 36},
      {10, "q2_k", 256, 84},    {11, "q3_k", 256, 110},   {12, "q4_k", 256, 144},   {13, "q5_k", 256, 176},
      {14, "q6_k", 256, 210},   {15, "q8_k", 256, 292},   {16, "iq2_xxs", 256, 66}, {17, "iq2_xs", 256, 74},
      {18, "iq3_xxs", 256, 98}, {19, "iq1_s", 256, 50},   {20, "iq4_nl", 32, 18},   {21, "iq3_s", 256, 110},
      {22, "iq2_s", 256, 82},   {23, "iq4_xs", 256, 136}, {24, "i8", 1, 1},         {25, "i16", 1, 2},
      {26, "i32", 1, 4},        {27, "i64", 1, 8},        {28, "f64", 1, 8},        {29, "iq1_m", 256, 56},
      {30, "bf16", 1, 2},       {34, "tq1_0", 256, 54},   {35, "tq2_0", 256, 66},   {39, "mxfp4", 32, 17},
      {40, "nvfp4", 64, 36},    {41, "q1_0", 128, 18},    {42, "q2_0", 64, 18},
  };
  const TypeTable& t = TypeTable::builtin();
  for (const auto& r : rows) {
    const TypeInfo* info = t.find(r.id);
    ASSERT_NE(info, nullptr) << r.name;
    EXPECT_EQ(info->name, r.name);
    EXPECT_EQ(info->block_elems, r.elems) << r.name;
    EXPECT_EQ(info->block_bytes, r.bytes) << r.name;
  }
  // Removed or never-assigned ids stay unknown, so files using them are refused.
  for (graft::TypeId id : {4u, 5u, 31u, 32u, 33u, 36u, 37u, 38u, 43u, 142u, 1000u}) EXPECT_EQ(t.find(id), nullptr) << id;
  EXPECT_EQ(&TypeTable::builtin(), &t);  // one shared instance
}

TEST(ggufTypes, RowBytes) {
  const TypeTable& t = TypeTable::builtin();
  EXPECT_EQ(t.row_bytes(graft::type_id::f32, 10), 40u);
  EXPECT_EQ(t.row_bytes(graft::type_id::q4_0, 64), 36u);
  EXPECT_EQ(t.row_bytes(graft::type_id::q4_k, 4096), 16u * 144u);
  EXPECT_EQ(t.row_bytes(graft::type_id::q1_0, 128), 18u);
  EXPECT_EQ(t.row_bytes(graft::type_id::q4_0, 0), 0u);
  EXPECT_FALSE(t.row_bytes(graft::type_id::q4_0, 33));   // not whole blocks
  EXPECT_FALSE(t.row_bytes(graft::type_id::q1_0, 64));
  EXPECT_FALSE(t.row_bytes(99, 32));                      // unknown id
  EXPECT_FALSE(t.row_bytes(graft::type_id::f64, std::numeric_limits<std::uint64_t>::max()));  // overflow
}

TEST(ggufTypes, AddExtendsAndReplaces) {
  TypeTable t = TypeTable::builtin();
  t.add(142, TypeInfo{"pq2_0", 128, 34});
  ASSERT_NE(t.find(142), nullptr);
  EXPECT_EQ(t.row_bytes(142, 256), 68u);
  t.add(142, TypeInfo{"pq2_0b", 64, 10});
  EXPECT_EQ(t.find(142)->name, "pq2_0b");
  EXPECT_EQ(TypeTable::builtin().find(142), nullptr);  // the builtin table is untouched
}

TEST(ggufTypes, ValueTypeNames) {
  EXPECT_STREQ(value_type_name(ValueType::u8), "u8");
  EXPECT_STREQ(value_type_name(ValueType::boolean), "bool");
  EXPECT_STREQ(value_type_name(ValueType::string), "string");
  EXPECT_STREQ(value_type_name(ValueType::array), "array");
  EXPECT_STREQ(value_type_name(ValueType::f64), "f64");
  EXPECT_STREQ(value_type_name(static_cast<ValueType>(13)), "unknown");
}

TEST(ggufValue, IntegerAndRealViews) {
  EXPECT_EQ(Value::from_uint(ValueType::u32, 7).as_int(), 7);
  EXPECT_EQ(Value::from_int(ValueType::i8, -5).as_int(), -5);
  EXPECT_EQ(Value::from_uint(ValueType::u64, 1ull << 63).as_int(), std::nullopt);  // above INT64_MAX
  EXPECT_EQ(Value::from_real(ValueType::f32, 1.5).as_int(), std::nullopt);
  EXPECT_EQ(Value::from_string("7").as_int(), std::nullopt);
  EXPECT_EQ(Value::from_int(ValueType::i64, -3).as_real(), -3.0);
  EXPECT_EQ(Value::from_real(ValueType::f64, 2.25).as_real(), 2.25);
  EXPECT_EQ(Value::from_bool(true).as_real(), std::nullopt);
}

TEST(ggufValue, ToString) {
  EXPECT_EQ(Value::from_uint(ValueType::u32, 42).to_string(), "42");
  EXPECT_EQ(Value::from_int(ValueType::i32, -42).to_string(), "-42");
  EXPECT_EQ(Value::from_real(ValueType::f32, 1e-6f).to_string(), "1e-06");
  EXPECT_EQ(Value::from_real(ValueType::f32, 10000.0f).to_string(), "10000");
  EXPECT_EQ(Value::from_bool(false).to_string(), "false");
  EXPECT_EQ(Value::from_string("a\"b\nc").to_string(), "\"a\\\"b\\nc\"");
  EXPECT_EQ(Value::from_string(std::string(200, 'x')).to_string(8, 4), "\"xxxx\"...(200 bytes)");
  // A cut never splits a UTF-8 sequence: "é" is two bytes.
  EXPECT_EQ(Value::from_string("a\xC3\xA9").to_string(8, 2), "\"a\"...(3 bytes)");
  std::vector<Value> items;
  for (int k = 0; k < 10; ++k) items.push_back(Value::from_int(ValueType::i32, k));
  EXPECT_EQ(Value::from_array(ValueType::i32, items).to_string(3), "[10 items: 0, 1, 2, ...]");
  EXPECT_EQ(Value::from_array(ValueType::i32, {}).to_string(), "[0 items]");
  EXPECT_EQ(Value::from_array(ValueType::string, {Value::from_string("x")}).to_string(), "[1 item: \"x\"]");
}

// A file from before ggml's Q2_0: id 42 tensors in PrismML's group-128 layout (34-byte blocks).
// Read with today's geometry they seem to overlap the next tensor (or run past the end); the
// reader names the legacy layout instead.
TEST(ggufTypes, LegacyGroup128Q2_0IsNamed) {
  TypeTable legacy = TypeTable::builtin();
  legacy.add(42, TypeInfo{"q2_0_legacy", 128, 34});
  for (bool last : {false, true}) {
    graft::gguf::Writer w(legacy);
    w.add_string("general.architecture", "llama");
    // 4 rows of 8 legacy blocks: 1088 bytes, 1152 as group-64. (Tensors so small that the
    // alignment padding hides the difference cannot be told apart; real weight matrices can.)
    const std::uint64_t ne[2] = {1024, 4};
    const std::vector<std::uint8_t> q2(4 * 8 * 34, 0x55), f(16 * 4, 0);
    const std::uint64_t ne_f[1] = {16};
    if (last) EXPECT_TRUE(w.add_tensor("other", ne_f, 0, f).ok());
    EXPECT_TRUE(w.add_tensor("blk.0.attn_q.weight", ne, 42, q2).ok());
    if (!last) EXPECT_TRUE(w.add_tensor("other", ne_f, 0, f).ok());
    const auto bytes = w.to_bytes();
    auto file = File::parse(bytes, TypeTable::builtin(), "legacy.gguf");
    ASSERT_FALSE(file) << (last ? "last" : "first");
    EXPECT_EQ(file.status().message(),
              "legacy.gguf: tensor 'blk.0.attn_q.weight' is in the legacy PrismML Q2_0 layout (34-byte blocks of 128, "
              "stored under type id 42 before ggml's group-64 Q2_0 took that id); graft does not support it: "
              "re-convert the model with current tools")
        << (last ? "last" : "first");
  }
}
