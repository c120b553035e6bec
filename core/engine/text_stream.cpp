#include "engine/text_stream.hpp"

#include <algorithm>

namespace graft {

TextStream::TextStream(const Tokenizer& tok, std::vector<std::string> stop_strings, std::vector<TokenId> shown)
    : tok_(tok), stop_(std::move(stop_strings)), shown_(std::move(shown)) {}

TextStream::Piece TextStream::push(TokenId id) {
  const bool shown = std::find(shown_.begin(), shown_.end(), id) != shown_.end();
  const StopResult r = stop_.push_token(tok_, id, shown);
  Piece piece{utf8_.push(r.text), r.stopped()};
  text_ += piece.text;
  return piece;
}

std::string TextStream::finish() {
  std::string tail = stop_.stopped() ? std::string() : utf8_.push(stop_.flush());
  tail += utf8_.flush();
  text_ += tail;
  return tail;
}

}  // namespace graft
