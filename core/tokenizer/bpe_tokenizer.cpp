#include "tokenizer/bpe_tokenizer.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "tokenizer/byte_map.hpp"
#include "tokenizer/token_piece.hpp"

namespace graft {
namespace {

// Heap order: lowest rank on top, then the leftmost pair.
struct Later {
  template <class C>
  bool operator()(const C& a, const C& b) const {
    return a.rank > b.rank || (a.rank == b.rank && a.left > b.left);
  }
};

}  // namespace

Expected<std::unique_ptr<Tokenizer>> BpeTokenizer::create(Vocab vocab, PreTokenizer pre) {
  std::vector<std::string> merges = vocab.take_merges();
  if (merges.empty()) return Status(Errc::corrupt, "tokenizer.ggml.merges is missing or empty (needed by \"gpt2\")");
  std::unique_ptr<BpeTokenizer> t(new BpeTokenizer(std::move(vocab), std::move(pre)));
  for (int b = 0; b < 256; ++b) t->byte_token_[b] = t->vocab_.find(byte_map::byte_to_utf8(static_cast<std::uint8_t>(b)));

  // Merges work on ids: HF refuses vocabularies whose merge parts or results are not tokens, so
  // such lines (seen only in broken files) are skipped and counted.
  t->merges_.reserve(merges.size());
  std::size_t skipped = 0;
  std::string joined;
  for (std::size_t i = 0; i < merges.size(); ++i) {
    const std::string_view m = merges[i];
    const std::size_t sp = m.find(' ', 1);  // a part may itself start with a space
    if (sp == std::string_view::npos) {
      ++skipped;
      continue;
    }
    const std::string_view left = m.substr(0, sp), right = m.substr(sp + 1);
    joined.assign(left).append(right);
    const TokenId a = t->vocab_.find(left), b = t->vocab_.find(right), r = t->vocab_.find(joined);
    if (a < 0 || b < 0 || r < 0) {
      ++skipped;
      continue;
    }
    t->merges_.insert(a, b, static_cast<std::int32_t>(i), r);  // the first rank wins
  }
  if (skipped) spdlog::warn("vocabulary: {} of {} merges name texts that are not tokens; skipped", skipped, merges.size());
  return std::unique_ptr<Tokenizer>(std::move(t));
}

Status BpeTokenizer::encode_fragment(std::string_view text, bool, std::vector<TokenId>& out) const {
  auto words = pre_.split(text);
  if (!words) return words.status();
  Scratch s;
  for (const auto word : *words) encode_word(word, out, s);
  return Status::success();
}

void BpeTokenizer::push_candidate(Scratch& s, std::int32_t left) const {
  const Symbol& l = s.symbols[static_cast<std::size_t>(left)];
  if (l.id < 0 || l.next < 0) return;
  const Symbol& r = s.symbols[static_cast<std::size_t>(l.next)];
  if (r.id < 0) return;
  const MergeTable::Entry* m = merges_.find(l.id, r.id);
  if (!m) return;
  s.heap.push_back({m->rank, left, l.id, r.id, m->result});
  std::push_heap(s.heap.begin(), s.heap.end(), Later{});
}

void BpeTokenizer::encode_word(std::string_view word, std::vector<TokenId>& out, Scratch& s) const {
  if (pre_.rule().ignore_merges) {
    // HF BPE ignore_merges: a word that is a token as a whole is taken as is.
    s.spelled = byte_map::encode(word);
    const TokenId whole = vocab_.find(s.spelled);
    if (whole >= 0) {
      out.push_back(whole);
      return;
    }
  }

  // One symbol per byte: each byte is exactly one code point in the byte-level spelling.
  const auto n = static_cast<std::int32_t>(word.size());
  s.symbols.clear();
  s.heap.clear();
  for (std::int32_t i = 0; i < n; ++i) {
    const auto b = static_cast<std::uint8_t>(word[static_cast<std::size_t>(i)]);
    s.symbols.push_back({byte_token_[b], i - 1, i + 1 < n ? i + 1 : -1, b, true});
  }
  for (std::int32_t i = 0; i + 1 < n; ++i) push_candidate(s, i);

  while (!s.heap.empty()) {
    std::pop_heap(s.heap.begin(), s.heap.end(), Later{});
    const Candidate c = s.heap.back();
    s.heap.pop_back();
    Symbol& l = s.symbols[static_cast<std::size_t>(c.left)];
    // Entries are never removed from the heap; one is stale when either side has changed since.
    if (!l.alive || l.id != c.left_id || l.next < 0) continue;
    Symbol& r = s.symbols[static_cast<std::size_t>(l.next)];
    if (r.id != c.right_id) continue;
    l.id = c.result;
    r.alive = false;
    l.next = r.next;
    if (r.next >= 0) s.symbols[static_cast<std::size_t>(r.next)].prev = c.left;
    if (l.prev >= 0) push_candidate(s, l.prev);
    push_candidate(s, c.left);
  }

  // Merges fold right into left, so symbol 0 starts the chain.
  for (std::int32_t i = 0; i >= 0 && i < n; i = s.symbols[static_cast<std::size_t>(i)].next) {
    const Symbol& sym = s.symbols[static_cast<std::size_t>(i)];
    if (sym.id >= 0) {
      out.push_back(sym.id);
      continue;
    }
    // A byte whose spelling is missing: llama.cpp tries each byte of the spelling as a token and
    // drops what it cannot find.
    for (const char c : byte_map::byte_to_utf8(sym.byte)) {
      const TokenId id = vocab_.find(std::string_view(&c, 1));
      if (id >= 0) out.push_back(id);
    }
  }
}

std::string BpeTokenizer::piece(TokenId id, bool render_special) const {
  const std::string& text = vocab_.text(id);
  switch (vocab_.type(id)) {
    case TokenType::control:
    case TokenType::unknown:
      return render_special ? text : std::string();
    case TokenType::user_defined:
      return text;  // stored as plain text, not byte-level spelled
    case TokenType::normal:
      return byte_map::decode(text);
    case TokenType::byte: {
      const int b = parse_byte_token(text);
      return b >= 0 ? std::string(1, static_cast<char>(b)) : byte_map::decode(text);
    }
    case TokenType::undefined:
    case TokenType::unused:
      break;
  }
  return {};  // llama.cpp renders unused/undefined tokens as nothing
}

}  // namespace graft
