// Every stored real template x conversation renders byte-identical to the reference
// (@huggingface/jinja) output in tests/data/chat_templates/expected, or fails where it failed.
#include <chrono>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "chat_template/chat_template.hpp"

namespace graft::chat {
namespace {

namespace fs = std::filesystem;
const fs::path kData = fs::path(GRAFT_SOURCE_DIR) / "tests/data/chat_templates";
// The instant tools/chat_templates/render_expected.mjs pins for strftime_now(), in UTC.
const auto kFixedNow = std::chrono::system_clock::from_time_t(1721995200);  // 2024-07-26 12:00:00

RenderOptions fixed_clock() {
  setenv("TZ", "UTC", 1);
  tzset();
  RenderOptions opts;
  opts.now = [] { return kFixedNow; };
  return opts;
}

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

struct Case {
  std::string tpl;
  std::string name;
  friend void PrintTo(const Case& c, std::ostream* os) { *os << c.tpl << "__" << c.name; }
};

std::vector<Case> all_cases() {
  std::vector<Case> cases;
  for (const auto& entry : fs::directory_iterator(kData / "expected")) {
    std::string f = entry.path().filename().string();
    std::size_t sep = f.find("__");
    std::string rest = f.substr(sep + 2);
    rest = rest.substr(0, rest.find('.'));
    cases.push_back({f.substr(0, sep), rest});
  }
  std::sort(cases.begin(), cases.end(), [](const Case& a, const Case& b) { return a.tpl + a.name < b.tpl + b.name; });
  return cases;
}

class StoredTemplates : public ::testing::TestWithParam<Case> {};

TEST_P(StoredTemplates, MatchesReference) {
  const Case& c = GetParam();
  auto spec = nlohmann::ordered_json::parse(read_file(kData / "conversations.json"));
  nlohmann::ordered_json context = spec["tokens"][c.tpl];
  for (const auto& [k, v] : spec["cases"][c.name].items())
    if (k != "only" && k != "except" && k != "_comment") context[k] = v;

  auto parsed = ChatTemplate::parse(read_file(kData / (c.tpl + ".jinja")));
  ASSERT_TRUE(std::holds_alternative<ChatTemplate>(parsed)) << std::get<std::string>(parsed);
  RenderResult r = std::get<ChatTemplate>(parsed).render(context, fixed_clock());

  fs::path expected = kData / "expected" / (c.tpl + "__" + c.name + ".txt");
  fs::path expected_error = kData / "expected" / (c.tpl + "__" + c.name + ".error.txt");
  if (fs::exists(expected)) {
    ASSERT_TRUE(r.ok()) << r.error();
    EXPECT_EQ(r.text(), read_file(expected));
  } else {
    ASSERT_FALSE(r.ok()) << "expected an error like: " << read_file(expected_error) << "\ngot:\n" << r.text();
    // A message spelled out in the template is a raise_exception text: we must report it too.
    // Other reference errors are its own runtime wording, where only failing is required.
    std::string want = read_file(expected_error);
    std::string source = read_file(kData / (c.tpl + ".jinja"));
    if (source.find("'" + want + "'") != std::string::npos || source.find('"' + want + '"') != std::string::npos) {
      EXPECT_TRUE(r.error().ends_with(": " + want)) << r.error();
    }
  }
}

INSTANTIATE_TEST_SUITE_P(All, StoredTemplates, ::testing::ValuesIn(all_cases()), [](const auto& info) {
  std::string n = info.param.tpl + "__" + info.param.name;
  for (char& ch : n)
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return n;
});

TEST(StoredTemplates, AllTemplatesHaveExpectedOutputs) {
  int templates = 0;
  for (const auto& entry : fs::directory_iterator(kData))
    if (entry.path().extension() == ".jinja") ++templates;
  EXPECT_GE(templates, 5);
  EXPECT_GE(all_cases().size(), 7u * 8u);
}

}  // namespace
}  // namespace graft::chat

namespace graft::chat {
namespace {

// Cut-off templates must come back as one-line errors (or render), never crash or throw.
TEST(StoredTemplates, TruncatedTemplatesFailCleanly) {
  auto spec = nlohmann::ordered_json::parse(read_file(kData / "conversations.json"));
  nlohmann::ordered_json context = spec["cases"]["tools"];
  for (const auto& entry : fs::directory_iterator(kData)) {
    if (entry.path().extension() != ".jinja") continue;
    std::string source = read_file(entry.path());
    for (std::size_t len = 0; len < source.size(); len += 5) {
      auto parsed = ChatTemplate::parse(source.substr(0, len));
      if (auto* err = std::get_if<std::string>(&parsed)) {
        EXPECT_TRUE(err->starts_with("chat template line ")) << *err;
        EXPECT_EQ(err->find('\n'), std::string::npos) << *err;
        continue;
      }
      RenderResult r = std::get<ChatTemplate>(parsed).render(context);
      if (!r.ok()) {
        EXPECT_TRUE(r.error().starts_with("chat template line ")) << r.error();
      }
    }
  }
}

}  // namespace
}  // namespace graft::chat
