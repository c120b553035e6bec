// Runs the real `graft tokenize` binary on a vocabulary-only GGUF file.
#include <gtest/gtest.h>

#include <sys/wait.h>

#include <cstdio>
#include <fstream>
#include <algorithm>
#include <string>

#include "vocab_files.hpp"

namespace graft {
namespace {

struct CmdResult {
  int code = -1;
  std::string out;  // stdout and stderr together
};

std::string shell_quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

CmdResult run(const std::string& args) {
  CmdResult r;
  const std::string cmd = shell_quote(GRAFT_EXE) + " tokenize " + args + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return r;
  char buf[4096];
  for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, p)) > 0;) r.out.append(buf, n);
  const int status = pclose(p);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

std::string vocab(const char* name) { return (test::vocab_dir() / (std::string("ggml-vocab-") + name + ".gguf")).string(); }

#define REQUIRE_VOCAB(name)                                                              \
  if (!std::filesystem::exists(vocab(name))) GTEST_SKIP() << vocab(name) << " absent"

TEST(tokCliTokenize, PrintsIdsAndPieces) {
  REQUIRE_VOCAB("gpt-2");
  const CmdResult r = run("--model " + shell_quote(vocab("gpt-2")) + " --prompt 'Hello world'");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(r.out, "15496\t'Hello'\n995\t' world'\n");
}

TEST(tokCliTokenize, IdsAsAList) {
  REQUIRE_VOCAB("llama-spm");
  // SentencePiece vocabulary: BOS added by default, not with --no-bos.
  CmdResult r = run("-m " + shell_quote(vocab("llama-spm")) + " -p 'Hello world' --ids");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(r.out, "[1, 15043, 3186]\n");
  r = run("-m " + shell_quote(vocab("llama-spm")) + " -p 'Hello world' --ids --no-bos");
  EXPECT_EQ(r.out, "[15043, 3186]\n");
  r = run("-m " + shell_quote(vocab("llama-spm")) + " -p '' --ids --no-bos");
  EXPECT_EQ(r.out, "[]\n");
}

TEST(tokCliTokenize, EscapesControlCharactersAndPartialBytes) {
  REQUIRE_VOCAB("gpt-2");
  const CmdResult r = run("-m " + shell_quote(vocab("gpt-2")) + " -p \"$(printf 'a\\tb\\n\\360\\237\\230\\201')\"");
  EXPECT_EQ(r.code, 0) << r.out;
  // The emoji is two tokens: its first three bytes, then the last one.
  EXPECT_EQ(r.out, "64\t'a'\n197\t'\\t'\n65\t'b'\n198\t'\\n'\n47249\t'\\xf0\\x9f\\x98'\n223\t'\\x81'\n");
}

TEST(tokCliTokenize, ParseSpecial) {
  REQUIRE_VOCAB("gpt-2");
  CmdResult r = run("-m " + shell_quote(vocab("gpt-2")) + " -p 'x<|endoftext|>' --parse-special --ids");
  EXPECT_EQ(r.out, "[87, 50256]\n");
  r = run("-m " + shell_quote(vocab("gpt-2")) + " -p 'x<|endoftext|>' --ids");
  EXPECT_NE(r.out, "[87, 50256]\n");
  EXPECT_EQ(r.code, 0);
}

TEST(tokCliTokenize, PromptFile) {
  REQUIRE_VOCAB("gpt-2");
  const auto path = std::filesystem::temp_directory_path() / "graft_cli_tokenize_prompt.txt";
  std::ofstream(path, std::ios::binary) << "Hello world";
  const CmdResult r = run("-m " + shell_quote(vocab("gpt-2")) + " -f " + shell_quote(path.string()) + " --ids");
  std::filesystem::remove(path);
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(r.out, "[15496, 995]\n");
}

TEST(tokCliTokenize, UsageErrorsExitTwo) {
  for (const char* args : {"--prompt x", "--model m.gguf", "--model m.gguf --prompt x --prompt-file y",
                           "--model m.gguf --prompt x --bogus", "--model m.gguf --prompt x stray"}) {
    const CmdResult r = run(args);
    EXPECT_EQ(r.code, 2) << args << ": " << r.out;
    EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1) << args << ": " << r.out;
    EXPECT_EQ(r.out.rfind("graft tokenize: ", 0), 0u) << r.out;
  }
}

TEST(tokCliTokenize, FailuresExitOneWithOneLine) {
  CmdResult r = run("--model /nonexistent/vocab.gguf --prompt x");
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1) << r.out;
  EXPECT_NE(r.out.find("/nonexistent/vocab.gguf"), std::string::npos) << r.out;

  REQUIRE_VOCAB("gpt-2");
  r = run("--model " + shell_quote(vocab("gpt-2") + ".inp") + " --prompt x");  // not a GGUF file
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1) << r.out;
  r = run("--model " + shell_quote(vocab("gpt-2")) + " --prompt-file /nonexistent/prompt.txt");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.out.find("cannot read prompt file /nonexistent/prompt.txt"), std::string::npos) << r.out;
}

TEST(tokCliTokenize, Help) {
  const CmdResult r = run("--help");
  EXPECT_EQ(r.code, 0);
  EXPECT_NE(r.out.find("--prompt-file"), std::string::npos);
  EXPECT_NE(r.out.find("--parse-special"), std::string::npos);
}

}  // namespace
}  // namespace graft
