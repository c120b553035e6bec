// The language pieces, each against a hand-written expected string.
#include "chat_template/value.hpp"
#include "render_helpers.hpp"

namespace graft::chat {
namespace {

using testing::render;
using json = nlohmann::ordered_json;

TEST(ChatTemplateLanguage, TextAndOutput) {
  EXPECT_EQ(render("Hello {{ name }}!", {{"name", "Ann"}}), "Hello Ann!");
  EXPECT_EQ(render("{{ missing }}|{{ missing.attr }}|{{ missing['k'] }}"), "||");
  EXPECT_EQ(render("{{ none }} {{ true }} {{ 1.5 }} {{ 2.0 }} {{ 10 }}"), "None True 1.5 2.0 10");
  EXPECT_EQ(render("{{ [1, 'a', none] }} {{ {'k': 'v'} }}"), "[1, 'a', None] {'k': 'v'}");
  EXPECT_EQ(render("{# comment #}x"), "x");
  EXPECT_EQ(render("a\n"), "a");  // one trailing newline dropped, as jinja2
}

TEST(ChatTemplateLanguage, WhitespaceControl) {
  EXPECT_EQ(render("a  {{- 'b' -}}  c"), "abc");
  EXPECT_EQ(render("a\n  {%- if true %}b{% endif %}"), "ab");
  // trim_blocks: the newline after a block tag goes; lstrip_blocks: indentation before it goes.
  EXPECT_EQ(render("{% if true %}\n    x\n    {% endif %}\n  y"), "    x\n  y");
  EXPECT_EQ(render("  {# c #}\nz"), "z");
  EXPECT_EQ(render("  {%+ if true %}k{% endif %}"), "  k");
  EXPECT_EQ(render("  {{ 'v' }}\n"), "  v");
  EXPECT_EQ(render("x {% if true %}y{% endif %}"), "x y");  // not at a line start: kept
}

TEST(ChatTemplateLanguage, IfElifElse) {
  const char* t = "{% if n > 2 %}big{% elif n == 2 %}two{% else %}small{% endif %}";
  EXPECT_EQ(render(t, {{"n", 3}}), "big");
  EXPECT_EQ(render(t, {{"n", 2}}), "two");
  EXPECT_EQ(render(t, {{"n", 1}}), "small");
}

TEST(ChatTemplateLanguage, ForLoop) {
  json ctx = {{"xs", {"a", "b", "c"}}};
  EXPECT_EQ(render("{% for x in xs %}{{ loop.index }}{{ x }}{{ loop.index0 }}{{ loop.first }}{{ loop.last }}{{ loop.length }}{{ loop.revindex }};{% endfor %}", ctx),
            "1a0TrueFalse33;2b1FalseFalse32;3c2FalseTrue31;");
  EXPECT_EQ(render("{% for x in xs %}{{ loop.previtem }}>{{ x }}>{{ loop.nextitem }} {% endfor %}", ctx), ">a>b a>b>c b>c> ");
  EXPECT_EQ(render("{% for x in xs if x != 'b' %}{{ x }}{{ loop.length }}{% endfor %}", ctx), "a2c2");
  EXPECT_EQ(render("{% for x in [] %}x{% else %}empty{% endfor %}"), "empty");
  EXPECT_EQ(render("{% for k, v in {'a': 1, 'b': 2}.items() %}{{ k }}={{ v }},{% endfor %}"), "a=1,b=2,");
  EXPECT_EQ(render("{% for k in {'z': 1, 'a': 2} %}{{ k }}{% endfor %}"), "za");
  EXPECT_EQ(render("{% for x in xs %}{% if x == 'b' %}{% break %}{% endif %}{{ x }}{% endfor %}", ctx), "a");
  EXPECT_EQ(render("{% for x in xs %}{% if x == 'b' %}{% continue %}{% endif %}{{ x }}{% endfor %}", ctx), "ac");
  // set inside a loop does not leak out; namespace attributes do.
  EXPECT_EQ(render("{% set y = 0 %}{% set ns = namespace(y=0) %}{% for x in xs %}{% set y = y + 1 %}{% set ns.y = ns.y + 1 %}{% endfor %}{{ y }}{{ ns.y }}", ctx), "03");
}

TEST(ChatTemplateLanguage, Set) {
  EXPECT_EQ(render("{% set a, b = 1, 2 %}{{ a }}{{ b }}"), "12");
  EXPECT_EQ(render("{% set s %}block {{ 1 + 1 }}{% endset %}[{{ s }}]"), "[block 2]");
  EXPECT_EQ(render("{% set ns = namespace() %}{% set ns.x = 'v' %}{{ ns.x }}"), "v");
}

TEST(ChatTemplateLanguage, MacrosAndCall) {
  EXPECT_EQ(render("{% macro greet(who, punct='!') %}Hi {{ who }}{{ punct }}{% endmacro %}{{ greet('Bo') }} {{ greet('Al', punct='?') }}"),
            "Hi Bo! Hi Al?");
  EXPECT_EQ(render("{% macro wrap() %}<{{ caller() }}>{% endmacro %}{% call wrap() %}inner{% endcall %}"), "<inner>");
  EXPECT_EQ(render("{% filter upper %}abc{% endfilter %}"), "ABC");
}

TEST(ChatTemplateLanguage, Operators) {
  EXPECT_EQ(render("{{ 1 + 2 * 3 }} {{ (1 + 2) * 3 }} {{ 7 // 2 }} {{ -7 // 2 }} {{ 7 % 3 }} {{ 2 ** 10 }} {{ 7 / 2 }}"),
            "7 9 3 -4 1 1024 3.5");
  EXPECT_EQ(render("{{ 'a' ~ 1 ~ none }} {{ 'a' + 'b' }} {{ [1] + [2] }} {{ 'ab' * 2 }}"), "a1None ab [1, 2] abab");
  EXPECT_EQ(render("{{ 1 < 2 and 'x' or 'y' }} {{ not 1 }} {{ 0 or 'z' }}"), "x False z");
  EXPECT_EQ(render("{{ 'b' in 'abc' }} {{ 2 in [1, 2] }} {{ 'k' in {'k': 1} }} {{ 'q' not in 'abc' }}"), "True True True True");
  EXPECT_EQ(render("{{ 'yes' if 1 else 'no' }}{{ 'x' if false }}"), "yes");
  EXPECT_EQ(render("{{ {'a': [1, 2]} == {'a': [1, 2]} }} {{ 1 == 1.0 }} {{ 'a' != 'b' }}"), "True True True");
  EXPECT_EQ(render("{{ -3 | abs }} {{ 'abc' < 'abd' }}"), "3 True");
}

TEST(ChatTemplateLanguage, LiteralsAndAccess) {
  EXPECT_EQ(render(R"({{ 'it\'s\n' }}{{ "tab\there" }}{{ '\u00e9' }})"), "it's\ntab\there\xC3\xA9");
  json ctx = {{"m", {{"role", "user"}, {"list", {1, 2, 3, 4}}}}};
  EXPECT_EQ(render("{{ m.role }} {{ m['role'] }} {{ m.list[0] }} {{ m.list[-1] }} {{ m.list.1 }}", ctx), "user user 1 4 2");
  EXPECT_EQ(render("{{ m.list[::-1] }} {{ m.list[1:] }} {{ m.list[:-1] }} {{ m.list[::2] }} {{ 'héllo'[1:3] }} {{ 'abc'[-1] }}", ctx),
            "[4, 3, 2, 1] [2, 3, 4] [1, 2, 3] [1, 3] él c");
  EXPECT_EQ(render("{{ (1, 2) }} {{ [] }} {{ 1e3 }} {{ 0.1 + 0.2 }}"), "[1, 2] [] 1000.0 0.30000000000000004");
}

TEST(ChatTemplateLanguage, Tests) {
  json ctx = {{"s", "x"}, {"n", 1}, {"f", 1.5}, {"d", json::object()}, {"l", json::array()}, {"z", nullptr}, {"t", true}};
  EXPECT_EQ(render("{{ s is defined }}{{ q is undefined }}{{ z is none }}{{ s is string }}{{ n is number }}{{ f is number }}", ctx),
            "TrueTrueTrueTrueTrueTrue");
  EXPECT_EQ(render("{{ d is mapping }}{{ l is iterable }}{{ s is iterable }}{{ l is sequence }}{{ t is true }}{{ t is false }}", ctx),
            "TrueTrueTrueTrueTrueFalse");
  EXPECT_EQ(render("{{ n is not none }}{{ 4 is divisibleby 2 }}{{ 3 is odd }}{{ n is equalto 1 }}{{ not s is defined }}", ctx),
            "TrueTrueTrueTrueFalse");
}

TEST(ChatTemplateLanguage, Filters) {
  EXPECT_EQ(render("{{ '  x  ' | trim }}|{{ [1,2] | length }}|{{ 'ab' | count }}|{{ 'Ab' | upper }}{{ 'Ab' | lower }}"), "x|2|2|ABab");
  EXPECT_EQ(render("{{ [1, 2] | join(', ') }}|{{ 'aXbX' | replace('X', '-') }}|{{ x | default('d') }}|{{ '' | d('e', true) }}"),
            "1, 2|a-b-|d|e");
  EXPECT_EQ(render("{{ [3, 1, 2] | first }}{{ [3, 1, 2] | last }}{{ [3, 1, 2] | sort | list }}{{ [1, 1, 2] | unique | list }}"),
            "32[1, 2, 3][1, 2]");
  json ctx = {{"ms", {{{"role", "user"}, {"c", 1}}, {{"role", "bot"}, {"c", 2}}, {{"role", "user"}, {"c", 3}}}}};
  EXPECT_EQ(render("{{ ms | map(attribute='c') | list }} {{ ms | selectattr('role', 'equalto', 'user') | map(attribute='c') | join }} {{ ms | rejectattr('role', 'equalto', 'user') | list | length }}", ctx),
            "[1, 2, 3] 13 1");
  EXPECT_EQ(render("{{ {'a': 1} | items | list }} {{ 'hello world' | capitalize }} {{ 'hello world' | title }}"),
            "[['a', 1]] Hello world Hello World");
  EXPECT_EQ(render("{{ 'a\nb' | indent(2) }}|{{ 'a\nb' | indent(2, true) }}"), "a\n  b|  a\n  b");
  EXPECT_EQ(render("{{ '3' | int + 1 }} {{ '2.5' | float }} {{ 2.567 | round(2) }} {{ 3 | string + 'x' }} {{ 'a' | safe }}"),
            "4 2.5 2.57 3x a");
  EXPECT_EQ(render("{{ ['b', 'a'] | map('upper') | list }} {{ [0, 1, 2] | select('odd') | list }}"), "['B', 'A'] [1]");
}

TEST(ChatTemplateLanguage, ToJson) {
  json ctx = {{"v", {{"z", 1}, {"a", {true, nullptr, 1.5, "é\"\n"}}, {"e", json::object()}}}};
  EXPECT_EQ(render("{{ v | tojson }}", ctx), R"({"z": 1, "a": [true, null, 1.5, "é\"\n"], "e": {}})");
  EXPECT_EQ(render("{{ v | tojson(indent=2) }}", ctx),
            "{\n  \"z\": 1,\n  \"a\": [\n    true,\n    null,\n    1.5,\n    \"é\\\"\\n\"\n  ],\n  \"e\": {}\n}");
  EXPECT_EQ(render("{{ '<tag>' | tojson }}"), "\"<tag>\"");
}

TEST(ChatTemplateLanguage, Methods) {
  EXPECT_EQ(render("{{ '  a b  '.strip() }}|{{ 'xxaxx'.lstrip('x') }}|{{ 'xxaxx'.rstrip('x') }}|{{ 'a,b,,c'.split(',') }}|{{ ' a  b '.split() }}"),
            "a b|axx|xxa|['a', 'b', '', 'c']|['a', 'b']");
  EXPECT_EQ(render("{{ 'abc'.startswith('ab') }}{{ 'abc'.endswith(('x', 'c')) }}{{ 'aB'.upper() }}{{ 'aB'.lower() }}{{ 'a-a'.replace('a', 'b') }}{{ 'ab cd'.title() }}"),
            "TrueTrueABabb-bAb Cd");
  json ctx = {{"d", {{"k", "v"}, {"n", 1}}}};
  EXPECT_EQ(render("{{ d.keys() | list }}{{ d.values() | list }}{{ d.items() | list }}{{ d.get('k') }}{{ d.get('x', 'dflt') }}{{ d.get('x') }}", ctx),
            "['k', 'n']['v', 1][['k', 'v'], ['n', 1]]vdfltNone");
  EXPECT_EQ(render("{{ '</think>'.join(['a', 'b']) }} {{ 'a</think>b'.split('</think>')[-1] }}"), "a</think>b b");
}

TEST(ChatTemplateLanguage, StrftimeNowUsesInjectedClock) {
  setenv("TZ", "UTC", 1);
  tzset();
  RenderOptions opts;
  opts.now = [] { return std::chrono::system_clock::from_time_t(1721952000); };  // 2024-07-26 00:00 UTC
  EXPECT_EQ(render("{{ strftime_now('%d %b %Y') }}", json::object(), opts), "26 Jul 2024");
}

TEST(ChatTemplateLanguage, RangeAndGenerationBlock) {
  EXPECT_EQ(render("{% for i in range(3) %}{{ i }}{% endfor %}{{ range(1, 7, 2) | list }}"), "012[1, 3, 5]");
  EXPECT_EQ(render("{% generation %}gen{% endgeneration %}"), "gen");
}

}  // namespace
}  // namespace graft::chat

// Reference cycles a template makes (a namespace holding itself, a list appended to itself) are
// freed when the render ends (found by chat_template_fuzz under LeakSanitizer: shared_ptr alone
// never frees a cycle). A sentinel held by a value inside each cycle shows whether it was freed.
TEST(ChatTemplateValues, ARenderArenaFreesReferenceCycles) {
  using namespace graft::chat;
  auto sentinel = std::make_shared<int>(0);
  const auto holder = [&] {
    return Value(std::make_shared<Callable>(Callable{"f", [sentinel](const CallArgs&) { return Value(); }}));
  };
  {
    ContainerArena arena;
    Value d = Value::new_dict();
    d.as_dict().set("me", d);
    d.as_dict().set("held", holder());
    Value l = Value(List{});
    l.as_list().push_back(l);
    l.as_list().push_back(holder());
    EXPECT_EQ(sentinel.use_count(), 3);
  }
  EXPECT_EQ(sentinel.use_count(), 1) << "a cycle outlived its arena";
  // And through a render: a namespace that holds itself renders as jinja2 renders it.
  EXPECT_EQ(render("{% set ns = namespace(a=1) %}{% set ns.me = ns %}{{ ns.a }}"), "1");
}
