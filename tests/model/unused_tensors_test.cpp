// A model file with tensors the forward pass would not read (RoPE frequency factors, biases, ...)
// is refused with the tensor's name, instead of being run as a different model.
#include <gtest/gtest.h>

#include "engine/pipeline.hpp"
#include "gguf/gguf_writer.hpp"
#include "test_util.hpp"

using namespace graft;

namespace {

class modelUnusedTensors : public ::testing::Test {
 protected:
  void SetUp() override {
    base_ = dir_.path() / "base.gguf";
    auto r = run_command(std::string(GRAFT_EXE) + " synth --arch llama --preset tiny --out " + base_.string());
    ASSERT_EQ(r.exit_code, 0) << r.output;
  }

  // base plus one f32 tensor of n elements.
  std::filesystem::path with_extra(const std::string& name, std::uint64_t n) {
    auto src = gguf::File::open(base_);
    EXPECT_TRUE(src) << src.status().message();
    gguf::Writer w;
    for (const auto& kv : (*src)->metadata()) w.add(kv.key, kv.value);
    for (const auto& t : (*src)->tensors())
      EXPECT_TRUE(w.add_tensor(t.name, std::span(t.ne.data(), t.n_dims), t.type, std::span(t.data, t.bytes)).ok());
    const std::vector<std::uint8_t> zeros(n * 4, 0);
    const std::uint64_t ne[1] = {n};
    EXPECT_TRUE(w.add_tensor(name, ne, type_id::f32, zeros).ok());
    const auto out = dir_.path() / (name + ".gguf");
    EXPECT_TRUE(w.write(out).ok());
    return out;
  }

  Status build(const std::filesystem::path& model) {
    Profile profile = Profile::builtin();
    profile.model = model;
    profile.context = 64;
    profile.threads = 1;
    auto p = Pipeline::build(profile, 8);
    return p ? Status::success() : p.status();
  }

  TempDir dir_;
  std::filesystem::path base_;
};

TEST_F(modelUnusedTensors, BaseModelLoads) { EXPECT_TRUE(build(base_).ok()); }

TEST_F(modelUnusedTensors, RopeFrequencyFactorsAreRefusedByName) {
  const auto m = with_extra("rope_freqs.weight", 8);
  const Status st = build(m);
  EXPECT_EQ(st.code(), Errc::unsupported);
  EXPECT_EQ(st.message(), m.string() +
                              ": tensor 'rope_freqs.weight' is not used: RoPE frequency factors (llama3-style rope "
                              "scaling) are not supported yet; refusing to run a model that would compute differently "
                              "from its definition");
}

TEST_F(modelUnusedTensors, BiasesAreRefusedByName) {
  const auto m = with_extra("blk.0.attn_q.bias", 64);
  const Status st = build(m);
  EXPECT_EQ(st.code(), Errc::unsupported);
  EXPECT_EQ(st.message(), m.string() +
                              ": tensor 'blk.0.attn_q.bias' is not used: biases are not supported by graft's llama "
                              "forward pass; refusing to run a model that would compute differently from its "
                              "definition");
}

TEST_F(modelUnusedTensors, AnyOtherUnknownTensorIsRefused) {
  const auto m = with_extra("blk.1.mystery.weight", 4);
  const Status st = build(m);
  EXPECT_EQ(st.code(), Errc::unsupported);
  EXPECT_NE(st.message().find("tensor 'blk.1.mystery.weight' is not used: graft's llama forward pass does not use it"),
            std::string::npos)
      << st.message();
}

}  // namespace
