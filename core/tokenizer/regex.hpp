// A compiled PCRE2 pattern with the options every pre-tokenizer needs: UTF-8, Unicode properties
// for \p{..}, \s, \d, \w (PCRE2_UCP), and matching that tolerates invalid UTF-8 input
// (PCRE2_MATCH_INVALID_UTF: invalid bytes never match and are left between matches). Compiled
// code is cached process-wide by pattern text and JIT-compiled when PCRE2 supports it.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "graft/status.hpp"

namespace graft {

class Regex {
 public:
  // Errors name the pattern and PCRE2's message with the offset.
  static Expected<Regex> compile(std::string_view pattern);

  const std::string& pattern() const { return *pattern_; }

  // A reusable matcher (owns PCRE2 match data); one per thread at a time.
  class Matcher {
   public:
    explicit Matcher(const Regex& re);
    ~Matcher();
    Matcher(const Matcher&) = delete;
    Matcher& operator=(const Matcher&) = delete;

    // Calls on_match(begin, end) for every successive match in `subject`, which is matched as a
    // string of its own (lookarounds and anchors do not see past its ends). Empty matches are
    // reported too, then the scan moves on one character.
    Status for_each(std::string_view subject, const std::function<void(std::size_t, std::size_t)>& on_match);

   private:
    const Regex& re_;
    void* match_data_ = nullptr;  // pcre2_match_data_8*
  };

 private:
  struct Code;
  std::shared_ptr<const Code> code_;
  std::shared_ptr<const std::string> pattern_;
};

}  // namespace graft
