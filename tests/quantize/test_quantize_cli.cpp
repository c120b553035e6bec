// `graft quantize` through the real binary on the zoo model: every type the built weight-format
// plugins provide is quantized, checked tensor by tensor against the policy, run and scored;
// F32 -> Q8_0 is byte-identical to the plugin's quantizer; every bad input is one exact line.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>

#include "gguf/gguf_file.hpp"
#include "quantize/file_type.hpp"
#include "quantize/type_catalog.hpp"
#include "quantize/type_policy.hpp"
#include "test_util.hpp"

using namespace graft;

namespace {

const std::string kZoo = std::string(GRAFT_SOURCE_DIR) + "/models/zoo-qwen3-4x256.gguf";
const std::string kValText = std::string(GRAFT_SOURCE_DIR) + "/tests/fixtures/zoo-tokenizer-val.txt";

// Perplexity on the first kPplChunks chunks of 256 tokens of the zoo's held-out text, relative to
// the F16 original. Loose for low-bit types on purpose: the figures are reported (docs/quantize.md),
// the test only catches a broken conversion (which gives perplexities in the thousands).
constexpr int kPplChunks = 6;
constexpr double kPplTolFloat = 0.01;   // f32, f16, bf16 (>= 16 bits per weight)
constexpr double kPplTol8Bit = 0.03;    // 6..16 bits per weight
constexpr double kPplTolLowBit = 0.50;  // under 6 bits per weight

CommandResult graft_cmd(const std::string& args) { return run_command(std::string(GRAFT_EXE) + " " + args); }

std::optional<double> perplexity(const std::string& model) {
  auto r = run_command(std::string(GRAFT_EXE) + " perplexity --model " + model + " --file " + kValText +
                           " --ctx 256 --chunks " + std::to_string(kPplChunks) + " -t 2",
                       /*merge_stderr=*/false);
  std::smatch m;
  if (r.exit_code != 0 || !std::regex_search(r.output, m, std::regex("Final estimate: PPL = ([0-9.]+)"))) {
    ADD_FAILURE() << "perplexity failed on " << model << ": " << r.output;
    return std::nullopt;
  }
  return std::stod(m[1]);
}

std::unique_ptr<quantize::TypeCatalog> plugin_catalog() {
  auto c = quantize::TypeCatalog::load({GRAFT_PLUGIN_DIR});
  EXPECT_TRUE(c) << c.status().message();
  return c ? std::move(*c) : nullptr;
}

std::shared_ptr<const gguf::File> open(const std::string& path, const quantize::TypeCatalog& c) {
  auto f = gguf::File::open(path, c.table());
  EXPECT_TRUE(f) << f.status().message();
  return f ? *f : nullptr;
}

class quantize_zoo : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir();
    catalog_ = plugin_catalog().release();
  }
  static void TearDownTestSuite() {
    delete catalog_;
    delete dir_;
  }
  static std::string path(const std::string& name) { return (dir_->path() / name).string(); }

  static inline TempDir* dir_ = nullptr;
  static inline quantize::TypeCatalog* catalog_ = nullptr;
};

TEST_F(quantize_zoo, EveryPluginTypeRoundTripsThroughRunAndPerplexity) {
  ASSERT_NE(catalog_, nullptr);
  auto zoo = open(kZoo, *catalog_);
  ASSERT_NE(zoo, nullptr);
  const auto base = perplexity(kZoo);
  ASSERT_TRUE(base);
  const bool have_q6_k = catalog_->available(type_id::q6_k);
  int tested = 0;
  for (const TypeId type : catalog_->types()) {
    const std::string name = catalog_->name(type);
    const std::uint32_t block = catalog_->block_elems(type);
    if (256 % block != 0) continue;  // the zoo's rows are 256 and 768 elements long
    SCOPED_TRACE("type " + name);
    const double bits = catalog_->bits_per_weight(type);
    // The zoo is tied: token_embd is the output projection.
    std::string args = " --type " + name;
    TypeId embd = type;
    if (bits < 6) {
      if (have_q6_k) {
        embd = type_id::q6_k;
      } else {
        args += " --output-type q8_0";
        embd = type_id::q8_0;
      }
    }
    const std::string out = path("zoo-" + name + ".gguf");
    auto r = graft_cmd("quantize " + kZoo + " " + out + args + " -t 2");
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find("size: "), std::string::npos) << r.output;

    auto f = open(out, *catalog_);
    ASSERT_NE(f, nullptr);
    EXPECT_EQ(f->version(), 3u);
    EXPECT_EQ(f->get_int("general.quantization_version"), 2);
    const auto ftype = quantize::llama_file_type(name);
    if (ftype) EXPECT_EQ(f->get_int("general.file_type"), static_cast<std::int64_t>(*ftype));
    else EXPECT_EQ(f->find("general.file_type"), nullptr);
    for (const auto& kv : zoo->metadata()) {
      if (kv.key == "general.file_type") continue;
      const gguf::Value* v = f->find(kv.key);
      ASSERT_NE(v, nullptr) << kv.key;
      EXPECT_EQ(v->to_string(1u << 20, 1u << 20), kv.value.to_string(1u << 20, 1u << 20)) << kv.key;
    }
    ASSERT_EQ(f->tensors().size(), zoo->tensors().size());
    for (std::size_t k = 0; k < zoo->tensors().size(); ++k) {
      const auto& a = zoo->tensors()[k];
      const auto& b = f->tensors()[k];
      EXPECT_EQ(b.name, a.name);
      EXPECT_EQ(b.ne, a.ne);
      const TypeId want = a.n_dims == 1 ? type_id::f32 : a.name == "token_embd.weight" ? embd : type;
      EXPECT_EQ(b.type, want) << a.name;
    }

    auto run = run_command(std::string(GRAFT_EXE) + " run --model " + out +
                               " --prompt-ids \"100 200 300 400\" --temp 0 -n 8 --json",
                           /*merge_stderr=*/false);
    ASSERT_EQ(run.exit_code, 0) << run.output;
    auto j = nlohmann::json::parse(run.output, nullptr, false);
    ASSERT_FALSE(j.is_discarded()) << run.output;
    EXPECT_EQ(j["generated_ids"].size(), 8u);

    const auto ppl = perplexity(out);
    ASSERT_TRUE(ppl);
    const double tol = bits >= 16 ? kPplTolFloat : bits >= 6 ? kPplTol8Bit : kPplTolLowBit;
    std::printf("[ perplexity ] %-6s %6.2f bits/weight: PPL %.4f (F16 original %.4f, %+.2f%%)\n", name.c_str(), bits,
                *ppl, *base, 100.0 * (*ppl / *base - 1));
    EXPECT_LT(std::abs(*ppl / *base - 1), tol) << name << " PPL " << *ppl << " vs F16 " << *base;
    ++tested;
  }
  // f32 and the five formats of this repository at least.
  EXPECT_GE(tested, 5);
}

TEST_F(quantize_zoo, F32ToQ8_0IsByteIdenticalToThePluginQuantizer) {
  ASSERT_NE(catalog_, nullptr);
  const WeightFormat* q8 = catalog_->format(type_id::q8_0);
  ASSERT_NE(q8, nullptr);
  const std::string f32 = path("zoo-all-f32.gguf"), q8_file = path("zoo-from-f32-q8_0.gguf");
  ASSERT_EQ(graft_cmd("quantize " + kZoo + " " + f32 + " --type f32").exit_code, 0);
  auto r = graft_cmd("quantize " + f32 + " " + q8_file + " --type q8_0 -t 3");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output.find("warning"), std::string::npos) << r.output;
  auto src = open(f32, *catalog_), dst = open(q8_file, *catalog_);
  ASSERT_TRUE(src && dst);
  int checked = 0;
  for (const auto& t : src->tensors()) {
    const gguf::TensorInfo* q = dst->tensor(t.name);
    ASSERT_NE(q, nullptr);
    if (t.n_dims == 1) {
      EXPECT_EQ(q->type, type_id::f32);
      EXPECT_EQ(std::memcmp(q->data, t.data, t.bytes), 0) << t.name;
      continue;
    }
    ASSERT_EQ(t.type, type_id::f32);
    ASSERT_EQ(q->type, type_id::q8_0) << t.name;
    const std::int64_t rows = static_cast<std::int64_t>(t.elements() / t.ne[0]);
    std::vector<std::uint8_t> want(q->bytes);
    ASSERT_TRUE(q8->quantize(type_id::q8_0, reinterpret_cast<const float*>(t.data), want.data(), rows,
                             static_cast<std::int64_t>(t.ne[0]), nullptr)
                    .ok());
    EXPECT_EQ(std::memcmp(want.data(), q->data, want.size()), 0) << t.name;
    ++checked;
  }
  EXPECT_EQ(checked, 37);  // 7 matrices x 4 blocks + token_embd + the MTP block's 7 matrices and eh_proj
}

TEST_F(quantize_zoo, ThreadCountDoesNotChangeTheFile) {
  const std::string a = path("t1.gguf"), b = path("t3.gguf");
  ASSERT_EQ(graft_cmd("quantize " + kZoo + " " + a + " --type q4_0 --output-type q8_0 -t 1").exit_code, 0);
  ASSERT_EQ(graft_cmd("quantize " + kZoo + " " + b + " --type q4_0 --output-type q8_0 --threads 3").exit_code, 0);
  std::ifstream fa(a, std::ios::binary), fb(b, std::ios::binary);
  std::stringstream sa, sb;
  sa << fa.rdbuf();
  sb << fb.rdbuf();
  EXPECT_GT(sa.str().size(), 1000u);
  EXPECT_TRUE(sa.str() == sb.str());
}

TEST_F(quantize_zoo, RequantizingWarnsAndSameTypeIsCopied) {
  ASSERT_NE(catalog_, nullptr);
  const std::string q8 = path("rq8.gguf"), q4 = path("rq4.gguf");
  ASSERT_EQ(graft_cmd("quantize " + kZoo + " " + q8 + " --type q8_0").exit_code, 0);
  auto r = graft_cmd("quantize " + q8 + " " + q4 + " --type q4_0 --output-type q8_0 -v");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("graft quantize: warning: requantizing 36 tensors from an already quantized type: the result "
                          "is worse than quantizing the F16/BF16/F32 original\n"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("token_embd.weight"), std::string::npos);
  EXPECT_NE(r.output.find("q8_0   -> q8_0   --output-type (tied output)"), std::string::npos) << r.output;
  auto a = open(q8, *catalog_), b = open(q4, *catalog_);
  ASSERT_TRUE(a && b);
  const auto* ea = a->tensor("token_embd.weight");
  const auto* eb = b->tensor("token_embd.weight");
  ASSERT_TRUE(ea && eb);
  ASSERT_EQ(ea->bytes, eb->bytes);
  EXPECT_EQ(std::memcmp(ea->data, eb->data, ea->bytes), 0);
}

TEST_F(quantize_zoo, DryRunPrintsTheSizesAndWritesNothing) {
  const std::string out = path("dry.gguf");
  auto r = graft_cmd("quantize " + kZoo + " " + out + " --type q8_0 --dry-run");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_FALSE(std::filesystem::exists(out));
  EXPECT_NE(r.output.find("  q8_0           37        5111808      5.2 MiB         8.50\n"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("size: 9.8 MiB -> 5.2 MiB (16.01 -> 8.52 bits per weight, 61 tensors, 5116032 parameters)"),
            std::string::npos)
      << r.output;
}

TEST_F(quantize_zoo, RowsThatAreNotWholeBlocksNeedAFallbackType) {
  ASSERT_NE(catalog_, nullptr);
  const std::string model = path("odd.gguf"), out = path("odd-q8.gguf");
  ASSERT_EQ(graft_cmd("synth --arch llama --n-ff 100 --out " + model).exit_code, 0);
  auto r = graft_cmd("quantize " + model + " " + out + " --type q8_0");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.output,
            "graft quantize: blk.0.ffn_down.weight: rows of 100 elements are not a multiple of the q8_0 block size 32 "
            "(--type); pass --fallback-type T (e.g. f16) to write such tensors in another type\n");
  EXPECT_FALSE(std::filesystem::exists(out));

  r = graft_cmd("quantize " + model + " " + out + " --type q8_0 --fallback-type f16");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  auto f = open(out, *catalog_);
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->tensor("blk.0.ffn_down.weight")->type, type_id::f16);
  EXPECT_EQ(f->tensor("blk.1.ffn_down.weight")->type, type_id::f16);
  EXPECT_EQ(f->tensor("blk.0.ffn_up.weight")->type, type_id::q8_0);
  EXPECT_EQ(f->tensor("output.weight")->type, type_id::q8_0);
}

TEST_F(quantize_zoo, BadInputIsOneExactLine) {
  const std::string out = path("bad.gguf");
  auto r = graft_cmd("quantize /nonexistent/m.gguf " + out + " --type q8_0");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.output, "graft quantize: /nonexistent/m.gguf: no such file\n");

  r = graft_cmd("quantize " + kZoo + " " + kZoo + " --type q8_0");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.output, "graft quantize: OUT.gguf is IN.gguf (" + kZoo + "): write the quantized model to another file\n");
  const std::string other_spelling = std::string(GRAFT_SOURCE_DIR) + "/models/../models/zoo-qwen3-4x256.gguf";
  r = graft_cmd("quantize " + kZoo + " " + other_spelling + " --type q8_0");
  EXPECT_EQ(r.exit_code, 2) << r.output;

  r = graft_cmd("quantize " + kZoo + " " + out);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.output, "graft quantize: --type T is required\n");

  r = graft_cmd("quantize " + kZoo + " " + out + " --type q9_9");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.output.rfind("graft quantize: --type q9_9: unknown type (available: f32, ", 0), 0u) << r.output;
  EXPECT_EQ(r.output.find('\n'), r.output.size() - 1) << "one line";

  r = graft_cmd("quantize " + kZoo + " " + out + " --type q5_1");  // a ggml type no plugin provides
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.output.rfind("graft quantize: --type q5_1: no weight-format plugin provides this type (expected "
                           "libgraft_quant_q5_1.so in: ",
                           0),
            0u)
      << r.output;
  EXPECT_NE(r.output.find("; add --plugin-dir DIR)\n"), std::string::npos) << r.output;

  r = graft_cmd("quantize " + kZoo + " " + out + " --type q8_0 --tensor-type 'attn_[qk=f16'");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.output.rfind("graft quantize: --tensor-type 'attn_[qk=f16': bad regular expression 'attn_[qk': ", 0), 0u)
      << r.output;
  EXPECT_EQ(r.output.find('\n'), r.output.size() - 1) << "one line";

  r = graft_cmd("quantize " + kZoo + " " + out + " --type q8_0 --tensor-type attn_q");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.output, "graft quantize: --tensor-type 'attn_q': expected REGEX=TYPE\n");

  r = graft_cmd("quantize " + kZoo + " " + out + " --type q8_0 -t 0");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.output, "graft quantize: --threads 0 is out of range: must be in 1..1024\n");

  const std::string junk = path("junk.gguf");
  std::ofstream(junk) << "not a gguf file";
  r = graft_cmd("quantize " + junk + " " + out + " --type q8_0");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.output.rfind("graft quantize: " + junk + ": ", 0), 0u) << r.output;
  EXPECT_FALSE(std::filesystem::exists(out));
}

}  // namespace
