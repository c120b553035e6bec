// The opt-in policy file (`[speculative] policy_file`, `--spec-policy`): one run writes what its
// round policy learnt, the next starts from it (its choices from the first round), a file for
// another model or drafter list or a corrupt one is not used and is replaced, and the output is
// plain greedy decoding's in every case.
#include <gtest/gtest.h>

#include <fstream>

#include "zoo_test_util.hpp"

namespace {

using namespace zoo;

std::unique_ptr<Drafters> with_file(const Pipeline& p, std::vector<PluginChoice> list, const fs::path& file) {
  SpeculativeSettings spec;
  spec.enabled = true;
  spec.policy_file = file;
  auto d = Drafters::load(p, std::move(list), spec);
  EXPECT_TRUE(d) << d.status().message();
  return d ? std::move(*d) : nullptr;
}

nlohmann::json read(const fs::path& f) {
  std::ifstream in(f);
  return nlohmann::json::parse(in, nullptr, false);
}

TEST(PolicyFile, ARunWritesItTheNextStartsFromItAndTheOutputNeverChanges) {
  auto p = pipeline("", "f32", nullptr);
  ASSERT_TRUE(p);
  const fs::path file = fs::path(::testing::TempDir()) / "graft-policy-test.json";
  fs::remove(file);
  const auto prompt = tokenize(*p, corpus()[0].second);
  const Generated plain = generate(*p, prompt, greedy(), 128, nullptr);

  auto set = with_file(*p, {drafter("ngram"), drafter("mtp")}, file);
  ASSERT_TRUE(set);
  auto first = set->new_decoder();
  ASSERT_TRUE(first);
  EXPECT_EQ((*first)->policy().rounds(), 0u);
  EXPECT_EQ(generate(*p, prompt, greedy(), 128, first->get()).ids, plain.ids);
  ASSERT_TRUE((*first)->save_policy().ok());
  const nlohmann::json written = read(file);
  ASSERT_TRUE(written.is_object());
  EXPECT_EQ(written["fits"]["drafters"], nlohmann::json({"ngram", "mtp"}));
  EXPECT_EQ(written["fits"]["model"], "zoo-qwen3-4x256.gguf");

  // The next decoder starts warm: the same learnt state, its choices from the first round.
  auto second = set->new_decoder();
  ASSERT_TRUE(second);
  EXPECT_GT((*second)->policy().rounds(), 0u);
  EXPECT_EQ((*second)->policy().to_json(), written["policy"]);
  EXPECT_EQ(generate(*p, prompt, greedy(), 128, second->get()).ids, plain.ids);

  // Another drafter list: not used (the policy starts from scratch), replaced at the end.
  auto other = with_file(*p, {drafter("ngram")}, file);
  ASSERT_TRUE(other);
  auto third = other->new_decoder();
  ASSERT_TRUE(third);
  EXPECT_EQ((*third)->policy().rounds(), 0u);
  EXPECT_EQ(generate(*p, prompt, greedy(), 128, third->get()).ids, plain.ids);
  ASSERT_TRUE((*third)->save_policy().ok());
  EXPECT_EQ(read(file)["fits"]["drafters"], nlohmann::json({"ngram"}));

  // A corrupt file: not used, replaced.
  for (const char* junk : {"{not json", "[]", "{\"fits\": 1}"}) {
    std::ofstream(file) << junk;
    auto fourth = other->new_decoder();
    ASSERT_TRUE(fourth);
    EXPECT_EQ((*fourth)->policy().rounds(), 0u) << junk;
    EXPECT_EQ(generate(*p, prompt, greedy(), 128, fourth->get()).ids, plain.ids) << junk;
    ASSERT_TRUE((*fourth)->save_policy().ok());
    EXPECT_TRUE(read(file).is_object()) << junk;
  }
  fs::remove(file);
}

// Server slots share what they learnt: a fresh decoder takes over an experienced one's policy (the
// same state, choices from its first round) and still generates exactly plain greedy decoding's
// ids; the experienced one does not take over the fresher one's.
TEST(PolicyFile, AFreshSequenceTakesOverAnExperiencedOnesPolicy) {
  auto p = pipeline("", "f32", nullptr);
  ASSERT_TRUE(p);
  const auto prompt = tokenize(*p, corpus()[1].second);
  const Generated plain = generate(*p, prompt, greedy(), 96, nullptr);
  SpeculativeSettings spec;
  spec.enabled = true;
  auto set = Drafters::load(*p, {drafter("ngram"), drafter("mtp")}, spec);
  ASSERT_TRUE(set) << set.status().message();
  auto slot0 = (*set)->new_decoder(), slot1 = (*set)->new_decoder();
  ASSERT_TRUE(slot0 && slot1);
  EXPECT_FALSE((*slot1)->adopt_policy(**slot0));  // nothing learnt yet on either side
  EXPECT_EQ(generate(*p, prompt, greedy(), 96, slot0->get()).ids, plain.ids);
  const std::uint64_t learnt = (*slot0)->policy().learnt_rounds();
  ASSERT_GE(learnt, 16u);
  ASSERT_TRUE((*slot1)->adopt_policy(**slot0));
  EXPECT_EQ((*slot1)->policy().to_json(), (*slot0)->policy().to_json());
  EXPECT_EQ((*slot1)->policy().learnt_rounds(), learnt);
  EXPECT_FALSE((*slot0)->adopt_policy(**slot1));
  EXPECT_EQ(generate(*p, prompt, greedy(), 96, slot1->get()).ids, plain.ids);
  EXPECT_GT((*slot1)->policy().learnt_rounds(), learnt);
}

}  // namespace
