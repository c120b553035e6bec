#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "profile/suggest.hpp"

namespace graft {
namespace {

TEST(profile_suggest, EditDistance) {
  EXPECT_EQ(edit_distance("", "abc"), 3u);
  EXPECT_EQ(edit_distance("kitten", "sitting"), 3u);
  EXPECT_EQ(edit_distance("top_k", "top_p"), 1u);
  EXPECT_EQ(edit_distance("tmeperature", "temperature"), 1u);  // a swap counts once
  EXPECT_EQ(edit_distance("Seed", "seed"), 0u);                // case folded
}

TEST(profile_suggest, ClosestMatchOnlyForPlausibleTypos) {
  const std::vector<std::string> keys{"temperature", "top_k", "top_p", "seed"};
  EXPECT_EQ(closest_match("temprature", keys), "temperature");
  EXPECT_EQ(closest_match("topk", keys), "top_k");
  EXPECT_EQ(closest_match("sed", keys), "seed");
  EXPECT_EQ(closest_match("banana", keys), std::nullopt);
  EXPECT_EQ(closest_match("x", std::vector<std::string>{"y"}), std::nullopt);  // nothing in common
  EXPECT_EQ(join_names(keys), "temperature, top_k, top_p, seed");
}

}  // namespace
}  // namespace graft
