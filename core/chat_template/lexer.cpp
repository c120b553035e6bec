#include "lexer.hpp"

#include <cctype>

namespace graft::chat {
namespace {

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }

class Lexer {
 public:
  explicit Lexer(std::string_view src) : src_(src) {}

  std::vector<Token> run() {
    // jinja2's default keep_trailing_newline=False drops one final newline.
    if (!src_.empty() && src_.back() == '\n') src_.remove_suffix(1);
    bool strip_next_text = false;  // set by a `-` before the previous tag's closer
    bool trim_newline = false;     // trim_blocks after a %} or #}
    while (i_ < src_.size()) {
      std::size_t start = i_;
      std::size_t open = find_open(i_);
      std::string text(src_.substr(start, open - start));
      SourcePos text_pos = pos_of(start);
      if (trim_newline) {
        if (text.starts_with("\r\n")) text.erase(0, 2);
        else if (text.starts_with("\n")) text.erase(0, 1);
      }
      if (strip_next_text) {
        std::size_t k = 0;
        while (k < text.size() && is_space(text[k])) ++k;
        text.erase(0, k);
      }
      strip_next_text = trim_newline = false;
      if (open == src_.size()) {
        emit_text(std::move(text), text_pos);
        break;
      }
      char kind = src_[open + 1];
      std::size_t after = open + 2;
      char modifier = after < src_.size() ? src_[after] : '\0';
      if (modifier == '-') {
        while (!text.empty() && is_space(text.back())) text.pop_back();
      } else if (kind != '{' && modifier != '+') {
        // lstrip_blocks: spaces/tabs between a line start and a block or comment tag go.
        std::size_t q = open;
        while (q > start && (src_[q - 1] == ' ' || src_[q - 1] == '\t')) --q;
        bool at_line_start = q == 0 || src_[q - 1] == '\n';
        std::size_t k = text.size();
        while (k > 0 && (text[k - 1] == ' ' || text[k - 1] == '\t')) --k;
        if (at_line_start) text.erase(k);
      }
      emit_text(std::move(text), text_pos);
      if (modifier == '-' || modifier == '+') ++after;
      i_ = after;
      SourcePos tag_pos = pos_of(open);
      if (kind == '#') {
        std::size_t close = src_.find("#}", i_);
        if (close == std::string_view::npos) fail_at(tag_pos, "unclosed comment: missing '#}'");
        bool minus = close > i_ && src_[close - 1] == '-';
        i_ = close + 2;
        strip_next_text = minus;
        trim_newline = !minus;
        continue;
      }
      bool is_var = kind == '{';
      tokens_.push_back({is_var ? Tok::VarBegin : Tok::BlockBegin, is_var ? "{{" : "{%", tag_pos});
      bool minus = lex_tag(is_var ? '}' : '%', tag_pos);
      strip_next_text = minus;
      trim_newline = !is_var && !minus;
    }
    tokens_.push_back({Tok::End, "", pos_of(src_.size())});
    return std::move(tokens_);
  }

 private:
  std::size_t find_open(std::size_t from) const {
    for (std::size_t k = from; k + 1 < src_.size(); ++k)
      if (src_[k] == '{' && (src_[k + 1] == '{' || src_[k + 1] == '%' || src_[k + 1] == '#')) return k;
    return src_.size();
  }

  SourcePos pos_of(std::size_t offset) {
    // Incremental: offsets are queried in increasing order almost always.
    if (offset < line_scan_) line_scan_ = 0, line_ = 1, line_start_ = 0;
    for (; line_scan_ < offset && line_scan_ < src_.size(); ++line_scan_)
      if (src_[line_scan_] == '\n') ++line_, line_start_ = line_scan_ + 1;
    return {line_, static_cast<int>(offset - line_start_) + 1};
  }

  void emit_text(std::string text, SourcePos pos) {
    if (!text.empty()) tokens_.push_back({Tok::Text, std::move(text), pos});
  }

  // Lexes expression tokens up to the closer ("}}" or "%}"); returns whether it was "-}}"/"-%}".
  bool lex_tag(char closer, SourcePos tag_pos) {
    while (true) {
      while (i_ < src_.size() && is_space(src_[i_])) ++i_;
      if (i_ >= src_.size())
        fail_at(tag_pos, closer == '}' ? "unclosed expression: missing '}}'" : "unclosed block: missing '%}'");
      SourcePos p = pos_of(i_);
      char c = src_[i_];
      if (c == '-' && src_.substr(i_ + 1, 2) == std::string{closer, '}'}) {
        i_ += 3;
        tokens_.push_back({closer == '}' ? Tok::VarEnd : Tok::BlockEnd, "", p});
        return true;
      }
      if (c == closer && i_ + 1 < src_.size() && src_[i_ + 1] == '}') {
        i_ += 2;
        tokens_.push_back({closer == '}' ? Tok::VarEnd : Tok::BlockEnd, "", p});
        return false;
      }
      if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
        std::size_t s = i_;
        while (i_ < src_.size() && (std::isalnum(static_cast<unsigned char>(src_[i_])) || src_[i_] == '_')) ++i_;
        tokens_.push_back({Tok::Name, std::string(src_.substr(s, i_ - s)), p});
      } else if (std::isdigit(static_cast<unsigned char>(c))) {
        lex_number(p);
      } else if (c == '\'' || c == '"') {
        lex_string(p);
      } else {
        static const char* ops[] = {"//", "**", "==", "!=", "<=", ">=", "+", "-", "*", "/", "%", "~", "<", ">", "=",
                                    "(", ")", "[", "]", "{", "}", ",", ".", ":", "|"};
        bool found = false;
        for (const char* op : ops) {
          std::string_view o(op);
          if (src_.substr(i_, o.size()) == o) {
            tokens_.push_back({Tok::Op, std::string(o), p});
            i_ += o.size();
            found = true;
            break;
          }
        }
        if (!found) fail_at(p, std::string("unexpected character '") + c + "'");
      }
    }
  }

  void lex_number(SourcePos p) {
    std::size_t s = i_;
    while (i_ < src_.size() && (std::isdigit(static_cast<unsigned char>(src_[i_])) || src_[i_] == '_')) ++i_;
    bool is_float = false;
    if (i_ + 1 < src_.size() && src_[i_] == '.' && std::isdigit(static_cast<unsigned char>(src_[i_ + 1]))) {
      is_float = true;
      ++i_;
      while (i_ < src_.size() && std::isdigit(static_cast<unsigned char>(src_[i_]))) ++i_;
    }
    if (i_ < src_.size() && (src_[i_] == 'e' || src_[i_] == 'E')) {
      std::size_t k = i_ + 1;
      if (k < src_.size() && (src_[k] == '+' || src_[k] == '-')) ++k;
      if (k < src_.size() && std::isdigit(static_cast<unsigned char>(src_[k]))) {
        is_float = true;
        i_ = k;
        while (i_ < src_.size() && std::isdigit(static_cast<unsigned char>(src_[i_]))) ++i_;
      }
    }
    std::string text;
    for (char ch : src_.substr(s, i_ - s))
      if (ch != '_') text += ch;
    tokens_.push_back({is_float ? Tok::Float : Tok::Int, text, p});
  }

  static void append_utf8(std::string& out, unsigned cp) {
    if (cp < 0x80) out += static_cast<char>(cp);
    else if (cp < 0x800) out += static_cast<char>(0xC0 | (cp >> 6)), out += static_cast<char>(0x80 | (cp & 0x3F));
    else if (cp < 0x10000)
      out += static_cast<char>(0xE0 | (cp >> 12)), out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F)),
          out += static_cast<char>(0x80 | (cp & 0x3F));
    else
      out += static_cast<char>(0xF0 | (cp >> 18)), out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F)),
          out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F)), out += static_cast<char>(0x80 | (cp & 0x3F));
  }

  void lex_string(SourcePos p) {
    char quote = src_[i_++];
    std::string out;
    while (true) {
      if (i_ >= src_.size()) fail_at(p, "unterminated string literal");
      char c = src_[i_++];
      if (c == quote) break;
      if (c != '\\') {
        out += c;
        continue;
      }
      if (i_ >= src_.size()) fail_at(p, "unterminated string literal");
      char e = src_[i_++];
      switch (e) {
        case 'n': out += '\n'; break;
        case 't': out += '\t'; break;
        case 'r': out += '\r'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case '0': out += '\0'; break;
        case '\\': case '\'': case '"': out += e; break;
        case '\n': break;  // line continuation
        case 'x': case 'u': case 'U': {
          std::size_t n = e == 'x' ? 2 : e == 'u' ? 4 : 8;
          unsigned cp = 0;
          for (std::size_t k = 0; k < n; ++k, ++i_) {
            if (i_ >= src_.size() || !std::isxdigit(static_cast<unsigned char>(src_[i_])))
              fail_at(p, "bad \\" + std::string(1, e) + " escape in string literal");
            char h = src_[i_];
            cp = cp * 16 + static_cast<unsigned>(std::isdigit(static_cast<unsigned char>(h)) ? h - '0' : (std::tolower(h) - 'a' + 10));
          }
          if (cp > 0x10FFFF) fail_at(p, "bad escape in string literal");
          append_utf8(out, cp);
          break;
        }
        default: out += '\\', out += e;  // Python keeps unknown escapes as they are
      }
    }
    tokens_.push_back({Tok::String, std::move(out), p});
  }

  std::string_view src_;
  std::size_t i_ = 0;
  std::vector<Token> tokens_;
  std::size_t line_scan_ = 0, line_start_ = 0;
  int line_ = 1;
};

}  // namespace

std::vector<Token> tokenize(std::string_view source) { return Lexer(source).run(); }

}  // namespace graft::chat
