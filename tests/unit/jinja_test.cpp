// Each construct rendered by Ember vs the string python jinja2 3.1 printed for it (with
// trim_blocks, lstrip_blocks and Hugging Face's tojson), pasted as literals.
#include <gtest/gtest.h>

#include "genai/jinja/template.h"

namespace ember::genai::jinja {
namespace {

std::string render(const std::string& source) {
  auto t = Template::parse(source);
  if (!t.is_ok()) return "PARSE ERROR: " + t.status().to_string();
  auto r = t->render({});
  return r.is_ok() ? *r : "RENDER ERROR: " + r.status().to_string();
}

std::string error_of(const std::string& source) {
  auto t = Template::parse(source);
  if (!t.is_ok()) return t.status().message();
  auto r = t->render({});
  return r.is_ok() ? "" : r.status().message();
}

TEST(Jinja, ConstructsMatchJinja2) {
  EXPECT_EQ(render("{% for x in [1,2,3] if x != 2 %}{{ loop.index }}/{{ loop.length }}:{{ x }}{% if not loop.last %},{% endif %}{% else %}none{% endfor %}"),
            "1/2:1,2/2:3");
  EXPECT_EQ(render("{% for k, v in {'a': 1, 'b': [2, 'x']}.items() %}{{ k }}={{ v }};{% endfor %}"),
            "a=1;b=[2, 'x'];");
  EXPECT_EQ(render("{% set ns = namespace(n=0) %}{% for i in range(5) %}{% if i == 3 %}{% break %}{% endif %}{% set ns.n = ns.n + i %}{% endfor %}{{ ns.n }}"),
            "3");
  EXPECT_EQ(render("{% macro greet(name, punct='!') %}Hi {{ name }}{{ punct }}{% endmacro %}{{ greet('Ann') }} {{ greet('Bo', punct='?') }}"),
            "Hi Ann! Hi Bo?");
  EXPECT_EQ(render("{{ 'a,b,,c'.split(',') }} {{ '  x y  '.strip() }}|{{ 'xxhixx'.strip('x') }} {{ 'abc'[::-1] }} {{ [1,2,3,4][1:3] }}"),
            "['a', 'b', '', 'c'] x y|hi cba [2, 3]");
  EXPECT_EQ(render("{{ 7 // 2 }} {{ -7 % 3 }} {{ 7 / 2 }} {{ 2 ** 10 }} {{ 1 ~ 'a' ~ none }} {{ 0.1 + 0.2 }} {{ 1e20 }}"),
            "3 2 3.5 1024 1aNone 0.30000000000000004 1e+20");
  EXPECT_EQ(render("{{ {'b': 'é', 'a': [1, 2.5, none, true]} | tojson }} {{ {'k': [1]} | tojson(indent=2) }}"),
            "{\"b\": \"é\", \"a\": [1, 2.5, null, true]} {\n  \"k\": [\n    1\n  ]\n}");
  EXPECT_EQ(render("{{ x | default('d') }} {{ '' | default('e', true) }} {{ [3,1,2] | sort | join('-') }} {{ ['a','B','b'] | unique | list }}"),
            "d e 1-2-3 ['a', 'B']");
  EXPECT_EQ(render("{{ [{'n': 'a', 'on': true}, {'n': 'b', 'on': false}] | selectattr('on') | map(attribute='n') | list }} {{ [1,2,3,4] | select('even') | list }} {{ [1,none] | reject('none') | list }}"),
            "['a'] [2, 4] [1]");
  EXPECT_EQ(render("{{ 'hello world' | title }} {{ 'hELLO' | capitalize }} {{ 'ab' | upper }} {{ 'a\nb' | indent(2, first=true) }} {{ 3 is odd }} {{ 'x' is string }} {{ {} is mapping }} {{ y is defined }}"),
            "Hello World Hello AB   a\n  b True True True False");
  EXPECT_EQ(render("{%- if true -%}\n  A  \n{%- endif %}\n  {% if true %}\n    B\n  {% endif %}\n{# c #}\nC {{ 'x' }}\n"),
            "A    B\nC x");
  EXPECT_EQ(render("{% set t %}  inner {{ 1 + 1 }} {% endset %}[{{ t | trim }}]{% filter upper %}up{% endfilter %}"),
            "[inner 2]UP");
  EXPECT_EQ(render("{{ 'yes' if 3 in [1,2,3] else 'no' }} {{ 'b' not in 'abc' }} {{ [1,2] == [1,2] }} {{ 1 == 1.0 }} {{ none is none }} {{ 'x' ~ (1 if false) ~ 'y' }}"),
            "yes False True True True xy");
  EXPECT_EQ(render("{% set d = {'b': 2, 'a': 1} %}{{ '{}-{name}'.format(1, name='n') }} {{ d.get('a') }} {{ d.get('z', 0) }} {{ d.keys() | list }} {% for k, v in d | dictsort %}{{ k }}{{ v }}{% endfor %} {{ d | length }}"),
            "1-n 1 0 ['b', 'a'] a1b2 2");
}

// Python object behaviour real templates rely on: markupsafe.Markup from |safe (Markup + str
// escapes the str: functionary v3.1), generators from map/select (always true, no len,
// not JSON: llama.cpp's DeepSeek-R1 template), non-string dict keys (Seed-OSS), tojson's
// json.dumps options (Reka-Edge), and unknown filters tolerated in if branches (DeepSeek-V3.2).
TEST(Jinja, PythonObjectSemanticsMatchJinja2) {
  EXPECT_EQ(render("{{ '<b>'|safe + '<i>' + \"'&\" }} {{ 'x' + 'y'|safe }} {{ '<a>'|safe ~ '<b>' }} {{ '<'|e }} {{ '<'|e|e }}"),
            "<b>&lt;i&gt;&#39;&amp; xy <a><b> &lt; &lt;");
  EXPECT_EQ(render("{{ {'u': 'Zü😀', 'n': [1]} | tojson(ensure_ascii=True) }} {{ {'a': 1, 'b': [1, 2]} | tojson(separators=(',', ':')) }} {{ {'b': 1, 'a': 2} | tojson(sort_keys=true) }}"),
            R"({"u": "Z\u00fc\ud83d\ude00", "n": [1]} {"a":1,"b":[1,2]} {"a": 2, "b": 1})");
  EXPECT_EQ(render("{% set g = [1, 2] | select('odd') %}{{ 'T' if g else 'F' }} {{ [] | map('upper') | list }} {{ none | selectattr('x') | list }} {{ ([1, 2] | map('string'))[0] is defined }} {{ [1] | map('string') is sequence }}"),
            "T [] [] False False");
  EXPECT_EQ(render("{% set d = {0: 'zero', 512: 'half', 'k': 1.5} %}{{ d[512] }} {{ d.get(0) }} {{ 512 in d }} {{ d | tojson }} {{ d }} {% for k, v in {2: 'b', 1: 'a'} | dictsort %}{{ k + 1 }}{{ v }}{% endfor %}"),
            R"(half zero True {"0": "zero", "512": "half", "k": 1.5} {0: 'zero', 512: 'half', 'k': 1.5} 2a3b)");
  EXPECT_EQ(render("{{ 'c' in undefined_var }} {% if false %}{{ x | no_such_filter }}{% endif %}{{ 'ok' if true else (x | no_such_filter) }}"),
            "False ok");
  EXPECT_EQ(error_of("{{ [1] | map('string') | length }}"), "template line 1, column 26: object of type 'generator' has no len()");
  EXPECT_EQ(error_of("{{ [1] | select | tojson }}"), "template line 1, column 19: Object of type generator is not JSON serializable");
  EXPECT_EQ(error_of("{{ [1] | select | last }}"), "template line 1, column 19: 'generator' object is not reversible");
  EXPECT_NE(error_of("{{ [1] + ([2] | select) }}"), "");
  // Inside an if branch the unknown filter fails when reached; a loop in the branch is checked at parse time.
  EXPECT_EQ(error_of("{% if true %}{{ x | no_such_filter }}{% endif %}"), "template line 1, column 21: No filter named 'no_such_filter'.");
  EXPECT_EQ(error_of("{% if true %}{% for i in [1] %}{{ i | no_such_filter }}{% endfor %}{% endif %}"),
            "template line 1, column 39: No filter named 'no_such_filter'.");
}

TEST(Jinja, ErrorsNameLineAndColumn) {
  EXPECT_EQ(error_of("a\n{{ x | nosuch }}"), "template line 2, column 8: No filter named 'nosuch'.");
  EXPECT_EQ(error_of("{% if true %}open"), "template line 1, column 18: unexpected end of template: expected 'endif' to close the block");
  EXPECT_EQ(error_of("x\n  {{ raise_exception('bad role') }}"), "template line 2, column 21: bad role");
  EXPECT_EQ(error_of("{{ 'a' "), "template line 1, column 1: unexpected end of template: unterminated '{{' expression");
  EXPECT_EQ(error_of("{{ x.y }}"), "template line 1, column 5: cannot read attribute 'y' of an undefined value");
}

// jinja2 stops at Python's recursion limit; Ember at 256 levels, with an error
// rather than a stack overflow, whichever way the nesting is written.
TEST(Jinja, NestingIsBoundedWithAnError) {
  const auto repeat = [](const std::string& s, int n) {
    std::string out;
    for (int i = 0; i < n; ++i) out += s;
    return out;
  };
  const auto contains = [](const std::string& text, const std::string& part) {
    return text.find(part) != std::string::npos;
  };
  const std::string too_deep = "nests blocks or expressions more than 256 deep";
  // The template's body and the {{ }} expression are two levels: 254 more fit, 255 do not.
  EXPECT_EQ(render("{{ " + repeat("(", 254) + "7" + repeat(")", 254) + " }}"), "7");
  EXPECT_PRED2(contains, error_of("{{ " + repeat("(", 255) + "7" + repeat(")", 255) + " }}"), too_deep);
  EXPECT_EQ(render("{{ " + repeat("[", 254) + "7" + repeat("]", 254) + " | length }}"), "1");
  EXPECT_PRED2(contains, error_of("{{ " + repeat("[", 255) + "7" + repeat("]", 255) + " }}"), too_deep);
  EXPECT_EQ(render(repeat("{% if true %}", 200) + "x" + repeat("{% endif %}", 200)), "x");
  EXPECT_EQ(render("{{ " + repeat("1 + ", 200) + "1 }}"), "201");
  // Far deeper, each way of nesting: recursion (parentheses, lists, calls, blocks,
  // not, unary minus, conditionals' else) and chains built in a loop (operators,
  // subscripts, filters, conditionals without else).
  EXPECT_PRED2(contains, error_of("{{ " + repeat("(", 100000) + "7" + repeat(")", 100000) + " }}"), too_deep);
  EXPECT_PRED2(contains, error_of("{{ " + repeat("[", 100000) + "7" + repeat("]", 100000) + " }}"), too_deep);
  EXPECT_PRED2(contains, error_of("{{ " + repeat("f(", 100000) + "7" + repeat(")", 100000) + " }}"), too_deep);
  EXPECT_PRED2(contains, error_of(repeat("{% if true %}", 100000) + "x" + repeat("{% endif %}", 100000)), too_deep);
  EXPECT_PRED2(contains, error_of("{{ " + repeat("not ", 100000) + "1 }}"), too_deep);
  EXPECT_PRED2(contains, error_of("{{ " + repeat("-", 100000) + "1 }}"), too_deep);
  EXPECT_PRED2(contains, error_of("{{ 1" + repeat(" if true else 2", 100000) + " }}"), too_deep);
  EXPECT_PRED2(contains, error_of("{{ " + repeat("1 + ", 1000) + "1 }}"), too_deep);
  EXPECT_PRED2(contains, error_of("{{ x" + repeat("[0]", 1000) + " }}"), too_deep);
  EXPECT_PRED2(contains, error_of("{{ 'a'" + repeat(" | upper", 1000) + " }}"), too_deep);
  EXPECT_PRED2(contains, error_of("{{ 1" + repeat(" if true", 1000) + " }}"), too_deep);
  EXPECT_PRED2(contains, error_of("{% macro f() %}{{ f() }}{% endmacro %}{{ f() }}"),
               "nests expressions or macro calls more than 256 deep");
}

// Values a render builds are bounded too: lists and dicts nest at most 256 deep
// (printing, comparing and freeing them recurse), and a namespace that holds
// itself is freed when the render ends (the ASan run's leak check sees it).
TEST(Jinja, ValuesNestBoundedAndCyclesAreFreed) {
  const auto contains = [](const std::string& text, const std::string& part) {
    return text.find(part) != std::string::npos;
  };
  const std::string too_deep = "lists and dicts nest more than 256 deep";
  const std::string deepen = "{% set ns = namespace(x=[]) %}{% for i in range(100000) %}{% set ns.x = ";
  EXPECT_PRED2(contains, error_of(deepen + "[ns.x] %}{% endfor %}{{ ns.x }}"), too_deep);
  EXPECT_PRED2(contains, error_of(deepen + "{'a': ns.x} %}{% endfor %}{{ ns.x | tojson }}"), too_deep);
  EXPECT_PRED2(contains, error_of(deepen + "dict(a=ns.x) %}{% endfor %}{{ ns.x == ns.x }}"), too_deep);
  EXPECT_EQ(render("{% set ns = namespace(x=[]) %}{% for i in range(255) %}{% set ns.x = [ns.x] %}{% endfor %}"
                   "{{ (ns.x | tojson)[:3] }}{{ ns.x == ns.x }}"),
            "[[[True");
  EXPECT_EQ(render("{% set ns = namespace(x=1) %}{% set ns.x = ns %}"
                   "{% for i in range(2) %}{% set loop.self = loop %}{% endfor %}{{ ns.x.x.x }}"),
            "<Namespace>");
}

// A render that would run or grow without end stops with an error: strings
// (output and captured blocks included) at kMaxStringBytes, lists and dicts
// at kMaxListItems, the whole render at kMaxRenderSteps or kMaxRenderCpu.
// Each case below took minutes or filled memory (10 GB and more) before.
TEST(Jinja, RunawayRendersStopWithAnError) {
  const auto contains = [](const std::string& text, const std::string& part) {
    return text.find(part) != std::string::npos;
  };
  const std::string long_string = "longer than " + std::to_string(kMaxStringBytes) + " bytes";
  const std::string long_list = "more than " + std::to_string(kMaxListItems) + " items";
  const std::string doubling = "{% set ns = namespace(x=VALUE) %}{% for i in range(60) %}{% set ns.x = ns.x OP ns.x %}"
                               "{% endfor %}{{ ns.x | length }}";
  auto doubled = [&](const std::string& value, const std::string& op) {
    std::string t = doubling;
    t.replace(t.find("VALUE"), 5, value);
    t.replace(t.find("OP"), 2, op);
    return error_of(t);
  };
  EXPECT_PRED2(contains, doubled("'ab'", "~"), long_string);
  EXPECT_PRED2(contains, doubled("'ab'", "+"), long_string);
  EXPECT_PRED2(contains, doubled("[1]", "+"), long_list);
  EXPECT_PRED2(contains, error_of("{{ 'x' * 100000000000 }}"), "would be longer than");
  EXPECT_PRED2(contains, error_of("{{ [1, 2] * 100000000000 }}"), "would be longer than");
  EXPECT_PRED2(contains, error_of("{{ 'a' | indent(100000000000, true) }}"), long_string);
  EXPECT_PRED2(contains, error_of("{{ ('a' * 1000000) | replace('a', 'b' * 1000000) }}"), long_string);
  EXPECT_PRED2(contains, error_of("{{ (['x' * 60000000] * 3) | join(',') }}"), long_string);
  EXPECT_PRED2(contains, error_of("{{ ['x', 'y'] | tojson(indent=100000000) }}"), long_string);
  EXPECT_PRED2(contains, error_of("{{ [[1] * 1000000] | tojson(indent=100) }}"), long_string);
  EXPECT_PRED2(contains, error_of("{% set x = 'y' * 60000000 %}{% for i in range(3) %}{{ x }}{% endfor %}"),
               long_string);
  EXPECT_PRED2(contains, error_of("{% set x = 'y' * 60000000 %}{% set c %}{{ x }}{{ x }}{% endset %}"), long_string);
  EXPECT_PRED2(contains, error_of("{% for c in 'y' * 2000000 %}{% endfor %}"), "iterating a string of more than");
  // Nested loops: cheap steps (an if and its condition), so that the step bound comes before the CPU-time one.
  std::string cheap;
  for (int i = 0; i < 20; ++i) cheap += "{% if 0 %}{% endif %}";
  EXPECT_PRED2(contains,
               error_of("{% for a in range(100000) %}{% for b in range(100000) %}" + cheap + "{% endfor %}{% endfor %}"),
               "ran past " + std::to_string(kMaxRenderSteps) + " statements, expressions and loop passes");
  // A step over a 60 MB string (its length scanned at each index) is slow: the CPU-time bound stops the loop.
  EXPECT_PRED2(contains, error_of("{% set s = 'x' * 60000000 %}{% for i in range(100000) %}{{ s[i] }}{% endfor %}"),
               "ran past " + std::to_string(kMaxRenderCpu.count()) + " ms of CPU time");
  // dict() takes one mapping, as Python's: two copies of a dict would double it at each pass.
  EXPECT_PRED2(contains, error_of("{% set d = {'a': 1} %}{{ dict(d, d) }}"), "dict expected at most 1 argument, got 2");
  EXPECT_EQ(render("{{ dict({'a': 1, 'b': 2}, a=3) }}"), "{'a': 3, 'b': 2}");
  EXPECT_EQ(render("{{ ('' * 9000000000000000000) | length }}{{ ([] * 9000000000000000000) | length }}"), "00");
  // At the bounds, and well within the step budget.
  EXPECT_EQ(render("{{ ('x' * " + std::to_string(kMaxStringBytes) + ") | length }}"), std::to_string(kMaxStringBytes));
  EXPECT_PRED2(contains, error_of("{{ ('x' * " + std::to_string(kMaxStringBytes) + ") ~ 'x' }}"), long_string);
  EXPECT_EQ(render("{{ ([0] * " + std::to_string(kMaxListItems) + ") | length }}"), std::to_string(kMaxListItems));
  EXPECT_PRED2(contains, error_of("{{ [0] * " + std::to_string(kMaxListItems + 1) + " }}"), "would be longer than");
  EXPECT_EQ(render("{% for i in range(100000) %}{% endfor %}done"), "done");
}

TEST(Jinja, StrftimeNowUsesTheGivenClock) {
  auto t = Template::parse("{{ strftime_now('%d %b %Y') }}");
  RenderOptions options;
  options.strftime_now = [](const std::string& f) { return f == "%d %b %Y" ? std::string("26 Jul 2024") : f; };
  EXPECT_EQ(*t->render({}, options), "26 Jul 2024");
}

}  // namespace
}  // namespace ember::genai::jinja
