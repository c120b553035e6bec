// The host's load_weight_formats() picks up all five format plugins from the build's plugin folder
// together: no type id claimed twice, geometry equal to GGUF's, and a GGUF file of mixed types goes
// through quantize -> write -> read -> dequantize/matmul with the loaded formats.
#include <cstring>

#include "gguf/gguf_file.hpp"
#include "gguf/gguf_writer.hpp"
#include "plugin_host/weight_formats.hpp"
#include "quant_test_util.hpp"

using namespace quant_test;

TEST(LoadWeightFormats, AllFiveLoadTogether) {
  PluginRegistry registry({GRAFT_PLUGIN_DIR});
  DefaultHostServices services;
  auto formats = load_weight_formats(registry, services);
  ASSERT_TRUE(formats) << formats.status().message();
  EXPECT_GE(formats->formats.size(), 5u);
  const std::pair<TypeId, std::string> ids[] = {{0, "f32"}, {1, "f16"}, {30, "bf16"}, {8, "q8_0"}, {2, "q4_0"}};
  for (const auto& [id, name] : ids) {
    const WeightFormat* f = services.weight_format(id);
    ASSERT_NE(f, nullptr) << name;
    EXPECT_EQ(std::string(f->types()[0].name), name);
    const gguf::TypeInfo* info = formats->types.find(id);
    ASSERT_NE(info, nullptr);
    EXPECT_EQ(info->block_elems, f->types()[0].block_elems);
    EXPECT_EQ(info->block_bytes, f->types()[0].block_bytes);
  }
}

TEST(LoadWeightFormats, GgufRoundTripThroughLoadedFormats) {
  PluginRegistry registry({GRAFT_PLUGIN_DIR});
  DefaultHostServices services;
  auto formats = load_weight_formats(registry, services);
  ASSERT_TRUE(formats) << formats.status().message();
  const std::int64_t k = 256, m = 6;  // a whole block for every format, K-quants included
  const auto w = gaussian(static_cast<std::size_t>(k * m), 0.1f, 61);
  gguf::Writer writer(formats->types);
  std::map<std::string, std::vector<std::uint8_t>> written;
  for (auto& loaded : formats->formats) {  // every format plugin in the folder
    const WeightFormat* f = loaded.get();
    const TypeTraits t = f->types()[0];
    const TypeId id = t.id;
    std::vector<std::uint8_t> q(row_bytes(t, k) * m);
    ASSERT_TRUE(f->quantize(id, w.data(), q.data(), m, k, nullptr).ok());
    const std::int64_t ne[] = {k, m};
    ASSERT_TRUE(f->check_tensor(id, ne, 2, q.size()).ok()) << t.name;
    const std::uint64_t une[] = {static_cast<std::uint64_t>(k), static_cast<std::uint64_t>(m)};
    ASSERT_TRUE(writer.add_tensor(std::string("w.") + t.name, une, id, q).ok());
    written[t.name] = q;
  }
  const auto bytes = writer.to_bytes();  // parse() views these bytes; keep them alive
  auto file = gguf::File::parse(bytes, formats->types);
  ASSERT_TRUE(file) << file.status().message();
  std::vector<float> x(static_cast<std::size_t>(k), 0.5f);
  for (auto& fmt : formats->formats) {
    const TypeTraits t = fmt->types()[0];
    const gguf::TensorInfo* info = (*file)->tensor(std::string("w.") + t.name);
    ASSERT_NE(info, nullptr) << t.name;
    ASSERT_EQ(info->bytes, written[t.name].size());
    EXPECT_EQ(std::memcmp(info->data, written[t.name].data(), info->bytes), 0) << t.name;
    // The loaded tensor multiplies like its dequantized values (x = 0.5 quantizes almost exactly).
    std::vector<float> deq(static_cast<std::size_t>(k * m));
    ASSERT_TRUE(fmt->dequantize(t.id, info->data, deq.data(), k * m).ok());
    std::vector<float> y(static_cast<std::size_t>(m));
    ASSERT_TRUE(fmt->kernels("cpu")->matmul(*cpu(2), weight_view(info->data, t, k, m), f32_view(x.data(), k),
                                            f32_view(y.data(), m)).ok());
    for (std::int64_t r = 0; r < m; ++r) {
      double want = 0;
      for (std::int64_t i = 0; i < k; ++i) want += 0.5 * deq[static_cast<std::size_t>(r * k + i)];
      EXPECT_NEAR(y[static_cast<std::size_t>(r)], want, 2e-3) << t.name << " row " << r;
    }
  }
}
