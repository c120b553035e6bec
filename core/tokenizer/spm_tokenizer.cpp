#include "tokenizer/spm_tokenizer.hpp"

#include <algorithm>
#include <cstdio>

#include "tokenizer/token_piece.hpp"
#include "tokenizer/unicode.hpp"

namespace graft {
namespace {

constexpr std::string_view kSpace = "\xE2\x96\x81";  // U+2581, SentencePiece's visible space

struct Symbol {
  std::uint32_t start;
  std::uint32_t len;  // 0 once merged into its left neighbour
  std::int32_t prev;
  std::int32_t next;
};

struct Bigram {
  float score;
  std::int32_t left;
  std::int32_t right;
  std::uint32_t len;
};

// Heap order: highest score on top, then the leftmost pair.
struct Lower {
  bool operator()(const Bigram& a, const Bigram& b) const {
    return a.score < b.score || (a.score == b.score && a.left > b.left);
  }
};

}  // namespace

Expected<std::unique_ptr<Tokenizer>> SpmTokenizer::create(Vocab vocab) {
  std::unique_ptr<SpmTokenizer> t(new SpmTokenizer(std::move(vocab)));
  // Byte fallback: "<0xXX>", else the byte itself as a token (llama.cpp's byte_to_token).
  for (int b = 0; b < 256; ++b) {
    char hex[8];
    std::snprintf(hex, sizeof hex, "<0x%02X>", b);
    TokenId id = t->vocab_.find(hex);
    if (id < 0) id = t->vocab_.find(std::string(1, static_cast<char>(b)));
    t->byte_token_[b] = id;
  }
  // Can a token continue across a space? Only if some token has U+2581 right after another
  // character. When none does, no merge can join a symbol to a following U+2581 that starts a
  // word, so encode may merge word by word.
  t->split_at_space_ = true;
  for (std::size_t id = 0; id < t->vocab_.size() && t->split_at_space_; ++id) {
    const std::string_view text = t->vocab_.text(static_cast<TokenId>(id));
    for (std::size_t pos = text.find(kSpace, 1); pos != std::string_view::npos; pos = text.find(kSpace, pos + 1)) {
      if (pos < kSpace.size() || text.substr(pos - kSpace.size(), kSpace.size()) != kSpace) {
        t->split_at_space_ = false;
        break;
      }
    }
  }
  return std::unique_ptr<Tokenizer>(std::move(t));
}

void SpmTokenizer::push_byte(std::uint8_t b, std::vector<TokenId>& out) const {
  const TokenId id = byte_token_[b];
  if (id >= 0) {
    out.push_back(id);
  } else if (vocab_.unk() >= 0) {
    out.push_back(vocab_.unk());  // a vocabulary without byte tokens: llama.cpp would abort here
  }
}

Status SpmTokenizer::encode_fragment(std::string_view text, bool after_special, std::vector<TokenId>& out) const {
  std::string s;
  s.reserve(text.size() * 3 / 2 + 3);
  if (after_special && vocab_.add_space_prefix()) s += kSpace;
  for (const char c : text) {
    if (c == ' ') {
      s += kSpace;
    } else {
      s += c;
    }
  }
  if (s.size() > UINT32_MAX / 2) return Status(Errc::out_of_range, "text too long to tokenize in one piece");

  // One symbol per UTF-8 character (a stray byte is a character of its own).
  std::vector<Symbol> sym;
  sym.reserve(s.size());
  for (std::size_t off = 0; off < s.size();) {
    const std::size_t len = std::min(unicode::utf8_len(static_cast<unsigned char>(s[off])), s.size() - off);
    sym.push_back({static_cast<std::uint32_t>(off), static_cast<std::uint32_t>(len), -1, -1});
    off += len;
  }
  const std::string_view sv = s;
  auto is_space = [&](std::size_t i) { return sv.substr(sym[i].start, sym[i].len) == kSpace; };

  std::vector<Bigram> heap;
  auto try_add = [&](std::int32_t l, std::int32_t r) {
    if (l < 0 || r < 0) return;
    const Symbol& a = sym[static_cast<std::size_t>(l)];
    const Symbol& b = sym[static_cast<std::size_t>(r)];
    const TokenId id = vocab_.find(sv.substr(a.start, a.len + b.len));
    if (id < 0) return;
    heap.push_back({vocab_.score(id), l, r, a.len + b.len});
    std::push_heap(heap.begin(), heap.end(), Lower{});
  };

  // Merge chunk by chunk when no merge can cross a chunk start (see split_at_space_): the same
  // merges happen in the same order as over the whole text, with a small heap.
  for (std::size_t first = 0; first < sym.size();) {
    std::size_t end = first + 1;
    if (split_at_space_) {
      while (end < sym.size() && !(is_space(end) && !is_space(end - 1))) ++end;
    } else {
      end = sym.size();
    }
    for (std::size_t i = first; i < end; ++i) {
      sym[i].prev = i > first ? static_cast<std::int32_t>(i - 1) : -1;
      sym[i].next = i + 1 < end ? static_cast<std::int32_t>(i + 1) : -1;
    }
    heap.clear();
    for (std::size_t i = first + 1; i < end; ++i) try_add(static_cast<std::int32_t>(i - 1), static_cast<std::int32_t>(i));

    while (!heap.empty()) {
      std::pop_heap(heap.begin(), heap.end(), Lower{});
      const Bigram bg = heap.back();
      heap.pop_back();
      Symbol& l = sym[static_cast<std::size_t>(bg.left)];
      Symbol& r = sym[static_cast<std::size_t>(bg.right)];
      // Stale when either side was merged away or has grown since the bigram was queued.
      if (l.len == 0 || r.len == 0 || l.len + r.len != bg.len) continue;
      l.len += r.len;
      r.len = 0;
      l.next = r.next;
      if (r.next >= 0) sym[static_cast<std::size_t>(r.next)].prev = bg.left;
      try_add(l.prev, bg.left);
      try_add(bg.left, l.next);
    }

    // Every merged symbol is a token (merges require it); single characters may not be.
    for (auto i = static_cast<std::int32_t>(first); i >= 0; i = sym[static_cast<std::size_t>(i)].next) {
      const Symbol& x = sym[static_cast<std::size_t>(i)];
      const std::string_view piece = sv.substr(x.start, x.len);
      const TokenId id = vocab_.find(piece);
      if (id >= 0) {
        out.push_back(id);
        continue;
      }
      for (const char c : piece) push_byte(static_cast<std::uint8_t>(c), out);
    }
    first = end;
  }
  return Status::success();
}

std::string SpmTokenizer::piece(TokenId id, bool render_special) const {
  const std::string& text = vocab_.text(id);
  switch (vocab_.type(id)) {
    case TokenType::control:
    case TokenType::unknown:
      return render_special ? text : std::string();
    case TokenType::user_defined:
      return text;
    case TokenType::normal: {
      std::string out;
      out.reserve(text.size());
      for (std::size_t i = 0; i < text.size();) {
        if (text.compare(i, kSpace.size(), kSpace) == 0) {
          out += ' ';
          i += kSpace.size();
        } else {
          out += text[i++];
        }
      }
      return out;
    }
    case TokenType::byte: {
      const int b = parse_byte_token(text);
      return b >= 0 ? std::string(1, static_cast<char>(b)) : text;
    }
    case TokenType::undefined:
    case TokenType::unused:
      break;
  }
  return {};
}

std::string SpmTokenizer::decode(const std::vector<TokenId>& ids, bool render_special) const {
  std::string out;
  // The prefix space belongs to the first text token. Without rendering, leading special tokens
  // (BOS) render as nothing and are looked past; when they are rendered, the space stays, as in
  // llama.cpp and HF ("<s> Hello").
  bool strip = vocab_.add_space_prefix();
  for (const TokenId id : ids) {
    if (!vocab_.valid(id)) continue;
    std::string p = piece(id, render_special);
    if (strip && !p.empty()) {
      if (p[0] == ' ') p.erase(0, 1);
      strip = false;
    }
    if (render_special) strip = false;
    out += p;
  }
  return out;
}

}  // namespace graft
