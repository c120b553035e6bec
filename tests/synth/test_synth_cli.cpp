// `graft synth` through the real binary: exit codes, one-line errors, thread-independent output.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <vector>

#include "gguf/gguf_file.hpp"
#include "test_util.hpp"

namespace {

CommandResult synth(const std::string& args) { return run_command(std::string(GRAFT_EXE) + " synth " + args); }

TEST(SynthCli, WritesALoadableModel) {
  TempDir dir;
  const auto out = (dir.path() / "tiny.gguf").string();
  auto r = synth("--arch qwen3 --preset tiny --tied --out " + out);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("wrote " + out + ": qwen3 d=64 layers=2"), std::string::npos) << r.output;
  auto f = graft::gguf::File::open(out);
  ASSERT_TRUE(f) << f.status().message();
  EXPECT_EQ((*f)->tensor("output.weight"), nullptr);
  auto info = run_command(std::string(GRAFT_EXE) + " info " + out);
  EXPECT_EQ(info.exit_code, 0) << info.output;
}

TEST(SynthCli, PluginTypeThroughPluginDir) {
  TempDir dir;
  const auto out = (dir.path() / "q.gguf").string();
  auto r = synth("--arch llama --type test8 --seed 3 --plugin-dir " + std::string(FAKE_PLUGIN_DIR) + " --out " + out);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  auto info = run_command(std::string(GRAFT_EXE) + " info --plugin-dir " + FAKE_PLUGIN_DIR + " " + out);
  EXPECT_EQ(info.exit_code, 0) << info.output;
  EXPECT_NE(info.output.find("test8"), std::string::npos) << info.output;
}

// --shape-only: the same header and size as the real file, every tensor's bytes zero (a sparse
// hole: the 27B shapes' 3.6 GB take no disk), loadable for planning.
TEST(SynthCli, ShapeOnlyWritesTheHeaderAndAHoleOfTheRightSize) {
  TempDir dir;
  const auto real = (dir.path() / "real.gguf").string(), shape = (dir.path() / "shape.gguf").string();
  const std::string args = "--preset qwen35-tiny --type q8_0 --fallback-type f32 --nextn 1 --seed 5 --out ";
  ASSERT_EQ(synth(args + real).exit_code, 0);
  auto r = synth(args + shape + " --shape-only");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("(shapes only: the data is a sparse hole of zeros, for graft plan)"), std::string::npos);
  auto a = graft::gguf::File::open(real), b = graft::gguf::File::open(shape);
  ASSERT_TRUE(a && b);
  EXPECT_EQ(std::filesystem::file_size(real), std::filesystem::file_size(shape));
  ASSERT_EQ((*a)->tensors().size(), (*b)->tensors().size());
  for (std::size_t i = 0; i < (*a)->tensors().size(); ++i) {
    const auto& x = (*a)->tensors()[i];
    const auto& y = (*b)->tensors()[i];
    EXPECT_EQ(x.name, y.name);
    EXPECT_EQ(x.type, y.type);
    EXPECT_EQ(x.bytes, y.bytes);
    const auto* p = static_cast<const std::uint8_t*>(y.data);
    EXPECT_TRUE(std::all_of(p, p + y.bytes, [](std::uint8_t c) { return c == 0; })) << y.name;
  }
  auto big = synth("--preset bonsai-27b --type q1_0 --shape-only --out " + (dir.path() / "b27.gguf").string());
  ASSERT_EQ(big.exit_code, 0) << big.output;
  EXPECT_GT(std::filesystem::file_size(dir.path() / "b27.gguf"), 3'500'000'000ull);
}

TEST(SynthCli, DryRunPrintsTheParameterCount) {
  auto r = synth("--preset qwen3-0.6b --dry-run");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output,
            "qwen3-0.6b: qwen3 d=1024 layers=28 heads=16/8 head_dim=128 ff=3072 vocab=151936 tied, 596049920 "
            "parameters (596.0M)\n");
}

TEST(SynthCli, UsageErrorsExitTwoWithOneLine) {
  TempDir dir;
  const auto out = (dir.path() / "x.gguf").string();
  auto r = synth("--arch gpt9 --out " + out);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.output, "graft synth: unknown --arch 'gpt9' (supported: llama, qwen3, qwen35)\n");

  r = synth("--arch llama --n-head 5 --out " + out);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.output, "graft synth: --n-head 5 does not divide --n-embd 64 (or give --head-dim)\n");

  r = synth("--preset bench-250m --arch qwen3 --out " + out);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.output, "graft synth: --arch qwen3 conflicts with --preset bench-250m (llama)\n");

  r = synth("--preset huge --arch llama --out " + out);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.output,
            "graft synth: unknown --preset 'huge' (known: tiny, bench-250m, qwen3-0.6b, qwen3-1.7b, qwen3-8b, qwen35-tiny, qwen35-2b, qwen36-27b, bonsai-27b)\n");

  r = synth("--arch llama --full-attention-interval 2 --out " + out);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.output, "graft synth: --full-attention-interval is for qwen35 presets only\n");
  r = synth("--preset qwen35-tiny --full-attention-interval 0 --out " + out);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.output, "graft synth: --full-attention-interval 0 is out of range: 1..1024\n");

  r = synth("--preset tiny --out " + out);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.output, "graft synth: --arch is required (llama, qwen3 or qwen35) unless the preset sets it\n");

  r = synth("--arch llama");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.output, "graft synth: --out FILE is required\n");

  r = synth("--arch llama --n-layers 3 --out " + out);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.output,
            "graft synth: command line: unrecognised option '--n-layers'; did you mean '--n-layer'? (try 'graft synth "
            "--help')\n");
  EXPECT_FALSE(std::filesystem::exists(out));
}

std::vector<char> file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

// token_embd is 4M elements: with -t 1 four chunks of 4096 rows, with -t 3 one of 12288 rows in
// three parts and a last chunk of 4096 rows in parts of 1366, 1366 and 1364.
TEST(SynthCli, ThreadCountDoesNotChangeTheFile) {
  TempDir dir;
  for (const std::string type : {"q2_k", "q4_k"}) {
    std::vector<char> first;
    for (const std::string t : {"1", "3"}) {
      const auto out = (dir.path() / (type + "-t" + t + ".gguf")).string();
      auto r = synth("--arch qwen3 --n-embd 256 --n-head 4 --n-head-kv 2 --n-ff 512 --n-vocab 16384 --n-layer 1 --tied "
                     "--seed 7 --type " + type + " -t " + t + " --out " + out);
      ASSERT_EQ(r.exit_code, 0) << r.output;
      const auto bytes = file_bytes(out);
      ASSERT_GT(bytes.size(), 16384u * 256 / 4) << out;
      if (first.empty()) {
        first = bytes;
      } else {
        EXPECT_TRUE(bytes == first) << type << ": -t " << t << " wrote other bytes than -t 1";
      }
    }
  }
}

TEST(SynthCli, ThreadsOutOfRange) {
  TempDir dir;
  const auto out = (dir.path() / "x.gguf").string();
  auto r = synth("--arch llama -t 0 --out " + out);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.output, "graft synth: --threads 0 is out of range: must be in 1..1024\n");
  EXPECT_FALSE(std::filesystem::exists(out));
}

TEST(SynthCli, MissingPluginExitsOneNamingTheFile) {
  TempDir dir;
  const auto out = (dir.path() / "x.gguf").string();
  auto r = synth("--arch llama --type q5_1 --plugin-dir " + dir.path().string() + " --out " + out);
  EXPECT_EQ(r.exit_code, 1);
  const std::string head = "graft synth: --type q5_1: no weight-format plugin provides this type (expected "
                           "libgraft_quant_q5_1.so in: " + dir.path().string() + ", ";
  EXPECT_EQ(r.output.rfind(head, 0), 0u) << r.output;
  EXPECT_EQ(r.output.find('\n'), r.output.size() - 1) << "one line";
  EXPECT_NE(r.output.find("; add --plugin-dir DIR)\n"), std::string::npos) << r.output;
  EXPECT_FALSE(std::filesystem::exists(out));
}

}  // namespace
