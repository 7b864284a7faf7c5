// Jinja2's and Ansible's tests ("x is defined", "result is failed",
// "name is match('node[0-9]')"): one table, the code beside each name.
#include "playbook/jinja/eval.h"
#include "playbook/jinja/text.h"
#include "playbook/jinja/value.h"

namespace prov::jinja {
namespace {

bool RegexTest(const json& v, const Args& a, bool anchored, size_t pos) {
  if (!v.is_string()) Fail(pos, "regular expression tests expect a string, got " + TypeName(v));
  const auto& pattern = StrArg(a.get(0, kNull), pos, "the pattern");
  const Regex re = MakeRegex(pattern, Truthy(a.get(1, kFalse)), Truthy(a.get(2, kFalse)), pos);
  return RegexValue(re.Search(v.get_ref<const std::string&>(), 0, anchored), pos).has_value();
}

const json& ResultArg(const Val& in, size_t pos, const char* test) {
  const json& v = Need(in, pos);
  if (!v.is_object())
    Fail(pos,
         std::string("'is ") + test + "' expects a registered task result, got " + TypeName(v));
  return v;
}

bool ResultFlag(const json& r, const char* key) {
  auto f = r.find(key);
  return f != r.end() && Truthy(*f);
}

}  // namespace

const std::map<std::string, Callable>& Tests() {
  static const std::map<std::string, Callable> tests = [] {
    std::map<std::string, Callable> t;
    auto plain = [&](const std::string& name, std::function<bool(const json&)> f) {
      t[name] = {{}, 0, false, false, [f](const Val& in, const Args& a, Scope&) {
                   return B(f(Need(in, a.pos)));
                 }};
    };
    t["defined"] = {
        {}, 0, false, true, [](const Val& in, const Args&, Scope&) { return B(!in.undefined); }};
    t["undefined"] = {
        {}, 0, false, true, [](const Val& in, const Args&, Scope&) { return B(in.undefined); }};
    plain("none", [](const json& v) { return v.is_null(); });
    plain("string", [](const json& v) { return v.is_string(); });
    plain("number", [](const json& v) { return v.is_number(); });
    plain("integer", [](const json& v) { return v.is_number_integer(); });
    plain("float", [](const json& v) { return v.is_number_float(); });
    plain("boolean", [](const json& v) { return v.is_boolean(); });
    plain("mapping", [](const json& v) { return v.is_object(); });
    plain("sequence", [](const json& v) { return v.is_array() || v.is_string() || v.is_object(); });
    plain("iterable", [](const json& v) { return v.is_array() || v.is_string() || v.is_object(); });
    plain("list", [](const json& v) { return v.is_array(); });
    plain("truthy", [](const json& v) { return Truthy(v); });
    plain("falsy", [](const json& v) { return !Truthy(v); });
    plain("lower", [](const json& v) { return v.is_string() && Lower(v.get<std::string>()) == v; });
    plain("upper", [](const json& v) { return v.is_string() && Upper(v.get<std::string>()) == v; });
    auto result = [&](const std::string& name, bool want_failed, const char* key) {
      t[name] = {
          {}, 0, false, false, [name, want_failed, key](const Val& in, const Args& a, Scope&) {
            const json& r = ResultArg(in, a.pos, name.c_str());
            return B(ResultFlag(r, key) == want_failed);
          }};
    };
    result("succeeded", false, "failed");
    result("success", false, "failed");
    result("failed", true, "failed");
    result("failure", true, "failed");
    result("changed", true, "changed");
    result("change", true, "changed");
    result("skipped", true, "skipped");
    result("skip", true, "skipped");
    auto regex = [&](const std::string& name, bool anchored) {
      t[name] = {{"pattern", "ignorecase", "multiline"},
                 1,
                 false,
                 false,
                 [anchored](const Val& in, const Args& a, Scope&) {
                   return B(RegexTest(Need(in, a.pos), a, anchored, a.pos));
                 }};
    };
    regex("match", true);
    regex("search", false);
    regex("regex", false);
    t["in"] = {{"seq"}, 1, false, false, [](const Val& in, const Args& a, Scope&) {
                 const json& v = Need(in, a.pos);
                 const json& seq = a.get(0, kNull);
                 if (seq.is_string())
                   return B(v.is_string() && seq.get_ref<const std::string&>().find(
                                                 v.get<std::string>()) != std::string::npos);
                 if (seq.is_object()) return B(v.is_string() && seq.contains(v.get<std::string>()));
                 if (!seq.is_array()) Fail(a.pos, "'is in' expects a list, got " + TypeName(seq));
                 for (const auto& e : seq)
                   if (Equal(e, v)) return B(true);
                 return B(false);
               }};
    auto cmp = [&](std::vector<std::string> names, std::function<bool(int)> ok) {
      for (const auto& name : names)
        t[name] = {{"other"}, 1, false, false, [ok](const Val& in, const Args& a, Scope&) {
                     return B(ok(Compare(Need(in, a.pos), a.get(0, kNull), a.pos)));
                   }};
    };
    cmp({"lt", "lessthan"}, [](int c) { return c < 0; });
    cmp({"le"}, [](int c) { return c <= 0; });
    cmp({"gt", "greaterthan"}, [](int c) { return c > 0; });
    cmp({"ge"}, [](int c) { return c >= 0; });
    for (const char* name : {"eq", "equalto", "sameas"})
      t[name] = {{"other"}, 1, false, false, [](const Val& in, const Args& a, Scope&) {
                   return B(Equal(Need(in, a.pos), a.get(0, kNull)));
                 }};
    t["ne"] = {{"other"}, 1, false, false, [](const Val& in, const Args& a, Scope&) {
                 return B(!Equal(Need(in, a.pos), a.get(0, kNull)));
               }};
    auto intTest = [&](const std::string& name, std::function<bool(int64_t, const Args&)> f,
                       std::vector<std::string> params) {
      t[name] = {params, params.size(), false, false,
                 [f, name](const Val& in, const Args& a, Scope&) {
                   const json& v = Need(in, a.pos);
                   if (!IsInt(v)) Fail(a.pos, "'is " + name + "' expects an integer");
                   return B(f(AsInt(v), a));
                 }};
    };
    intTest("even", [](int64_t v, const Args&) { return v % 2 == 0; }, {});
    intTest("odd", [](int64_t v, const Args&) { return v % 2 != 0; }, {});
    intTest("divisibleby",
            [](int64_t v, const Args& a) {
              const json& d = a.get(0, kNull);
              if (!IsInt(d) || AsInt(d) == 0) Fail(a.pos, "divisibleby needs a non-zero integer");
              return v % AsInt(d) == 0;
            },
            {"num"});
    return t;
  }();
  return tests;
}

}  // namespace prov::jinja
