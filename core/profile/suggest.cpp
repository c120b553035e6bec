#include "profile/suggest.hpp"

#include <algorithm>
#include <cctype>
#include <vector>

namespace graft {

namespace {
char fold(char c) { return static_cast<char>(std::tolower(static_cast<unsigned char>(c))); }
}  // namespace

std::size_t edit_distance(std::string_view a, std::string_view b) {
  // Three rolling rows: the transposition rule looks two rows back.
  const std::size_t n = b.size();
  std::vector<std::size_t> prev2(n + 1), prev(n + 1), cur(n + 1);
  for (std::size_t j = 0; j <= n; ++j) prev[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (std::size_t j = 1; j <= n; ++j) {
      const std::size_t cost = fold(a[i - 1]) == fold(b[j - 1]) ? 0 : 1;
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost});
      if (i > 1 && j > 1 && fold(a[i - 1]) == fold(b[j - 2]) && fold(a[i - 2]) == fold(b[j - 1]))
        cur[j] = std::min(cur[j], prev2[j - 2] + 1);
    }
    std::swap(prev2, prev);
    std::swap(prev, cur);
  }
  return prev[n];
}

std::optional<std::string> closest_match(std::string_view word, std::span<const std::string> candidates) {
  const std::size_t reach = word.size() <= 3 ? 1 : word.size() <= 6 ? 2 : 3;
  std::optional<std::string> best;
  std::size_t best_distance = reach + 1;
  for (const auto& c : candidates) {
    const std::size_t d = edit_distance(word, c);
    // A distance equal to the candidate's length means nothing in common: not a typo.
    if (d < best_distance && d < c.size()) {
      best_distance = d;
      best = c;
    }
  }
  return best;
}

std::string join_names(std::span<const std::string> names, std::string_view separator) {
  std::string out;
  for (const auto& n : names) {
    if (!out.empty()) out += separator;
    out += n;
  }
  return out;
}

}  // namespace graft
