#include "synth/synth_vocab.hpp"

#include <fmt/format.h>

#include <map>
#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

#include "tokenizer/byte_map.hpp"
#include "tokenizer/pre_tokenizer.hpp"
#include "tokenizer/tokenizer.hpp"

namespace graft::synth {
namespace {

constexpr std::string_view kText = R"TXT(The quick brown fox jumps over the lazy dog. The model reads the prompt, and then
it writes the answer one token at a time. Each token is a piece of a word, a whole word, or a
single byte. When the model is small, the text it writes is not very good, but the numbers are
still finite and the tests can check that the engine computes them the same way every time.

def hello(world):
    return 42

def add(a, b):
    """Return the sum of a and b."""
    return a + b

class Counter:
    def __init__(self, start=0):
        self.value = start

    def increment(self, step=1):
        self.value += step
        return self.value

for i in range(10):
    if i % 2 == 0:
        print("even", i)
    else:
        print("odd", i)

import os
import sys

def read_file(path):
    with open(path, "r") as f:
        return f.read()

def main():
    args = sys.argv[1:]
    for name in args:
        text = read_file(name)
        print(len(text), name)
    return 0

if __name__ == "__main__":
    sys.exit(main())

The weather today is sunny with a light wind from the west. In the afternoon there may be some
clouds, and in the evening the temperature will fall. Tomorrow will be warmer than today, and the
weekend should be dry. People who walk in the park can see the trees, the river and the birds.
A language model predicts the next token from the tokens before it. The sampler then picks one
token from the predicted distribution: the most likely token when the temperature is zero, or a
random token weighted by its probability otherwise. The speculative decoder proposes several
tokens at once, and the target model checks them in a single forward pass.
)TXT";

constexpr std::string_view kFillerLetters = "etaoinsrhldcumfpgwybvkxjqz";

using Word = std::vector<std::string>;  // the current symbols of one pre-tokenized word

struct Builder {
  std::vector<std::string> tokens;
  std::vector<std::string> merges;
  std::unordered_set<std::string> known;

  void add_token(std::string text) {
    known.insert(text);
    tokens.push_back(std::move(text));
  }
  // Records the merge and, when its result is new, the token.
  void add_merge(const std::string& a, const std::string& b) {
    merges.push_back(a + " " + b);
    std::string ab = a + b;
    if (!known.count(ab)) add_token(std::move(ab));
  }
};

// Classic BPE training over the pre-tokenized built-in text: repeatedly merge the most frequent
// adjacent pair (ties: the lexicographically smallest pair), until `target` tokens exist or no
// pair occurs twice.
Status learn(Builder& b, std::string_view pre, std::size_t target) {
  auto splitter = PreTokenizer::create(pre);
  if (!splitter) return splitter.status();
  auto pieces = splitter->split(kText);
  if (!pieces) return pieces.status();
  std::map<std::string, std::int64_t> counts;
  for (const auto piece : *pieces) ++counts[std::string(piece)];
  std::vector<std::pair<Word, std::int64_t>> words;
  for (const auto& [text, count] : counts) {
    Word w;
    for (const char c : text) w.emplace_back(byte_map::byte_to_utf8(static_cast<std::uint8_t>(c)));
    words.emplace_back(std::move(w), count);
  }
  while (b.tokens.size() < target) {
    std::map<std::pair<std::string, std::string>, std::int64_t> pairs;
    for (const auto& [w, count] : words)
      for (std::size_t i = 0; i + 1 < w.size(); ++i) pairs[{w[i], w[i + 1]}] += count;
    const std::pair<std::string, std::string>* best = nullptr;
    std::int64_t best_count = 1;
    for (const auto& [pair, count] : pairs) {
      if (count > best_count) {
        best = &pair;
        best_count = count;
      }
    }
    if (!best) break;
    const auto [left, right] = *best;  // copy: `pairs` is rebuilt next round
    b.add_merge(left, right);
    for (auto& [w, count] : words) {
      Word merged;
      for (std::size_t i = 0; i < w.size(); ++i) {
        if (i + 1 < w.size() && w[i] == left && w[i + 1] == right) {
          merged.push_back(left + right);
          ++i;
        } else {
          merged.push_back(std::move(w[i]));
        }
      }
      w = std::move(merged);
    }
  }
  return {};
}

// Breadth-first extension of existing tokens by one letter: as many tokens as any vocabulary
// size needs, each reachable through its merge.
void fill(Builder& b, std::size_t target) {
  std::vector<std::string> queue;
  queue.emplace_back(byte_map::byte_to_utf8(' '));
  for (const char c : kFillerLetters) queue.emplace_back(1, c);
  for (std::size_t id = 256; id < b.tokens.size(); ++id) queue.push_back(b.tokens[id]);
  for (std::size_t q = 0; b.tokens.size() < target; ++q) {
    const std::string stem = queue[q];  // copy: queue grows below
    for (const char c : kFillerLetters) {
      if (b.tokens.size() >= target) break;
      std::string text = stem + c;
      if (b.known.count(text)) continue;
      b.add_merge(stem, std::string(1, c));
      queue.push_back(std::move(text));
    }
  }
}

}  // namespace

std::string_view builtin_text() { return kText; }

Expected<VocabData> build_vocab(std::int64_t n_vocab, std::string_view pre, bool add_bos) {
  constexpr std::int64_t kSpecial = 3;
  // A "gpt2" vocabulary needs at least one merge to load.
  if (n_vocab < 256 + kSpecial + 1) return Status(Errc::invalid_argument, fmt::format("vocabulary size {} is below 260", n_vocab));
  const auto target = static_cast<std::size_t>(n_vocab - kSpecial);
  Builder b;
  b.tokens.reserve(static_cast<std::size_t>(n_vocab));
  for (int c = 0; c < 256; ++c) b.add_token(std::string(byte_map::byte_to_utf8(static_cast<std::uint8_t>(c))));
  GRAFT_TRY(learn(b, pre, target));
  fill(b, target);

  VocabData d;
  d.model = "gpt2";
  d.pre = std::string(pre);
  d.tokens = std::move(b.tokens);
  d.merges = std::move(b.merges);
  d.token_types.assign(d.tokens.size(), static_cast<std::int32_t>(TokenType::normal));
  const auto eos = static_cast<std::int64_t>(d.tokens.size());
  for (const char* special : {"<|endoftext|>", "<|im_start|>", "<|im_end|>"}) {
    d.tokens.emplace_back(special);
    d.token_types.push_back(static_cast<std::int32_t>(TokenType::control));
  }
  d.bos_id = eos;
  d.eos_id = eos;
  d.pad_id = eos;
  d.add_bos = add_bos;
  d.add_eos = false;
  return d;
}

}  // namespace graft::synth
