// "did you mean ...?" for misspelled names: the closest candidate by edit distance, when it is
// close enough to be a plausible typo rather than a different word.
#pragma once

#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace graft {

// Optimal-string-alignment distance (Levenshtein plus adjacent transpositions), ASCII case
// folded: "Temprature" and "temperature" are 1 apart.
std::size_t edit_distance(std::string_view a, std::string_view b);

// The candidate closest to `word`, or nothing when none is within a typo's reach (1 edit for
// names up to 3 characters, 2 up to 6, 3 beyond: "sampler" finds "sampling").
std::optional<std::string> closest_match(std::string_view word, std::span<const std::string> candidates);

// "a, b, c": for "valid keys: ..." lists.
std::string join_names(std::span<const std::string> names, std::string_view separator = ", ");

}  // namespace graft
