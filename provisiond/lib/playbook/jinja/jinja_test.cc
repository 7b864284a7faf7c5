#include "playbook/jinja/jinja.h"

#include <doctest/doctest.h>

namespace prov {
namespace {

using json = nlohmann::json;

const json kVars = json::parse(R"({
  "name": "node1",
  "n": 3,
  "f": 2.5,
  "flag": true,
  "off": false,
  "nothing": null,
  "empty": "",
  "yes_string": "yes",
  "no_string": "no",
  "list": [3, 1, 2],
  "words": ["b", "A", "c", "a"],
  "users": [{"name": "ann", "uid": 1001, "admin": true},
            {"name": "bob", "uid": 1002, "admin": false}],
  "d": {"a": 1, "b": {"c": "deep"}, "key with space": 7},
  "ok_result": {"rc": 0, "changed": true, "failed": false, "stdout": "Platform A770 found"},
  "bad_result": {"rc": 2, "changed": false, "failed": true},
  "skipped_result": {"skipped": true, "changed": false},
  "path": "/etc/ssh/sshd_config",
  "text": "  Hello World  ",
  "csv": "a,b,,c",
  "json_text": "{\"x\": [1, 2]}"
})");

std::string Eval(const std::string& expr) {
  auto r = EvalExpression(expr, kVars);
  REQUIRE_MESSAGE(r.ok(), std::string(expr + ": " + r.status().message()));
  return r->dump();
}

std::string Render(const std::string& text, const json& vars = kVars) {
  auto r = RenderTemplate(text, vars);
  REQUIRE_MESSAGE(r.ok(), std::string(text + ": " + r.status().message()));
  return *r;
}

std::string EvalError(const std::string& expr) {
  auto r = EvalExpression(expr, kVars);
  REQUIRE_MESSAGE(!r.ok(), std::string(expr + " evaluated to " + r->dump()));
  return r.status().message();
}

std::string RenderError(const std::string& text) {
  auto r = RenderTemplate(text, kVars);
  REQUIRE_MESSAGE(!r.ok(), std::string(text + " rendered as " + *r));
  return r.status().message();
}

}  // namespace

TEST_CASE("jinja: expressions evaluate like Jinja2") {
  struct Case {
    const char* expr;
    const char* json;
  };
  const Case cases[] = {
      // Literals.
      {"'single'", R"("single")"},
      {"\"double\"", R"("double")"},
      {"'a\\nb'", R"("a\nb")"},
      {"'it''s' 'joined'", R"("itsjoined")"},
      {"42", "42"},
      {"-7", "-7"},
      // Repetition: an empty sequence repeated is empty at once (fuzzing found a
      // 7.7-million-step loop over nothing).
      {"[] * 9999999", "[]"},
      {"'' * 9999999", R"("")"},
      {"'ab' * 3", R"("ababab")"},
      {"[1] * 2", "[1,1]"},
      {"2 * [[1, 2]]", "[[1,2],[1,2]]"},
      // Text that is not UTF-8 is shown with U+FFFD, not an exception (fuzzing).
      {"['\xb8'] | to_json", R"("[\"�\"]")"},
      {"1.5", "1.5"},
      {"true", "true"},
      {"True", "true"},
      {"false", "false"},
      {"False", "false"},
      {"none", "null"},
      {"None", "null"},
      {"[1, 'a', [true]]", R"([1,"a",[true]])"},
      {"[]", "[]"},
      {"{'a': 1, 'b': [2]}", R"({"a":1,"b":[2]})"},
      {"(1, 2)", "[1,2]"},
      // Variables, attributes, indexes, slices.
      {"name", R"("node1")"},
      {"d.a", "1"},
      {"d['a']", "1"},
      {"d.b.c", R"("deep")"},
      {"d['b']['c']", R"("deep")"},
      {"d['key with space']", "7"},
      {"list[0]", "3"},
      {"list[-1]", "2"},
      {"list.1", "1"},
      {"users[1].name", R"("bob")"},
      {"list[1:]", "[1,2]"},
      {"list[:2]", "[3,1]"},
      {"list[::-1]", "[2,1,3]"},
      {"name[0:4]", R"("node")"},
      // Arithmetic.
      {"n + 1", "4"},
      {"n - 5", "-2"},
      {"n * 2", "6"},
      {"n / 2", "1.5"},
      {"n // 2", "1"},
      {"-7 // 2", "-4"},
      {"n % 2", "1"},
      {"-7 % 3", "2"},
      {"2 ** 10", "1024"},
      {"f * 2", "5.0"},
      {"(n + 1) * 2", "8"},
      {"n + 1 * 2", "5"},
      {"'a' + 'b'", R"("ab")"},
      {"[1] + [2]", "[1,2]"},
      {"'ab' * 2", R"("abab")"},
      {"name ~ '-' ~ n", R"("node1-3")"},
      {"flag ~ nothing", R"("TrueNone")"},
      // Comparisons.
      {"n == 3", "true"},
      {"n == 3.0", "true"},
      {"n != 3", "false"},
      {"n < 4", "true"},
      {"n > 4", "false"},
      {"n <= 3", "true"},
      {"n >= 4", "false"},
      {"'abc' < 'abd'", "true"},
      {"[1, 2] == [1, 2]", "true"},
      {"'A770' in ok_result.stdout", "true"},
      {"'B580' not in ok_result.stdout", "true"},
      {"2 in list", "true"},
      {"5 in list", "false"},
      {"'a' in d", "true"},
      {"'zz' in d", "false"},
      // Boolean logic, Python semantics (operands are returned).
      {"flag and n", "3"},
      {"off or 'x'", R"("x")"},
      {"not flag", "false"},
      {"not off and flag", "true"},
      {"off and undefined_thing", "false"},
      {"flag or undefined_thing", "true"},
      {"'yes' if flag else 'no'", R"("yes")"},
      {"'yes' if off else 'no'", R"("no")"},
      // Tests.
      {"name is defined", "true"},
      {"nope is defined", "false"},
      {"nope is not defined", "true"},
      {"nope is undefined", "true"},
      {"nope.deeper.still is defined", "false"},
      {"d.zz is defined", "false"},
      {"list[7] is defined", "false"},
      {"nothing is none", "true"},
      {"name is none", "false"},
      {"name is string", "true"},
      {"n is string", "false"},
      {"n is number", "true"},
      {"f is number", "true"},
      {"n is integer", "true"},
      {"f is float", "true"},
      {"flag is boolean", "true"},
      {"d is mapping", "true"},
      {"list is sequence", "true"},
      {"ok_result is succeeded", "true"},
      {"ok_result is success", "true"},
      {"bad_result is failed", "true"},
      {"bad_result is succeeded", "false"},
      {"ok_result is changed", "true"},
      {"bad_result is changed", "false"},
      {"skipped_result is skipped", "true"},
      {"ok_result is skipped", "false"},
      {"ok_result is not failed", "true"},
      {"name is match('node[0-9]')", "true"},
      {"name is match('ode')", "false"},
      {"name is search('ode')", "true"},
      {"name is search('^ode')", "false"},
      {"name is match('NODE', ignorecase=true)", "true"},
      {"n is divisibleby 3", "true"},
      {"n is even", "false"},
      {"n is odd", "true"},
      {"2 is in list", "true"},
      {"n is eq 3", "true"},
      {"n is ansible.builtin.eq(3)", "true"},
      // Filters.
      {"nope | default('x')", R"("x")"},
      {"nope | d('x')", R"("x")"},
      {"nope.deeper | default(1)", "1"},
      {"name | default('x')", R"("node1")"},
      {"empty | default('x')", R"("")"},
      {"empty | default('x', true)", R"("x")"},
      {"nope | default", R"("")"},
      {"nope | default(omit)", R"("__omit_place_holder__")"},
      {"list | join(',')", R"("3,1,2")"},
      {"list | join", R"("312")"},
      {"users | map(attribute='name') | join(' ')", R"("ann bob")"},
      {"users | map('attribute', 'uid') | list", "[1001,1002]"},
      {"words | map('upper') | list", R"(["B","A","C","A"])"},
      {"list | length", "3"},
      {"name | length", "5"},
      {"d | count", "3"},
      {"'héllo' | length", "5"},
      {"'42' | int", "42"},
      {"'4.7' | int", "4"},
      {"'x' | int", "0"},
      {"'x' | int(7)", "7"},
      {"'0x1A' | int(base=16)", "26"},
      {"f | int", "2"},
      {"'2.5' | float", "2.5"},
      {"n | float", "3.0"},
      {"n | string", R"("3")"},
      {"flag | string", R"("True")"},
      {"list | string", R"("[3, 1, 2]")"},
      {"'yes' | bool", "true"},
      {"'off' | bool", "false"},
      {"1 | bool", "true"},
      {"'MiXed' | lower", R"("mixed")"},
      {"'MiXed' | upper", R"("MIXED")"},
      {"text | trim", R"("Hello World")"},
      {"'hello' | capitalize", R"("Hello")"},
      {"name | replace('node', 'gpu')", R"("gpu1")"},
      {"'aaa' | replace('a', 'b', 2)", R"("bba")"},
      {"csv | split(',')", R"(["a","b","","c"])"},
      {"' a  b ' | split", R"(["a","b"])"},
      {"list | first", "3"},
      {"list | last", "2"},
      {"name | first", R"("n")"},
      {"d | list", R"(["a","b","key with space"])"},
      {"[1, 2, 1, 3, 2] | unique", "[1,2,3]"},
      {"list | sort", "[1,2,3]"},
      {"list | sort(reverse=true)", "[3,2,1]"},
      {"words | sort", R"(["A","a","b","c"])"},
      {"words | sort(case_sensitive=true)", R"(["A","a","b","c"])"},
      {"users | sort(attribute='uid', reverse=true) | map(attribute='name') | list",
       R"(["bob","ann"])"},
      {"words | select('match', '[a-z]') | list", R"(["b","c","a"])"},
      {"words | reject('match', '[a-z]') | list", R"(["A"])"},
      {"[0, 1, '', 'x'] | select | list", R"([1,"x"])"},
      {"users | selectattr('admin') | map(attribute='name') | list", R"(["ann"])"},
      {"users | rejectattr('admin') | map(attribute='name') | list", R"(["bob"])"},
      {"users | selectattr('uid', 'equalto', 1002) | map(attribute='name') | first", R"("bob")"},
      {"ok_result.stdout | regex_search('A[0-9]+')", R"("A770")"},
      {"ok_result.stdout | regex_search('B[0-9]+')", "null"},
      {"ok_result.stdout | regex_search('(A)([0-9]+)', '\\\\2')", R"(["770"])"},
      {"'a1b22c' | regex_findall('[0-9]+')", R"(["1","22"])"},
      {"name | regex_replace('[0-9]+$', '')", R"("node")"},
      {"'key=val' | regex_replace('^(\\\\w+)=(\\\\w+)$', '\\\\2=\\\\1')", R"("val=key")"},
      {"'cost $5' | regex_replace('cost', 'price')", R"("price $5")"},
      // Python's re through PCRE2 (regex.h): named groups, \\g<...>, flags,
      // findall with groups, count.
      {"'eth0: 10.0.0.5' | regex_search('(?P<if>\\\\w+): (?P<ip>[0-9.]+)', '\\\\g<ip>', '\\\\1')",
       R"(["10.0.0.5","eth0"])"},
      {"'ab' | regex_search('(a)(x)?', '\\\\2')", "[null]"},
      {"'NODE1' | regex_search('node', ignorecase=true)", R"("NODE")"},
      {"'a\nb' | regex_search('^b$', multiline=true)", R"("b")"},
      {"'k1=v1 k2=v2' | regex_findall('(\\\\w+)=(\\\\w+)')", R"([["k1","v1"],["k2","v2"]])"},
      {"'k1=v1 k2=v2' | regex_findall('\\\\w+=(\\\\w+)')", R"(["v1","v2"])"},
      {"'abxd' | regex_replace('x*', '-')", R"("-a-b--d-")"},
      {"'aaa' | regex_replace('a', 'b', count=2)", R"("bba")"},
      {"'a=b' | regex_replace('(?P<k>\\\\w)=(?P<v>\\\\w)', '\\\\g<v>=\\\\g<k>')", R"("b=a")"},
      {"'n12' is match('(?P<p>[a-z])\\\\d+$')", "true"},
      {"'hello' | b64encode", R"("aGVsbG8=")"},
      {"'hi' | b64encode", R"("aGk=")"},
      {"'aGVsbG8=' | b64decode", R"("hello")"},
      {"'' | b64encode", R"("")"},
      {"d.b | to_json", R"("{\"c\": \"deep\"}")"},
      {"[1, 'a'] | to_json", R"("[1, \"a\"]")"},
      {"json_text | from_json", R"({"x":[1,2]})"},
      {"(json_text | from_json).x[1]", "2"},
      {"{'a': [1]} | to_yaml", R"("a:\n  - 1\n")"},
      {"\"it's\" | quote", R"("'it'\"'\"'s'")"},
      {"'plain-word' | quote", R"("plain-word")"},
      {"'two words' | quote", R"("'two words'")"},
      {"'' | quote", R"("''")"},
      {"path | basename", R"("sshd_config")"},
      {"path | dirname", R"("/etc/ssh")"},
      {"'file' | dirname", R"("")"},
      {"name | mandatory", R"("node1")"},
      {"-5 | abs", "5"},
      {"-2.5 | abs", "2.5"},
      {"list | min", "1"},
      {"list | max", "3"},
      {"list | sum", "6"},
      {"[1.5, 2] | sum", "3.5"},
      {"users | sum(attribute='uid')", "2003"},
      {"{'a': 1} | dict2items", R"([{"key":"a","value":1}])"},
      {"[{'key': 'a', 'value': 1}] | items2dict", R"({"a":1})"},
      {"{'a': 1, 'b': {'x': 1}} | combine({'b': {'y': 2}})", R"({"a":1,"b":{"y":2}})"},
      {"{'a': 1, 'b': {'x': 1}} | combine({'b': {'y': 2}}, recursive=true)",
       R"({"a":1,"b":{"x":1,"y":2}})"},
      {"[1, [2, [3]]] | flatten", "[1,2,3]"},
      {"[1, [2, [3]]] | flatten(levels=1)", "[1,2,[3]]"},
      {"[1, 2] | union([2, 3])", "[1,2,3]"},
      {"['a', 'b', 'c'] | zip([1, 2])", "[[\"a\",1],[\"b\",2]]"},
      {"['a'] | zip([1], ['x']) | map('join', '-') | list", "[\"a-1-x\"]"},
      {"[1, 2] | intersect([2, 3])", "[2]"},
      {"[1, 2] | difference([2, 3])", "[1]"},
      {"flag | ternary('on', 'off')", R"("on")"},
      {"list | reverse | list", "[2,1,3]"},
      {"3.14159 | round(2)", "3.14"},
      {"d | type_debug", R"("dict")"},
      {"name | ansible.builtin.upper", R"("NODE1")"},
      {"'a\\nb' | indent(2)", R"("a\n  b")"},
      // Filters bind tighter than operators, as in Jinja2.
      {"n + '2' | int", "5"},
      // Methods and functions.
      {"name.startswith('node')", "true"},
      {"name.endswith('1')", "true"},
      {"name.upper()", R"("NODE1")"},
      {"text.strip()", R"("Hello World")"},
      {"csv.split(',')", R"(["a","b","","c"])"},
      {"','.join(words)", R"("b,A,c,a")"},
      {"d.get('a')", "1"},
      {"d.get('zz', 5)", "5"},
      {"d.keys() | list", R"(["a","b","key with space"])"},
      {"range(3) | list", "[0,1,2]"},
      {"range(1, 7, 2) | list", "[1,3,5]"},
  };
  for (const auto& c : cases) {
    INFO(c.expr);
    CHECK(Eval(c.expr) == c.json);
  }
  CHECK(Eval("users | max(attribute='uid')") == R"({"admin":false,"name":"bob","uid":1002})");
}

TEST_CASE("jinja: errors say what is wrong and where") {
  struct Case {
    const char* expr;
    const char* error;
  };
  const Case cases[] = {
      {"foo", "undefined variable 'foo'"},
      // A list of one long list repeated counts the long list whole (fuzzing:
      // 597 copies of 9 million elements ran out of memory).
      {"597 * [9007007 * [0]]", "repetition too large"},
      {"3 * ['x' * 4000000]", "repetition too large"},
      {"foo + 1", "undefined variable 'foo'"},
      {"foo | lower", "undefined variable 'foo'"},
      {"d.zz", "'d' has no attribute 'zz'"},
      {"d.b.zz", "'d.b' has no attribute 'zz'"},
      {"foo.bar", "undefined variable 'foo'"},
      {"list[7]", "'list' has no item 7"},
      {"foo is string", "undefined variable 'foo'"},
      {"nope | mandatory", "mandatory variable: undefined variable 'nope'"},
      {"nope | mandatory('set nope in the profile')", "set nope in the profile"},
      {"x }", "unexpected '}' at column 3"},
      {"n == }", "unexpected '}' at column 6"},
      {"n ==", "unexpected end of expression at column 5"},
      {"(n + 1", "unexpected end of expression, expected ')'"},
      {"[1, 2", "expected ']'"},
      {"'open", "unterminated string at column 1"},
      {"n $ 2", "unexpected character '$' at column 3"},
      {"n | bar", "unknown filter 'bar' at column 5"},
      {"n is bogus", "unknown test 'bogus' at column 6"},
      {"lookup('env', 'HOME')", "unknown function 'lookup' (lookups are not supported)"},
      {"n.frobnicate()", "unknown method 'frobnicate'"},
      {"n | replace('a')", "filter 'replace' needs at least 2 arguments"},
      {"n | lower(1)", "filter 'lower' takes at most 0 arguments, got 1"},
      {"n | sort(colour='red')", "filter 'sort' has no argument 'colour'"},
      {"n is match", "test 'match' needs at least 1 argument"},
      {"1 / 0", "division by zero"},
      // Found by fuzzing (signed overflow, undefined behaviour before).
      {"9223372036854775807 + 1", "integer overflow"},
      {"4611686018427387904 * 2", "integer overflow"},
      {"2 ** 63", "integer overflow"},
      {"-(-9223372036854775807 - 1)", "integer overflow"},
      {"n + 'a'", "unsupported operand types for +: 'int' and 'str'"},
      {"n < 'a'", "cannot compare 'int' with 'str'"},
      {"1 in n", "argument of type 'int' is not iterable"},
      {"n | length", "object of type 'int' has no length"},
      {"name is succeeded", "'is succeeded' expects a registered task result"},
      {"'x' is match('(')", "invalid regular expression '('"},
      {"'x' | regex_search('(x)', '\\\\2')", "regex_search: no group \\2"},
      {"'x' | regex_replace('(x)', '\\\\2')", "invalid group reference 2"},
      {"'x' | regex_replace('x', 'y', count=-1)", "count must be an integer"},
      {"'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa-b' | regex_findall('(a*)*b')",
       "regular expression '(a*)*b' hit its match limit"},
      {"'!!' | b64decode", "not valid base64"},
      {"'{' | from_json", "from_json:"},
      {"-list", "bad operand type for unary -: 'list'"},
      {"n.upper()", "'int' object has no method 'upper'"},
      {"n | default(1, 2, 3)", "takes at most 2 arguments"},
      {"((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((("
       "((((((((((((((((((((((((((((((1",
       "nested too deeply"},
  };
  for (const auto& c : cases) {
    INFO(c.expr);
    std::string msg = EvalError(c.expr);
    CHECK_MESSAGE(msg.find(c.error) != std::string::npos, msg);
  }
}

TEST_CASE("jinja: templates render text, blocks, loops and set") {
  CHECK(Render("plain text") == "plain text");
  CHECK(Render("") == "");
  CHECK(Render("Hello {{ name }}!") == "Hello node1!");
  CHECK(Render("{{n}}{{ n }}") == "33");
  CHECK(Render("{{ nothing }}|") == "|");  // None prints as nothing in Ansible
  CHECK(Render("{{ flag }} {{ f }} {{ list }} {{ d.b }}") == "True 2.5 [3, 1, 2] {'c': 'deep'}");
  CHECK(Render("{{ {'a': \"it's\"} }}") == "{'a': \"it's\"}");
  CHECK(Render("a {# a comment #}b") == "a b");
  CHECK(Render("{{ '}}' }}") == "}}");
  CHECK(Render("{ not a tag } {x}") == "{ not a tag } {x}");

  // if / elif / else; the newline after a block tag goes (Ansible's trim_blocks).
  const char* branch =
      "{% if n > 5 %}\nbig\n{% elif n > 2 %}\nmedium\n{% else %}\nsmall\n{% endif %}\n";
  CHECK(Render(branch) == "medium\n");
  CHECK(Render(branch, json{{"n", 9}}) == "big\n");
  CHECK(Render(branch, json{{"n", 1}}) == "small\n");
  CHECK(Render("{% if nope is defined %}x{% endif %}done") == "done");
  CHECK(Render("{% if not off %}yes{% endif %}") == "yes");

  // for with loop.index / first / last, and for-else.
  CHECK(Render("{% for u in users %}{{ loop.index }}:{{ u.name }}{% if not loop.last %},{% endif %}"
               "{% endfor %}") == "1:ann,2:bob");
  CHECK(Render("{% for x in list %}{% if loop.first %}[{% endif %}{{ x }}{% if loop.last %}]"
               "{% endif %}{% endfor %}") == "[312]");
  CHECK(Render("{% for x in [] %}x{% else %}none{% endfor %}") == "none");
  CHECK(Render("{% for k, v in d.b.items() %}{{ k }}={{ v }}{% endfor %}") == "c=deep");
  CHECK(Render("{% for k in d %}{{ k }};{% endfor %}") == "a;b;key with space;");
  CHECK(Render("{% for i in range(2) %}{% for j in range(2) %}{{ i }}{{ j }} {% endfor %}"
               "{% endfor %}") == "00 01 10 11 ");
  CHECK(Render("{% for x in list %}{{ loop.length }}{{ loop.index0 }}{% endfor %}") == "303132");

  // set; a set inside a loop stays in the loop, as in Jinja2.
  CHECK(Render("{% set greeting = 'hi ' ~ name %}{{ greeting }}") == "hi node1");
  CHECK(Render("{% set x = 1 %}{% for i in [1] %}{% set x = 2 %}{{ x }}{% endfor %}{{ x }}") ==
        "21");
  CHECK(Render("{% set n = n + 1 %}{{ n }}") == "4");

  // A file of lines, as in a template module source.
  const char* file =
      "[Service]\n"
      "{% for u in users %}\n"
      "User={{ u.name }}\n"
      "{% endfor %}\n"
      "Port={{ port | default(8000) }}\n";
  CHECK(Render(file) == "[Service]\nUser=ann\nUser=bob\nPort=8000\n");

  // raw blocks are left alone.
  CHECK(Render("{% raw %}{{ not_rendered }}{% endraw %}") == "{{ not_rendered }}");
}

TEST_CASE("jinja: whitespace control") {
  CHECK(Render("a   {{- name -}}   b") == "anode1b");
  CHECK(Render("a\n  {%- if flag %}\nx\n{%- endif %}\nb") == "axb");
  CHECK(Render("x {%- if flag -%}  \n  y  {%- endif -%} \n z") == "xyz");
  CHECK(Render("a {#- comment -#} b") == "ab");
  // trim_blocks removes exactly one newline after a tag, not the text.
  CHECK(Render("{% if flag %}\n\nline\n{% endif %}") == "\nline\n");
  CHECK(Render("{% set x = 1 %}\r\nline") == "line");
  // An expression keeps the newline after it.
  CHECK(Render("{{ n }}\nnext") == "3\nnext");
}

TEST_CASE("jinja: template errors name the construct and the line") {
  struct Case {
    const char* text;
    const char* error;
  };
  const Case cases[] = {
      {"Hello {{ foo }}", "undefined variable 'foo'"},
      {"a\nb {{ foo }}", "undefined variable 'foo' at line 2, column 6"},
      {"{{ name", "'{{' is not closed (expected '}}') at column 1"},
      {"x {% if n %}", "'if' block is not closed (expected 'endif') at column 3"},
      {"{% for x in list %}", "'for' block is not closed (expected 'endfor')"},
      {"{% endif %}", "unexpected 'endif' (no open block)"},
      {"{% if n %}\n{% endfor %}",
       "unexpected 'endfor' (the open block is 'if' at line 1, "
       "expected 'endif') at line 2, column 4"},
      {"{% else %}", "unexpected 'else'"},
      {"{% if n %}{% else %}{% else %}{% endif %}", "unexpected 'else'"},
      {"{% if n %}{% else %}{% elif n %}{% endif %}", "unexpected 'elif'"},
      {"{% macro m() %}{% endmacro %}", "unknown tag 'macro'"},
      {"{% include 'x' %}", "unknown tag 'include'"},
      {"{% %}", "empty block tag"},
      {"{{ }}", "empty expression"},
      {"{# open", "'{#' is not closed"},
      {"{% for x list %}{% endfor %}", "unexpected 'list', expected 'in'"},
      {"{% set x %}{% endset %}", "block assignments are not supported"},
      {"{{ n | nope }}", "unknown filter 'nope' at column 8"},
      {"{% if n == %}x{% endif %}", "unexpected end of expression at column 12"},
      {"{{ x y }}", "unexpected 'y' at column 6"},
      {"{% for k, v in list %}{% endfor %}", "cannot unpack 3 into two loop variables"},
      {"{% for x in n %}{% endfor %}", "'int' object is not iterable"},
      {"{% raw %}never closed", "'raw' block is not closed"},
  };
  for (const auto& c : cases) {
    INFO(c.text);
    std::string msg = RenderError(c.text);
    CHECK_MESSAGE(msg.find(c.error) != std::string::npos, msg);
  }
}

TEST_CASE("jinja: syntax checks find errors without evaluating") {
  CHECK(CheckTemplateSyntax("{{ undefined_is_fine_here }}").ok());
  CHECK(CheckTemplateSyntax("{% for x in y %}{{ x | upper }}{% endfor %}").ok());
  CHECK(CheckTemplateSyntax("{{ x | upper(1) }}").message() ==
        "filter 'upper' takes at most 0 arguments, got 1 at column 6");
  CHECK(CheckTemplateSyntax("a\n{% if x %}", "t.j2").message() ==
        "t.j2:2:1: 'if' block is not closed (expected 'endif')");
  CHECK(CheckTemplateSyntax("line\nExec={{ a | bogus }}\n", "svc.j2").message() ==
        "svc.j2:2:13: unknown filter 'bogus'");
  CHECK(CheckExpressionSyntax("a.b is defined and c | length > 0").ok());
  CHECK(CheckExpressionSyntax("a ==").message() == "unexpected end of expression at column 5");
  CHECK(CheckConditionSyntax("{{ x == 1 }}").ok());
  CHECK(CheckConditionSyntax("x == 1").ok());
  CHECK(CheckConditionSyntax("{{ x }} == 1").ok());
  CHECK(CheckConditionSyntax("").ok());
  CHECK_FALSE(CheckConditionSyntax("{{ x == }}").ok());
  CHECK_FALSE(CheckConditionSyntax("x is frob").ok());
  CHECK(IsTemplated("a {{ b }}"));
  CHECK(IsTemplated("{% if %}"));
  CHECK_FALSE(IsTemplated("plain { text }"));
}

TEST_CASE("jinja: conditions convert like Ansible's") {
  struct Case {
    const char* cond;
    bool want;
  };
  const Case cases[] = {
      {"n == 3", true},
      {"n == 4", false},
      {"{{ n == 3 }}", true},
      {"{{ flag }}", true},
      {"{{ off }}", false},
      {"flag", true},
      {"off", false},
      {"true", true},
      {"false", false},
      {"True", true},
      {"yes_string", true},
      {"no_string", false},
      {"{{ yes_string }}", true},
      {"{{ no_string }}", false},
      {"'true'", true},
      {"'false'", false},
      {"empty", false},
      {"nothing", false},
      {"list", true},
      {"[]", false},
      {"n", true},
      {"0", false},
      {"nope is defined", false},
      {"nope is not defined", true},
      {"ok_result is succeeded", true},
      {"ok_result.rc == 0 and 'A770' in ok_result.stdout", true},
      {"{{ n }} == 3", true},
      {"{{ n }} == 4", false},
      {"", true},
  };
  for (const auto& c : cases) {
    INFO(c.cond);
    auto r = EvalCondition(c.cond, kVars);
    REQUIRE_MESSAGE(r.ok(), r.status().message());
    CHECK(*r == c.want);
  }
  auto bad = EvalCondition("missing_var == 1", kVars);
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().message() == "undefined variable 'missing_var'");
  CHECK_FALSE(EvalCondition("{{ missing_var }}", kVars).ok());
  CHECK_FALSE(EvalCondition("n ==", kVars).ok());
}

TEST_CASE("jinja: RenderValue renders nested strings and keeps types") {
  json value = {
      {"name", "{{ name }}"},
      {"count", "{{ n + 1 }}"},
      {"list", "{{ list }}"},
      {"flag", "{{ flag }}"},
      {"text", "n={{ n }}"},
      {"plain", "no template"},
      {"number", 5},
      {"mode", "{{ nope | default(omit) }}"},
      {"nested", {{"a", json::array({"{{ name }}", "{{ nope | default(omit) }}", "x"})}}}};
  auto r = RenderValue(value, kVars);
  REQUIRE_MESSAGE(r.ok(), r.status().message());
  CHECK((*r)["name"] == "node1");
  CHECK((*r)["count"] == 4);
  CHECK((*r)["list"] == json::array({3, 1, 2}));
  CHECK((*r)["flag"] == true);
  CHECK((*r)["text"] == "n=3");
  CHECK((*r)["plain"] == "no template");
  CHECK((*r)["number"] == 5);
  CHECK_FALSE(r->contains("mode"));
  CHECK((*r)["nested"]["a"] == json::array({"node1", "x"}));

  auto bad = RenderValue(json{{"dest", "/home/{{ user }}/x"}}, kVars);
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().message() == "in 'dest': undefined variable 'user'");
  auto bad2 = RenderValue(json{{"lines", json::array({"ok", "{{ a | nope }}"})}}, kVars);
  REQUIRE_FALSE(bad2.ok());
  CHECK(bad2.status().message() == "in 'lines[1]': unknown filter 'nope' at column 8");
  // A registered result's text is data, not rendered again.
  json vars = {{"out", "{{ not_a_var }}"}};
  CHECK(*RenderTemplate("{{ out }}", vars) == "{{ not_a_var }}");
}

TEST_CASE("jinja: shipped templates render") {
  // playbooks/templates/vllm.service.j2's constructs.
  json vars = {{"model", "m"}, {"compute_user", "compute"}, {"vllm_port", 8000}};
  auto r = RenderTemplate(
      "User={{ compute_user }}\nExecStart=/x serve {{ model }} --port {{ vllm_port }} "
      "--pp {{ pipeline_parallel_size | default(1) }}\n",
      vars);
  REQUIRE(r.ok());
  CHECK(*r == "User=compute\nExecStart=/x serve m --port 8000 --pp 1\n");
  auto f = RenderTemplateFile("a\n{{ nope }}", vars, "x.j2");
  REQUIRE_FALSE(f.ok());
  CHECK(f.status().message() == "x.j2:2:4: undefined variable 'nope'");
}

}  // namespace prov
