// The methods of Python's str and dict that playbooks call
// ("name.startswith('gpu')", "d.get('k', 0)"): one table, the code beside
// each name.
#include "playbook/jinja/eval.h"
#include "playbook/jinja/text.h"
#include "playbook/jinja/value.h"

namespace prov::jinja {
namespace {

const json& MArg(const std::vector<Val>& args, size_t i, size_t pos, const json& fallback) {
  return i < args.size() ? Need(args[i], pos) : fallback;
}

}  // namespace

const std::map<std::string, std::pair<bool, MethodFn>>& Methods() {
  static const std::map<std::string, std::pair<bool, MethodFn>> methods = {
      {"lower",
       {true, [](const json& s, const std::vector<Val>&,
                 size_t) { return Val::Own(Lower(s.get<std::string>())); }}},
      {"upper",
       {true, [](const json& s, const std::vector<Val>&,
                 size_t) { return Val::Own(Upper(s.get<std::string>())); }}},
      {"strip",
       {true,
        [](const json& s, const std::vector<Val>& a, size_t pos) {
          const json& c = MArg(a, 0, pos, kNull);
          return Val::Own(c.is_null() ? Trim(s.get<std::string>())
                                      : Trim(s.get<std::string>(), Str(c)));
        }}},
      {"lstrip",
       {true,
        [](const json& s, const std::vector<Val>& a, size_t pos) {
          std::string chars = Str(MArg(a, 0, pos, json(" \t\n\r\f\v")));
          const std::string& v = s.get_ref<const std::string&>();
          size_t b = v.find_first_not_of(chars);
          return Val::Own(b == std::string::npos ? "" : v.substr(b));
        }}},
      {"rstrip",
       {true,
        [](const json& s, const std::vector<Val>& a, size_t pos) {
          std::string chars = Str(MArg(a, 0, pos, json(" \t\n\r\f\v")));
          const std::string& v = s.get_ref<const std::string&>();
          size_t e = v.find_last_not_of(chars);
          return Val::Own(e == std::string::npos ? "" : v.substr(0, e + 1));
        }}},
      {"startswith",
       {true,
        [](const json& s, const std::vector<Val>& a, size_t pos) {
          return B(s.get<std::string>().rfind(Str(MArg(a, 0, pos, kEmptyString)), 0) == 0);
        }}},
      {"endswith",
       {true,
        [](const json& s, const std::vector<Val>& a, size_t pos) {
          const std::string& v = s.get_ref<const std::string&>();
          std::string x = Str(MArg(a, 0, pos, kEmptyString));
          return B(v.size() >= x.size() && v.compare(v.size() - x.size(), x.size(), x) == 0);
        }}},
      {"split",
       {true,
        [](const json& s, const std::vector<Val>& a, size_t pos) {
          return Val::Own(PySplit(s.get<std::string>(), MArg(a, 0, pos, kNull),
                                  IntArg(MArg(a, 1, pos, json(-1)), pos, "maxsplit"), pos));
        }}},
      {"splitlines",
       {true,
        [](const json& s, const std::vector<Val>&, size_t) {
          json out = json::array();
          const std::string& v = s.get_ref<const std::string&>();
          size_t start = 0;
          while (start < v.size()) {
            size_t nl = v.find('\n', start);
            std::string l = v.substr(start, nl == std::string::npos ? nl : nl - start);
            if (!l.empty() && l.back() == '\r') l.pop_back();
            out.push_back(l);
            if (nl == std::string::npos) break;
            start = nl + 1;
          }
          return Val::Own(std::move(out));
        }}},
      {"replace",
       {true,
        [](const json& s, const std::vector<Val>& a, size_t pos) {
          return Val::Own(ReplaceAll(s.get<std::string>(), Str(MArg(a, 0, pos, kEmptyString)),
                                     Str(MArg(a, 1, pos, kEmptyString))));
        }}},
      {"join",
       {true,
        [](const json& s, const std::vector<Val>& a, size_t pos) {
          json items = Iterable(MArg(a, 0, pos, json::array()), pos, "join");
          std::string out;
          for (size_t i = 0; i < items.size(); ++i)
            out += (i ? s.get<std::string>() : "") + Str(items[i]);
          return Val::Own(out);
        }}},
      {"keys",
       {false, [](const json& d, const std::vector<Val>&,
                  size_t pos) { return Val::Own(Iterable(d, pos, "keys")); }}},
      {"values",
       {false,
        [](const json& d, const std::vector<Val>&, size_t) {
          json out = json::array();
          for (const auto& v : d) out.push_back(v);
          return Val::Own(std::move(out));
        }}},
      {"items",
       {false,
        [](const json& d, const std::vector<Val>&, size_t) {
          json out = json::array();
          for (auto it = d.begin(); it != d.end(); ++it)
            out.push_back(json::array({it.key(), it.value()}));
          return Val::Own(std::move(out));
        }}},
      {"get",
       {false,
        [](const json& d, const std::vector<Val>& a, size_t pos) {
          std::string key = Str(MArg(a, 0, pos, kNull));
          auto f = d.find(key);
          return Val::Own(f == d.end() ? MArg(a, 1, pos, kNull) : *f);
        }}},
  };
  return methods;
}

}  // namespace prov::jinja
