// docs/profiles.md documents every key of the schema with its type, default and range, so the
// page cannot drift from the code.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <sstream>

#include "profile/profile.hpp"
#include "profile/profile_schema.hpp"
#include "profile/profile_writer.hpp"

namespace graft {
namespace {

// The text from `heading` to the next "### " heading.
std::string block_after(const std::string& text, const std::string& heading) {
  const auto start = text.find(heading + "\n");
  if (start == std::string::npos) return {};
  const auto end = text.find("\n### ", start + heading.size());
  return text.substr(start, end == std::string::npos ? std::string::npos : end - start);
}

// "section.key" -> the default as the writer renders the built-in profile ("0.8", "\"cpu\"").
std::map<std::string, std::string> builtin_defaults() {
  std::map<std::string, std::string> out;
  std::istringstream lines(to_toml(Profile::builtin()));
  std::string line, section;
  while (std::getline(lines, line)) {
    if (line.rfind("[", 0) == 0) {
      section = line.substr(1, line.find(']') - 1);
      continue;
    }
    const auto eq = line.find(" = ");
    if (line.empty() || line[0] == '#' || eq == std::string::npos) continue;
    out[(section.empty() ? "" : section + ".") + line.substr(0, eq)] = line.substr(eq + 3, line.find("  #") - eq - 3);
  }
  return out;
}

TEST(profile_docs, EveryKeyIsDocumentedWithTypeDefaultAndRange) {
  std::ifstream in(std::filesystem::path(GRAFT_SOURCE_DIR) / "docs" / "profiles.md");
  ASSERT_TRUE(in) << "docs/profiles.md missing";
  std::stringstream s;
  s << in.rdbuf();
  const std::string doc = s.str();
  const auto defaults = builtin_defaults();

  for (const auto& section : schema::sections()) {
    const std::string heading = section.name.empty() ? "### Top level" : "### " + schema::table_header(section);
    const std::string block = block_after(doc, heading);
    ASSERT_FALSE(block.empty()) << heading;
    for (const auto& key : section.keys) {
      const std::string row_start = "| `" + std::string(key.key) + "` | " + schema::type_name(key) + " | ";
      const auto at = block.find(row_start);
      ASSERT_NE(at, std::string::npos) << heading << ": no row " << row_start;
      const std::string row = block.substr(at, block.find('\n', at) - at);
      const std::string range = schema::range_text(key.min, key.max);
      if (!range.empty()) {
        EXPECT_NE(row.find("| " + range + " |"), std::string::npos) << row;
      }
      if (key.non_empty) {
        EXPECT_NE(row.find("not empty"), std::string::npos) << row;
      }
      if (key.required) {
        EXPECT_NE(row.find("| required |"), std::string::npos) << row;
      } else if (auto d = defaults.find(schema::setting_name(section, key.key)); d != defaults.end()) {
        EXPECT_NE(row.find("| `" + d->second + "` |"), std::string::npos) << row << " (default " << d->second << ")";
      }
    }
  }
}

}  // namespace
}  // namespace graft
