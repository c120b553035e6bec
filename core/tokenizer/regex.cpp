#define PCRE2_CODE_UNIT_WIDTH 8
#include "tokenizer/regex.hpp"

#include <pcre2.h>

#include <mutex>
#include <unordered_map>

#include "tokenizer/unicode.hpp"

namespace graft {

struct Regex::Code {
  pcre2_code* code = nullptr;
  ~Code() { pcre2_code_free(code); }
};

namespace {

std::string pcre2_message(int code) {
  PCRE2_UCHAR buf[256];
  const int n = pcre2_get_error_message(code, buf, sizeof buf);
  return n < 0 ? "PCRE2 error " + std::to_string(code) : std::string(reinterpret_cast<const char*>(buf));
}

}  // namespace

Expected<Regex> Regex::compile(std::string_view pattern) {
  // Compiling the pre-tokenizer patterns (large Unicode classes) costs milliseconds; every
  // tokenizer with the same pre-type shares one compiled copy.
  static std::mutex mu;
  static std::unordered_map<std::string, std::shared_ptr<const Code>> cache;

  Regex re;
  re.pattern_ = std::make_shared<const std::string>(pattern);
  std::lock_guard<std::mutex> lock(mu);
  if (auto it = cache.find(*re.pattern_); it != cache.end()) {
    re.code_ = it->second;
    return re;
  }
  int err = 0;
  PCRE2_SIZE err_off = 0;
  pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                                   PCRE2_UTF | PCRE2_UCP | PCRE2_MATCH_INVALID_UTF, &err, &err_off, nullptr);
  if (!code) {
    return Status(Errc::invalid_argument, "bad pre-tokenizer regex at offset " + std::to_string(err_off) + ": " +
                                              pcre2_message(err) + " in '" + std::string(pattern) + "'");
  }
  // JIT is an optimisation only: when unavailable the interpreter gives the same matches.
  (void)pcre2_jit_compile(code, PCRE2_JIT_COMPLETE);
  auto shared = std::make_shared<Code>();
  shared->code = code;
  re.code_ = shared;
  cache.emplace(*re.pattern_, shared);
  return re;
}

Regex::Matcher::Matcher(const Regex& re) : re_(re) {
  match_data_ = pcre2_match_data_create_from_pattern(re.code_->code, nullptr);
}

Regex::Matcher::~Matcher() { pcre2_match_data_free(static_cast<pcre2_match_data*>(match_data_)); }

Status Regex::Matcher::for_each(std::string_view subject,
                                const std::function<void(std::size_t, std::size_t)>& on_match) {
  auto* md = static_cast<pcre2_match_data*>(match_data_);
  if (!md) return Status(Errc::out_of_memory, "cannot allocate PCRE2 match data");
  const auto* s = reinterpret_cast<PCRE2_SPTR>(subject.data());
  std::size_t pos = 0;
  std::uint32_t extra = 0;  // PCRE2_NOTEMPTY_ATSTART | PCRE2_ANCHORED right after an empty match
  while (pos <= subject.size()) {
    int rc = pcre2_match(re_.code_->code, s, subject.size(), pos, extra, md, nullptr);
    if (rc == PCRE2_ERROR_JIT_STACKLIMIT) {
      // Very long runs can exhaust the JIT stack; the interpreter keeps its stack on the heap.
      rc = pcre2_match(re_.code_->code, s, subject.size(), pos, extra | PCRE2_NO_JIT, md, nullptr);
    }
    if (rc == PCRE2_ERROR_NOMATCH) {
      if (extra == 0) break;
      // No non-empty match where the empty one was: step over one character and search again.
      extra = 0;
      const std::size_t n = unicode::valid_prefix_len(subject.substr(pos));
      pos += n == 0 ? 1 : n;
      continue;
    }
    if (rc < 0) {
      return Status(Errc::internal, "pre-tokenizer regex failed (" + pcre2_message(rc) + ") for '" + re_.pattern() + "'");
    }
    const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(md);
    const std::size_t b = ov[0], e = ov[1];
    on_match(b, e);
    pos = e;
    extra = b == e ? (PCRE2_NOTEMPTY_ATSTART | PCRE2_ANCHORED) : 0;
  }
  return Status::success();
}

}  // namespace graft
