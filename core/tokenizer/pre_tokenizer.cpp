#include "tokenizer/pre_tokenizer.hpp"

namespace graft {
namespace {

// PCRE2's \s also matches U+180E (MONGOLIAN VOWEL SEPARATOR, Perl's old \h list); in Unicode it
// is a format character and Oniguruma/HF do not treat it as space. Spelling \s as the White_Space
// property gives HF's meaning. Escape pairs are copied whole so "\\s" stays a backslash + 's'.
std::string with_unicode_space(std::string_view pattern) {
  std::string out;
  out.reserve(pattern.size() + 32);
  for (std::size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] != '\\' || i + 1 >= pattern.size()) {
      out += pattern[i];
      continue;
    }
    const char c = pattern[++i];
    if (c == 's') {
      out += "\\p{White_Space}";
    } else if (c == 'S') {
      out += "\\P{White_Space}";
    } else {
      out += '\\';
      out += c;
    }
  }
  return out;
}

}  // namespace

std::vector<std::string_view> PreTokenizer::supported_names() {
  std::vector<std::string_view> out;
  for (const auto& rule : pre_tokenizer_rules()) out.insert(out.end(), rule.names.begin(), rule.names.end());
  return out;
}

Expected<PreTokenizer> PreTokenizer::create(std::string_view name) {
  const std::string_view key = name.empty() ? std::string_view("default") : name;
  for (const auto& rule : pre_tokenizer_rules()) {
    for (const auto n : rule.names) {
      if (n != key) continue;
      PreTokenizer pt;
      pt.name_ = std::string(key);
      pt.rule_ = &rule;
      for (const auto pattern : rule.patterns) {
        auto re = Regex::compile(with_unicode_space(pattern));
        if (!re) return Status(re.status().code(), "pre-tokenizer '" + pt.name_ + "': " + re.status().message());
        pt.regexes_.push_back(std::move(*re));
      }
      return pt;
    }
  }
  std::string list;
  for (const auto n : supported_names()) list += (list.empty() ? "" : ", ") + std::string(n);
  return Status(Errc::unsupported,
                "unknown pre-tokenizer '" + std::string(name) + "' (tokenizer.ggml.pre); supported: " + list);
}

Expected<std::vector<std::string_view>> PreTokenizer::split(std::string_view text) const {
  std::vector<std::string_view> pieces;
  if (text.empty()) return pieces;
  pieces.push_back(text);
  std::vector<std::string_view> next;
  for (const auto& re : regexes_) {
    next.clear();
    next.reserve(pieces.size() + pieces.size() / 2 + 8);
    Regex::Matcher matcher(re);
    for (const auto piece : pieces) {
      std::size_t last = 0;
      Status st = matcher.for_each(piece, [&](std::size_t b, std::size_t e) {
        if (b > last) next.push_back(piece.substr(last, b - last));
        if (e > b) next.push_back(piece.substr(b, e - b));
        last = e;
      });
      if (!st.ok()) return st;
      if (last < piece.size()) next.push_back(piece.substr(last));
    }
    pieces.swap(next);
  }
  return pieces;
}

}  // namespace graft
