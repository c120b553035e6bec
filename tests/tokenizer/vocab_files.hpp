// Access to the shared real vocabularies (ggml-vocab-*.gguf) and their test vectors.
#pragma once

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "tokenizer/tokenizer.hpp"

namespace graft::test {

inline std::filesystem::path vocab_dir() { return std::filesystem::path(GRAFT_TESTDATA_DIR) / "vocab"; }

inline std::string read_all(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The .inp format: every string, the last one included, is followed by the separator.
inline std::vector<std::string> read_inputs(const std::filesystem::path& p) {
  static const std::string sep = "\n__ggml_vocab_test__\n";
  const std::string all = read_all(p);
  std::vector<std::string> out;
  std::size_t pos = 0;
  for (std::size_t m; (m = all.find(sep, pos)) != std::string::npos; pos = m + sep.size()) {
    out.push_back(all.substr(pos, m - pos));
  }
  return out;
}

// One line of ids per input string.
inline std::vector<std::vector<TokenId>> read_outputs(const std::filesystem::path& p) {
  std::vector<std::vector<TokenId>> out;
  std::istringstream all(read_all(p));
  for (std::string line; std::getline(all, line);) {
    std::istringstream ls(line);
    std::vector<TokenId> ids;
    for (long v; ls >> v;) ids.push_back(static_cast<TokenId>(v));
    out.push_back(std::move(ids));
  }
  return out;
}

}  // namespace graft::test
