// Runs the built `graft info` on generated files: output content and exit codes.
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "gguf_test_util.hpp"

namespace fs = std::filesystem;
using namespace gguf_test;

namespace {

struct Result {
  int code = -1;
  std::string out, err;
};

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

class ggufInfo : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("graft_info_test_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
    model_ = dir_ / "sample.gguf";
    ASSERT_TRUE(sample_writer().write(model_).ok());
  }
  void TearDown() override { fs::remove_all(dir_); }

  Result run(const std::string& args) {
    fs::path out = dir_ / "stdout", err = dir_ / "stderr";
    std::string cmd = std::string("'") + GRAFT_EXE + "' info " + args + " >'" + out.string() + "' 2>'" + err.string() + "'";
    int status = std::system(cmd.c_str());
    Result r;
    r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    r.out = slurp(out);
    r.err = slurp(err);
    return r;
  }

  fs::path dir_, model_;
};

}  // namespace

TEST_F(ggufInfo, SummarizesAGeneratedFile) {
  Result r = run("'" + model_.string() + "'");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  EXPECT_NE(r.out.find("file:        " + model_.string() + "\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("version:     3\n"), std::string::npos);
  EXPECT_NE(r.out.find("alignment:   32\n"), std::string::npos);
  EXPECT_NE(r.out.find("tensors:     3\n"), std::string::npos);
  EXPECT_NE(r.out.find("metadata:    9 keys\n"), std::string::npos);
  EXPECT_NE(r.out.find("general.architecture"), std::string::npos);
  EXPECT_NE(r.out.find("\"llama\""), std::string::npos);
  EXPECT_NE(r.out.find("array[string]  [3 items: \"a\", \"b\", \"c\"]"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("array[i32]     [3 items: 1, -2, 3]"), std::string::npos) << r.out;
  // Per-type summary and totals: q4_0 64 elements in 36 bytes, q8_0 64 in 68, f32 24 in 96.
  EXPECT_NE(r.out.find("  q4_0            1               64               36\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("  q8_0            1               64               68\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("  f32             1               24               96\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("total:       152 parameters, 200 bytes"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("tensor_a"), std::string::npos);  // only with --tensors
}

TEST_F(ggufInfo, ListsTensors) {
  Result r = run("--tensors '" + model_.string() + "'");
  ASSERT_EQ(r.code, 0) << r.err;
  auto data = graft::gguf::File::open(model_);
  ASSERT_TRUE(data.has_value());
  std::uint64_t base = (*data)->data_offset();
  char line[256];
  std::snprintf(line, sizeof line, "  %-40s %-8s %-24s %14d %14llu\n", "tensor_b", "q8_0", "[64]", 68,
                static_cast<unsigned long long>(base + 64));
  EXPECT_NE(r.out.find(line), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("[32, 2]"), std::string::npos);
  EXPECT_NE(r.out.find("[8, 3]"), std::string::npos);
}

TEST_F(ggufInfo, Json) {
  Result r = run("--json --tensors '" + model_.string() + "'");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out.rfind("{\n", 0), 0u);
  EXPECT_NE(r.out.find("\"version\": 3,"), std::string::npos);
  EXPECT_NE(r.out.find("{\"key\": \"tokenizer.ggml.tokens\", \"type\": \"array\", \"value\": {\"elem_type\": \"string\", "
                       "\"count\": 3, \"head\": [\"a\", \"b\", \"c\"]}}"),
            std::string::npos) << r.out;
  EXPECT_NE(r.out.find("{\"key\": \"llama.rope.freq_base\", \"type\": \"f32\", \"value\": 10000}"), std::string::npos);
  EXPECT_NE(r.out.find("\"parameters\": 152,"), std::string::npos);
  EXPECT_NE(r.out.find("{\"name\": \"tensor_c\", \"type\": \"f32\", \"shape\": [8, 3], \"bytes\": 96,"), std::string::npos)
      << r.out;
  EXPECT_EQ(r.out.substr(r.out.size() - 2), "}\n");
}

TEST_F(ggufInfo, CorruptFileIsOneLineAndExitOne) {
  Bytes b = sample_bytes();
  put_u32(b, 4, 2);
  fs::path bad = dir_ / "bad.gguf";
  std::ofstream(bad, std::ios::binary).write(reinterpret_cast<const char*>(b.data()), std::streamsize(b.size()));
  Result r = run("'" + bad.string() + "'");
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err, "graft info: " + bad.string() + ": unsupported GGUF version 2: graft reads version 3\n");

  Result missing = run("'" + (dir_ / "nope.gguf").string() + "'");
  EXPECT_EQ(missing.code, 1);
  EXPECT_EQ(missing.err, "graft info: " + (dir_ / "nope.gguf").string() + ": cannot open: No such file or directory\n");
}

TEST_F(ggufInfo, UsageErrorsExitTwo) {
  Result none = run("");
  EXPECT_EQ(none.code, 2);
  EXPECT_NE(none.err.find("missing MODEL"), std::string::npos) << none.err;
  Result bogus = run("--bogus '" + model_.string() + "'");
  EXPECT_EQ(bogus.code, 2);
  EXPECT_NE(bogus.err.find("--bogus"), std::string::npos) << bogus.err;
  Result two = run("a b");
  EXPECT_EQ(two.code, 2);
  Result help = run("--help");
  EXPECT_EQ(help.code, 0);
  EXPECT_NE(help.out.find("--tensors"), std::string::npos);
}
