// Developer tool for xcheck_pre_tokenizers.py (not a test): prints every pre-tokenizer rule's
// patterns (--patterns), or the pieces each rule cuts the \0-separated strings on stdin into.
// Output per rule: "#RULE name\n", then per string its pieces joined by \x01 and ended by \x02.
#include <iostream>
#include <iterator>
#include <string>
#include <vector>

#include "tokenizer/pre_tokenizer.hpp"

int main(int argc, char** argv) {
  using namespace graft;
  if (argc > 1 && std::string(argv[1]) == "--patterns") {
    for (const auto& rule : pre_tokenizer_rules()) {
      std::cout << "#RULE " << rule.names[0] << "\n";
      for (const auto p : rule.patterns) {
        for (const char c : p) std::cout << (c == '\n' ? std::string("\\n") : std::string(1, c));
        std::cout << '\x02';
      }
      std::cout << "\n";
    }
    return 0;
  }
  const std::string all((std::istreambuf_iterator<char>(std::cin)), {});
  std::vector<std::string> strs;
  std::size_t pos = 0;
  for (std::size_t m; (m = all.find('\0', pos)) != std::string::npos; pos = m + 1) strs.push_back(all.substr(pos, m - pos));
  for (const auto& rule : pre_tokenizer_rules()) {
    auto pt = PreTokenizer::create(rule.names[0]);
    if (!pt) {
      std::cerr << pt.status().message() << "\n";
      return 1;
    }
    std::cout << "#RULE " << rule.names[0] << "\n";
    for (const auto& s : strs) {
      auto pieces = pt->split(s);
      if (!pieces) {
        std::cerr << pieces.status().message() << "\n";
        return 1;
      }
      for (std::size_t i = 0; i < pieces->size(); ++i) std::cout << (i ? "\x01" : "") << (*pieces)[i];
      std::cout << '\x02';
    }
    std::cout << "\n";
  }
  return 0;
}
