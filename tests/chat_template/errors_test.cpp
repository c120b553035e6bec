// Errors come back as exactly one line naming the place: "chat template line L, column C: ...".
#include "render_helpers.hpp"

namespace graft::chat {
namespace {

using testing::render;

TEST(ChatTemplateErrors, UnclosedBlock) {
  EXPECT_EQ(render("ok\n  {% if x %}never closed"), "ERROR: chat template line 2, column 6: unclosed 'if' block: missing {% endif %}");
  EXPECT_EQ(render("{% for m in ms %}x"), "ERROR: chat template line 1, column 4: unclosed 'for' block: missing {% endfor %}");
  EXPECT_EQ(render("a {{ x "), "ERROR: chat template line 1, column 3: unclosed expression: missing '}}'");
}

TEST(ChatTemplateErrors, UnknownFilterAndTest) {
  EXPECT_EQ(render("line\n{{ x | frobnicate }}"), "ERROR: chat template line 2, column 8: unknown filter 'frobnicate'");
  EXPECT_EQ(render("{{ x is frob }}"), "ERROR: chat template line 1, column 9: unknown test 'frob'");
  EXPECT_EQ(render("{% frob %}"), "ERROR: chat template line 1, column 4: unknown statement 'frob'");
}

TEST(ChatTemplateErrors, SyntaxError) {
  EXPECT_EQ(render("{{ 1 + }}"), "ERROR: chat template line 1, column 8: expected an expression, got '}}'");
  EXPECT_EQ(render("{{ 'abc }}"), "ERROR: chat template line 1, column 4: unterminated string literal");
  // An empty subscript (found by chat_template_fuzz: it was parsed into an index of nothing, which
  // the render then dereferenced).
  EXPECT_EQ(render("{{ x[] }}"), "ERROR: chat template line 1, column 6: expected an expression, got ']'");
  EXPECT_EQ(render("{{ a if m[]['k'] == 1 }}"), "ERROR: chat template line 1, column 11: expected an expression, got ']'");
}

TEST(ChatTemplateErrors, RaiseException) {
  EXPECT_EQ(render("a\n{% if true %}{{ raise_exception('Roles must alternate') }}{% endif %}"),
            "ERROR: chat template line 2, column 17: Roles must alternate");
}

TEST(ChatTemplateErrors, UndefinedCallableAndIteration) {
  EXPECT_EQ(render("{{ nope('x') }}"), "ERROR: chat template line 1, column 4: 'nope' is undefined and cannot be called");
  EXPECT_EQ(render("{{ m.fn() }}", {{"m", nlohmann::ordered_json::object()}}),
            "ERROR: chat template line 1, column 4: 'm.fn' is undefined and cannot be called");
  EXPECT_EQ(render("\n {% for x in items %}{% endfor %}"),
            "ERROR: chat template line 2, column 14: 'items' is undefined and cannot be iterated");
}

TEST(ChatTemplateErrors, TypeErrors) {
  EXPECT_EQ(render("{{ 'a' + 1 }}"), "ERROR: chat template line 1, column 8: unsupported operand types for +: string and int");
  EXPECT_EQ(render("{{ x + 'a' }}"), "ERROR: chat template line 1, column 6: 'x' is undefined");
}

TEST(ChatTemplateErrors, RenderNeverThrowsOnBadContext) {
  auto parsed = ChatTemplate::parse("{{ messages }}");
  RenderResult r = std::get<ChatTemplate>(parsed).render(nlohmann::ordered_json::array());
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.error(), "chat template: the context must be a JSON object");
}

}  // namespace
}  // namespace graft::chat

namespace graft::chat {
namespace {

TEST(ChatTemplateErrors, LimitsInsteadOfCrashes) {
  EXPECT_EQ(testing::render("{{ " + std::string(5000, '(') + "1" + std::string(5000, ')') + " }}").substr(0, 60),
            "ERROR: chat template line 1, column 87: template nested too ");
  EXPECT_TRUE(testing::render("{{ " + std::string(100000, '-') + "1 }}").starts_with("ERROR: chat template line 1,"));
  EXPECT_EQ(testing::render("{{ 9223372036854775807 + 1 }}"), "ERROR: chat template line 1, column 24: integer overflow");
  EXPECT_EQ(testing::render("{{ 2 ** 62 }} {{ (-2) ** 63 }} {{ 2 ** 0.5 }}"), "4611686018427387904 -9223372036854775808 1.4142135623730951");
  EXPECT_EQ(testing::render("{{ 2 ** 64 }}"), "ERROR: chat template line 1, column 6: integer overflow");
  EXPECT_EQ(testing::render("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}").substr(0, 40),
            "ERROR: chat template line 1, column 20: ");
  EXPECT_EQ(testing::render("{{ raise_exception('two\\nlines') }}"), "ERROR: chat template line 1, column 4: two\\nlines");
}

}  // namespace
}  // namespace graft::chat

namespace graft::chat {
namespace {

// A template from a downloaded file cannot make a render run or grow without bound: nested loops,
// a string doubled in a loop and a list doubled in a loop each end with one error line naming
// the budget (RenderOptions: 5M steps, 64 MiB by default; smaller here so the test is quick),
// while the same templates within the budget render.
TEST(ChatTemplateErrors, ABudgetBoundsStepsAndBytes) {
  const auto parsed = [](const std::string& source) { return std::get<ChatTemplate>(ChatTemplate::parse(source)); };
  RenderOptions small;
  small.max_steps = 100000;
  small.max_bytes = 1 << 20;
  const nlohmann::ordered_json none = nlohmann::ordered_json::object();
  // 1000^3 iterations of nothing: past any step budget, with no output at all.
  const RenderResult loops =
      parsed("{% for a in range(1000) %}{% for b in range(1000) %}{% for c in range(1000) %}{% endfor %}{% endfor %}{% endfor %}")
          .render(none, small);
  ASSERT_FALSE(loops.ok());
  EXPECT_EQ(loops.error().substr(loops.error().find(": ") + 2), "the template ran past its budget of 100000 evaluation steps");
  // A string doubled 30 times (1 GiB).
  const RenderResult doubled =
      parsed("{% set ns = namespace(s='x') %}{% for i in range(30) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}{{ ns.s | length }}")
          .render(none, small);
  ASSERT_FALSE(doubled.ok());
  EXPECT_EQ(doubled.error().substr(doubled.error().find(": ") + 2), "the template built a string past its budget of 1048576 bytes");
  const RenderResult list =
      parsed("{% set ns = namespace(l=[1]) %}{% for i in range(30) %}{% set ns.l = ns.l + ns.l %}{% endfor %}{{ ns.l | length }}")
          .render(none, small);
  ASSERT_FALSE(list.ok());
  EXPECT_EQ(list.error().substr(list.error().find(": ") + 2), "the template built a list past its budget of 65536 items");
  // Output past the budget, a piece at a time.
  const RenderResult output = parsed("{% set s = 'abcdefghij' * 100 %}{% for i in range(2000) %}{{ s }}{% endfor %}").render(none, small);
  ASSERT_FALSE(output.ok());
  EXPECT_EQ(output.error().substr(output.error().find(": ") + 2), "the template's output passed its budget of 1048576 bytes");
  // Within the budget: the same shapes, smaller.
  EXPECT_EQ(parsed("{% set ns = namespace(s='x') %}{% for i in range(10) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}{{ ns.s | length }}")
                .render(none, small)
                .text(),
            "1024");
  EXPECT_EQ(parsed("{% for a in range(10) %}{% for b in range(10) %}.{% endfor %}{% endfor %}").render(none, small).text(),
            std::string(100, '.'));
  // The defaults (docs/chat_templates.md).
  EXPECT_EQ(RenderOptions{}.max_steps, 5'000'000u);
  EXPECT_EQ(RenderOptions{}.max_bytes, std::size_t{64} << 20);
}

}  // namespace
}  // namespace graft::chat
