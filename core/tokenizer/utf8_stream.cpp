#include "tokenizer/tokenizer.hpp"
#include "tokenizer/unicode.hpp"

namespace graft {
namespace {

constexpr std::string_view kReplacementUtf8 = "\xEF\xBF\xBD";

// Length of the maximal subpart of an ill-formed sequence at s[0] (Unicode 3.9, "U+FFFD
// substitution of maximal subparts"): the bytes that started a valid sequence before it broke.
std::size_t maximal_subpart(std::string_view s) {
  std::size_t k = 1;
  while (k < s.size()) {
    bool incomplete = false;
    unicode::valid_prefix_len(s.substr(0, k + 1), &incomplete);
    if (!incomplete) break;
    ++k;
  }
  return k;
}

}  // namespace

std::string Utf8Stream::push(std::string_view bytes) {
  pending_.append(bytes);
  std::string out;
  std::size_t i = 0;
  const std::string_view p = pending_;
  while (i < p.size()) {
    bool incomplete = false;
    const std::size_t n = unicode::valid_prefix_len(p.substr(i), &incomplete);
    if (n > 0) {
      out.append(p.substr(i, n));
      i += n;
    } else if (incomplete) {
      break;  // the rest may be completed by the next token
    } else {
      out.append(kReplacementUtf8);
      i += maximal_subpart(p.substr(i));
    }
  }
  pending_.erase(0, i);
  return out;
}

std::string Utf8Stream::flush() {
  std::string out = push({});
  if (!pending_.empty()) {
    out.append(kReplacementUtf8);  // one unfinished sequence is one maximal subpart
    pending_.clear();
  }
  return out;
}

}  // namespace graft
