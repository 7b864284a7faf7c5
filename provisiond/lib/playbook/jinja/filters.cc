// The filters playbooks use, Jinja2's and Ansible's ("x | default('a')",
// "list | map(attribute='name') | join(',')"): one table, the code beside
// each name; docs/playbooks.md lists them.
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>

#include "base/strings.h"
#include "playbook/jinja/eval.h"
#include "playbook/jinja/text.h"
#include "playbook/jinja/value.h"

namespace prov::jinja {
namespace {

const json& ListArg(const Val& in, size_t pos, const char* what) {
  const json& v = Need(in, pos);
  if (!v.is_array())
    Fail(pos, std::string(what) + " expects a list, got " + TypeName(v) + " " + Repr(v));
  return v;
}

YAML::Node JsonToYaml(const json& v) {
  if (v.is_object()) {
    YAML::Node n(YAML::NodeType::Map);
    for (auto it = v.begin(); it != v.end(); ++it) n[it.key()] = JsonToYaml(it.value());
    return n;
  }
  if (v.is_array()) {
    YAML::Node n(YAML::NodeType::Sequence);
    for (const auto& e : v) n.push_back(JsonToYaml(e));
    return n;
  }
  if (v.is_null()) return YAML::Node(YAML::NodeType::Null);
  if (v.is_string()) return YAML::Node(v.get<std::string>());
  if (v.is_boolean()) return YAML::Node(v.get<bool>() ? "true" : "false");
  return YAML::Node(Str(v));
}

json Flatten(const json& list, int64_t levels) {
  json out = json::array();
  for (const auto& e : list) {
    if (e.is_array() && levels != 0) {
      for (auto& x : Flatten(e, levels < 0 ? -1 : levels - 1)) out.push_back(x);
    } else if (!e.is_null()) {
      out.push_back(e);
    }
  }
  return out;
}

json Combine(const json& a, const json& b, bool recursive) {
  json out = a;
  for (auto it = b.begin(); it != b.end(); ++it) {
    auto f = out.find(it.key());
    if (recursive && f != out.end() && f->is_object() && it.value().is_object())
      *f = Combine(*f, it.value(), true);
    else
      out[it.key()] = it.value();
  }
  return out;
}

json Unique(const json& list) {
  json out = json::array();
  for (const auto& e : list) {
    bool seen = false;
    for (const auto& o : out)
      if (Equal(e, o)) seen = true;
    if (!seen) out.push_back(e);
  }
  return out;
}

const json& Attribute(const json& item, const std::string& attr, size_t pos) {
  const json* f = AttributePath(item, attr);
  if (!f) Fail(pos, Repr(item) + " has no attribute '" + attr + "'");
  return *f;
}

// min, max: the smallest / largest item, by `attribute` when given.
Val Extreme(const Val& in, const Args& a, bool want_max) {
  const json& list = ListArg(in, a.pos, want_max ? "max" : "min");
  if (list.empty()) Fail(a.pos, std::string(want_max ? "max" : "min") + "() of an empty list");
  const json& attr = a.get(0, kNull);
  auto key = [&](const json& e) -> const json& {
    return attr.is_null() ? e : Attribute(e, StrArg(attr, a.pos, "attribute"), a.pos);
  };
  size_t best = 0;
  for (size_t i = 1; i < list.size(); ++i) {
    int c = Compare(key(list[i]), key(list[best]), a.pos, true);
    if (want_max ? c > 0 : c < 0) best = i;
  }
  return Val::Own(list[best]);
}

Val Select(const Val& in, const Args& a, Scope& scope, bool by_attr, bool keep) {
  const json list = Iterable(Need(in, a.pos), a.pos, "select");
  json out = json::array();
  size_t first = by_attr ? 1 : 0;
  std::string test = "truthy";
  if (a.rest.size() > first) test = StrArg(Need(a.rest[first], a.pos), a.pos, "the test name");
  std::vector<Val> targs;
  for (size_t i = first + 1; i < a.rest.size(); ++i) targs.push_back(a.rest[i]);
  std::string attr;
  if (by_attr) {
    if (a.rest.empty()) Fail(a.pos, "selectattr/rejectattr need an attribute name");
    attr = StrArg(Need(a.rest[0], a.pos), a.pos, "the attribute name");
  }
  for (const auto& e : list) {
    Val subject;
    if (by_attr) {
      const json* f = AttributePath(e, attr);
      subject = f ? Val::Ref(*f) : Val::Undef(Repr(e) + " has no attribute '" + attr + "'");
    } else {
      subject = Val::Ref(e);
    }
    bool r = Truthy(CallTest(test, subject, targs, a.pos, scope).j());
    if (r == keep) out.push_back(e);
  }
  return Val::Own(std::move(out));
}

}  // namespace

const std::map<std::string, Callable>& Filters() {
  static const std::map<std::string, Callable> filters = [] {
    std::map<std::string, Callable> f;
    auto str = [&](const std::string& name, std::function<std::string(const std::string&)> fn) {
      f[name] = {{}, 0, false, false, [fn](const Val& in, const Args& a, Scope&) {
                   return Val::Own(fn(Str(Need(in, a.pos))));
                 }};
    };
    f["default"] = {
        {"default_value", "boolean"}, 0, false, true, [](const Val& in, const Args& a, Scope&) {
          if (in.undefined || (Truthy(a.get(1, kFalse)) && !Truthy(in.j())))
            return Val::Own(a.get(0, kEmptyString));
          return in;
        }};
    f["d"] = f["default"];
    f["mandatory"] = {{"msg"}, 0, false, true, [](const Val& in, const Args& a, Scope&) {
                        if (in.undefined) {
                          const json& msg = a.get(0, kNull);
                          Fail(a.pos, msg.is_null() ? "mandatory variable: " + in.why : Str(msg));
                        }
                        return in;
                      }};
    f["join"] = {{"d", "attribute"}, 0, false, false, [](const Val& in, const Args& a, Scope&) {
                   const json items = Iterable(Need(in, a.pos), a.pos, "join");
                   const std::string sep = Str(a.get(0, kEmptyString));
                   const json& attr = a.get(1, kNull);
                   std::string out;
                   for (size_t i = 0; i < items.size(); ++i) {
                     if (i) out += sep;
                     out += attr.is_null() ? Str(items[i])
                                           : Str(Attribute(items[i], Str(attr), a.pos));
                   }
                   return Val::Own(out);
                 }};
    f["length"] = {{}, 0, false, false, [](const Val& in, const Args& a, Scope&) {
                     const json& v = Need(in, a.pos);
                     if (v.is_string())
                       return Val::Own(static_cast<int64_t>(Utf8Length(v.get<std::string>())));
                     if (v.is_array() || v.is_object())
                       return Val::Own(static_cast<int64_t>(v.size()));
                     Fail(a.pos, "object of type '" + TypeName(v) + "' has no length");
                   }};
    f["count"] = f["length"];
    f["int"] = {{"default", "base"}, 0, false, false, [](const Val& in, const Args& a, Scope&) {
                  const json& v = Need(in, a.pos);
                  const json dflt = a.get(0, json(0));
                  if (IsNum(v)) return Val::Own(AsInt(v));
                  if (!v.is_string()) return Val::Own(dflt);
                  std::string s = Trim(v.get<std::string>());
                  int base = static_cast<int>(IntArg(a.get(1, json(10)), a.pos, "int base"));
                  if (base == 16 && (s.rfind("0x", 0) == 0 || s.rfind("0X", 0) == 0))
                    s = s.substr(2);
                  if (base == 8 && (s.rfind("0o", 0) == 0)) s = s.substr(2);
                  if (base == 2 && (s.rfind("0b", 0) == 0)) s = s.substr(2);
                  int64_t r = 0;
                  const char* b = s.data();
                  if (!s.empty() && s[0] == '+') ++b;
                  auto [p, ec] = std::from_chars(b, s.data() + s.size(), r, base);
                  if (ec == std::errc() && p == s.data() + s.size() && !s.empty())
                    return Val::Own(r);
                  char* end = nullptr;
                  double d = std::strtod(s.c_str(), &end);
                  if (base == 10 && !s.empty() && end == s.c_str() + s.size())
                    return Val::Own(static_cast<int64_t>(d));
                  return Val::Own(dflt);
                }};
    f["float"] = {{"default"}, 0, false, false, [](const Val& in, const Args& a, Scope&) {
                    const json& v = Need(in, a.pos);
                    if (IsNum(v)) return Val::Own(AsDouble(v));
                    if (v.is_string()) {
                      std::string s = Trim(v.get<std::string>());
                      char* end = nullptr;
                      double d = std::strtod(s.c_str(), &end);
                      if (!s.empty() && end == s.c_str() + s.size()) return Val::Own(d);
                    }
                    return Val::Own(a.get(0, json(0.0)));
                  }};
    f["string"] = {{}, 0, false, false, [](const Val& in, const Args& a, Scope&) {
                     return Val::Own(Str(Need(in, a.pos)));
                   }};
    f["bool"] = {{}, 0, false, false, [](const Val& in, const Args& a, Scope&) {
                   const json& v = Need(in, a.pos);
                   if (v.is_boolean()) return in;
                   if (IsNum(v)) return B(AsDouble(v) == 1);
                   if (v.is_string()) {
                     std::string s = Lower(Trim(v.get<std::string>()));
                     return B(s == "yes" || s == "on" || s == "1" || s == "true" || s == "y");
                   }
                   return B(false);
                 }};
    str("lower", [](const std::string& s) { return Lower(s); });
    str("upper", [](const std::string& s) { return Upper(s); });
    str("capitalize", [](const std::string& s) {
      std::string r = Lower(s);
      if (!r.empty()) r[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(r[0])));
      return r;
    });
    str("b64encode", [](const std::string& s) { return Base64Encode(s); });
    str("quote", [](const std::string& s) { return ShlexQuote(s); });
    str("basename", [](const std::string& s) {
      size_t p = s.rfind('/');
      return p == std::string::npos ? s : s.substr(p + 1);
    });
    str("dirname", [](const std::string& s) {
      size_t p = s.rfind('/');
      if (p == std::string::npos) return std::string();
      std::string head = s.substr(0, p + 1);
      // As os.path.dirname: trailing slashes go unless the head is all slashes.
      if (head.find_first_not_of('/') != std::string::npos)
        while (!head.empty() && head.back() == '/') head.pop_back();
      return head;
    });
    f["trim"] = {{"chars"}, 0, false, false, [](const Val& in, const Args& a, Scope&) {
                   const json& chars = a.get(0, kNull);
                   std::string s = Str(Need(in, a.pos));
                   return Val::Own(chars.is_null() ? Trim(s) : Trim(s, Str(chars)));
                 }};
    f["b64decode"] = {{}, 0, false, false, [](const Val& in, const Args& a, Scope&) {
                        auto d = Base64Decode(Str(Need(in, a.pos)));
                        if (!d) Fail(a.pos, "b64decode: the input is not valid base64");
                        return Val::Own(*d);
                      }};
    f["replace"] = {
        {"old", "new", "count"}, 2, false, false, [](const Val& in, const Args& a, Scope&) {
          return Val::Own(ReplaceAll(Str(Need(in, a.pos)), Str(a.get(0, kNull)),
                                     Str(a.get(1, kNull)),
                                     IntArg(a.get(2, json(-1)), a.pos, "replace count")));
        }};
    f["split"] = {
        {"sep", "maxsplit"}, 0, false, false, [](const Val& in, const Args& a, Scope&) {
          return Val::Own(PySplit(Str(Need(in, a.pos)), a.get(0, kNull),
                                  IntArg(a.get(1, json(-1)), a.pos, "split maxsplit"), a.pos));
        }};
    f["first"] = {{}, 0, false, false, [](const Val& in, const Args& a, Scope&) {
                    json items = Iterable(Need(in, a.pos), a.pos, "first");
                    if (items.empty()) return Val::Undef("first: the sequence is empty");
                    return Val::Own(items.front());
                  }};
    f["last"] = {{}, 0, false, false, [](const Val& in, const Args& a, Scope&) {
                   json items = Iterable(Need(in, a.pos), a.pos, "last");
                   if (items.empty()) return Val::Undef("last: the sequence is empty");
                   return Val::Own(items.back());
                 }};
    f["list"] = {{}, 0, false, false, [](const Val& in, const Args& a, Scope&) {
                   return Val::Own(Iterable(Need(in, a.pos), a.pos, "list"));
                 }};
    f["unique"] = {{}, 0, false, false, [](const Val& in, const Args& a, Scope&) {
                     return Val::Own(Unique(Iterable(Need(in, a.pos), a.pos, "unique")));
                   }};
    f["reverse"] = {{}, 0, false, false, [](const Val& in, const Args& a, Scope&) {
                      const json& v = Need(in, a.pos);
                      if (v.is_string()) {
                        std::string s = v.get<std::string>();
                        std::reverse(s.begin(), s.end());
                        return Val::Own(s);
                      }
                      json items = Iterable(v, a.pos, "reverse");
                      std::reverse(items.begin(), items.end());
                      return Val::Own(items);
                    }};
    f["sort"] = {{"reverse", "case_sensitive", "attribute"},
                 0,
                 false,
                 false,
                 [](const Val& in, const Args& a, Scope&) {
                   json items = Iterable(Need(in, a.pos), a.pos, "sort");
                   const bool rev = Truthy(a.get(0, kFalse));
                   const bool fold = !Truthy(a.get(1, kFalse));
                   const json& attr = a.get(2, kNull);
                   auto key = [&](const json& e) -> const json& {
                     return attr.is_null() ? e : Attribute(e, Str(attr), a.pos);
                   };
                   std::stable_sort(items.begin(), items.end(), [&](const json& x, const json& y) {
                     int c = Compare(key(x), key(y), a.pos, fold);
                     return rev ? c > 0 : c < 0;
                   });
                   return Val::Own(items);
                 }};
    f["select"] = {{}, 0, true, false, [](const Val& in, const Args& a, Scope& s) {
                     return Select(in, a, s, false, true);
                   }};
    f["reject"] = {{}, 0, true, false, [](const Val& in, const Args& a, Scope& s) {
                     return Select(in, a, s, false, false);
                   }};
    f["selectattr"] = {{}, 1, true, false, [](const Val& in, const Args& a, Scope& s) {
                         return Select(in, a, s, true, true);
                       }};
    f["rejectattr"] = {{}, 1, true, false, [](const Val& in, const Args& a, Scope& s) {
                         return Select(in, a, s, true, false);
                       }};
    f["map"] = {{}, 0, true, false, [](const Val& in, const Args& a, Scope& s) {
                  const json list = Iterable(Need(in, a.pos), a.pos, "map");
                  json out = json::array();
                  // map(attribute='x'), and map('attribute', 'x') as some playbooks write it.
                  std::optional<std::string> attr;
                  if (a.has(0)) attr = Str(a.get(0, kNull));
                  size_t first = 0;
                  if (!attr && a.rest.size() >= 2 && Need(a.rest[0], a.pos) == "attribute") {
                    attr = Str(Need(a.rest[1], a.pos));
                    first = 2;
                  }
                  if (attr) {
                    for (const auto& e : list) {
                      const json* f = AttributePath(e, *attr);
                      if (!f && !a.has(1))
                        Fail(a.pos, Repr(e) + " has no attribute '" + *attr + "'");
                      out.push_back(f ? *f : a.get(1, kNull));
                    }
                    return Val::Own(std::move(out));
                  }
                  if (a.rest.empty()) Fail(a.pos, "map needs a filter name or attribute=");
                  const std::string name = StrArg(Need(a.rest[first], a.pos), a.pos, "map");
                  std::vector<Val> fargs(a.rest.begin() + first + 1, a.rest.end());
                  for (const auto& e : list)
                    out.push_back(Need(CallFilter(name, Val::Ref(e), fargs, a.pos, s), a.pos));
                  return Val::Own(std::move(out));
                }};
    f["map"].kwonly = {"attribute", "default"};
    f["regex_search"] = {
        {"pattern"}, 1, true, false, [](const Val& in, const Args& a, Scope&) {
          const std::string s = Str(Need(in, a.pos));
          const Regex re = MakeRegex(Str(a.get(0, kNull)), Truthy(a.get(1, kFalse)),
                                     Truthy(a.get(2, kFalse)), a.pos);
          const std::optional<RegexMatch> m = RegexValue(re.Search(s), a.pos);
          if (!m) return Val::Own(nullptr);
          if (a.rest.empty()) return Val::Own(*m->Group(s, 0));
          // Ansible's group arguments: '\\1' or '\\g<name>' (or '\\g<1>');
          // a group that took no part is None, as match.group(n).
          json groups = json::array();
          for (const auto& g : a.rest) {
            const std::string spec = Str(Need(g, a.pos));
            std::string ref;
            if (spec.starts_with("\\g<") && spec.ends_with(">") && spec.size() > 4)
              ref = spec.substr(3, spec.size() - 4);
            else if (spec.size() >= 2 && spec[0] == '\\')
              ref = spec.substr(1);
            else
              Fail(a.pos,
                   "regex_search groups are written '\\\\1' or '\\\\g<name>', not '" + spec + "'");
            std::optional<size_t> n;
            if (ref.find_first_not_of("0123456789") == std::string::npos && ref.size() <= 9)
              n = std::stoul(ref);
            else
              n = re.GroupNumber(ref);
            if (!n || *n > re.group_count())
              Fail(a.pos, "regex_search: no group " + spec + " in '" + re.pattern() + "'");
            auto v = m->Group(s, *n);
            groups.push_back(v ? json(*v) : json(nullptr));
          }
          return Val::Own(std::move(groups));
        }};
    f["regex_search"].kwonly = {"ignorecase", "multiline"};
    f["regex_findall"] = {{"pattern", "ignorecase", "multiline"},
                          1,
                          false,
                          false,
                          [](const Val& in, const Args& a, Scope&) {
                            const std::string s = Str(Need(in, a.pos));
                            const Regex re =
                                MakeRegex(Str(a.get(0, kNull)), Truthy(a.get(1, kFalse)),
                                          Truthy(a.get(2, kFalse)), a.pos);
                            // As re.findall: the whole match without groups, the group with
                            // one, a list of the groups with more ('' for a group that took no
                            // part).
                            json out = json::array();
                            for (const RegexMatch& m : RegexValue(re.FindAll(s), a.pos)) {
                              auto text = [&](size_t i) { return m.Group(s, i).value_or(""); };
                              if (re.group_count() <= 1) {
                                out.push_back(text(re.group_count()));
                              } else {
                                json g = json::array();
                                for (size_t i = 1; i <= re.group_count(); ++i) g.push_back(text(i));
                                out.push_back(std::move(g));
                              }
                            }
                            return Val::Own(std::move(out));
                          }};
    f["regex_replace"] = {
        {"pattern", "replacement", "ignorecase", "multiline", "count"},
        1,
        false,
        false,
        [](const Val& in, const Args& a, Scope&) {
          const std::string s = Str(Need(in, a.pos));
          const Regex re = MakeRegex(Str(a.get(0, kNull)), Truthy(a.get(2, kFalse)),
                                     Truthy(a.get(3, kFalse)), a.pos);
          const json c = a.get(4, json(0));  // a copy: the fallback is a temporary
          if (!c.is_number_integer() || AsInt(c) < 0)
            Fail(a.pos, "regex_replace count must be an integer, 0 (all) or more");
          const auto count = static_cast<size_t>(AsInt(c));
          return Val::Own(RegexValue(re.Replace(s, Str(a.get(1, kEmptyString)), count), a.pos));
        }};
    f["to_json"] = {
        {"indent", "sort_keys"}, 0, false, false, [](const Val& in, const Args& a, Scope&) {
          const json& v = Need(in, a.pos);
          if (a.has(0))
            return Val::Own(v.dump(static_cast<int>(IntArg(a.get(0, kNull), a.pos, "indent")), ' ',
                                   false, json::error_handler_t::replace));
          return Val::Own(PyJson(v));
        }};
    f["to_nice_json"] = {{"indent"}, 0, false, false, [](const Val& in, const Args& a, Scope&) {
                           return Val::Own(Need(in, a.pos).dump(
                               static_cast<int>(IntArg(a.get(0, json(4)), a.pos, "indent")), ' ',
                               false, json::error_handler_t::replace));
                         }};
    f["from_json"] = {{}, 0, false, false, [](const Val& in, const Args& a, Scope&) {
                        const json& v = Need(in, a.pos);
                        try {
                          return Val::Own(json::parse(StrArg(v, a.pos, "from_json")));
                        } catch (const json::parse_error& e) {
                          Fail(a.pos, std::string("from_json: ") + e.what());
                        }
                      }};
    auto yaml = [](const Val& in, const Args& a, Scope&) {
      YAML::Emitter out;
      out << JsonToYaml(Need(in, a.pos));
      return Val::Own(std::string(out.c_str()) + "\n");
    };
    f["to_yaml"] = {{"indent"}, 0, false, false, yaml};
    f["to_nice_yaml"] = {{"indent"}, 0, false, false, yaml};
    f["abs"] = {{}, 0, false, false, [](const Val& in, const Args& a, Scope&) {
                  const json& v = Need(in, a.pos);
                  if (IsInt(v)) return Val::Own(std::llabs(AsInt(v)));
                  if (v.is_number()) return Val::Own(std::fabs(v.get<double>()));
                  Fail(a.pos, "abs expects a number, got " + TypeName(v));
                }};
    f["round"] = {
        {"precision", "method"}, 0, false, false, [](const Val& in, const Args& a, Scope&) {
          const json& v = Need(in, a.pos);
          if (!IsNum(v)) Fail(a.pos, "round expects a number, got " + TypeName(v));
          double scale = std::pow(
              10.0, static_cast<double>(IntArg(a.get(0, json(0)), a.pos, "round precision")));
          std::string method = Str(a.get(1, json("common")));
          double x = AsDouble(v) * scale;
          if (method == "common")
            x = std::round(x);
          else if (method == "floor")
            x = std::floor(x);
          else if (method == "ceil")
            x = std::ceil(x);
          else
            Fail(a.pos, "round method must be common, floor or ceil");
          return Val::Own(x / scale);
        }};
    f["min"] = {{"attribute"}, 0, false, false, [](const Val& in, const Args& a, Scope&) {
                  return Extreme(in, a, false);
                }};
    f["max"] = {{"attribute"}, 0, false, false, [](const Val& in, const Args& a, Scope&) {
                  return Extreme(in, a, true);
                }};
    f["sum"] = {{"attribute", "start"}, 0, false, false, [](const Val& in, const Args& a, Scope&) {
                  const json& list = ListArg(in, a.pos, "sum");
                  json acc = a.get(1, json(0));
                  const json& attr = a.get(0, kNull);
                  for (const auto& e : list) {
                    const json& x = attr.is_null() ? e : Attribute(e, Str(attr), a.pos);
                    if (!IsNum(x) || !IsNum(acc))
                      Fail(a.pos, "sum: cannot add " + TypeName(x) + " " + Repr(x));
                    if (IsInt(x) && IsInt(acc))
                      acc = AsInt(acc) + AsInt(x);
                    else
                      acc = AsDouble(acc) + AsDouble(x);
                  }
                  return Val::Own(acc);
                }};
    f["dict2items"] = {
        {"key_name", "value_name"}, 0, false, false, [](const Val& in, const Args& a, Scope&) {
          const json& v = Need(in, a.pos);
          if (!v.is_object()) Fail(a.pos, "dict2items expects a dict, got " + TypeName(v));
          const std::string k = Str(a.get(0, json("key")));
          const std::string val = Str(a.get(1, json("value")));
          json out = json::array();
          for (auto it = v.begin(); it != v.end(); ++it)
            out.push_back({{k, it.key()}, {val, it.value()}});
          return Val::Own(std::move(out));
        }};
    f["items2dict"] = {
        {"key_name", "value_name"}, 0, false, false, [](const Val& in, const Args& a, Scope&) {
          const json& list = ListArg(in, a.pos, "items2dict");
          const std::string k = Str(a.get(0, json("key")));
          const std::string val = Str(a.get(1, json("value")));
          json out = json::object();
          for (const auto& e : list) {
            if (!e.is_object() || !e.contains(k) || !e.contains(val))
              Fail(a.pos, "items2dict: " + Repr(e) + " lacks '" + k + "' or '" + val + "'");
            out[Str(e[k])] = e[val];
          }
          return Val::Own(std::move(out));
        }};
    f["combine"] = {{}, 0, true, false, [](const Val& in, const Args& a, Scope&) {
                      json out = Need(in, a.pos);
                      if (!out.is_object())
                        Fail(a.pos, "combine expects dicts, got " + TypeName(out));
                      for (const auto& other : a.rest) {
                        const json& o = Need(other, a.pos);
                        if (!o.is_object())
                          Fail(a.pos, "combine expects dicts, got " + TypeName(o));
                        out = Combine(out, o, Truthy(a.get(0, kFalse)));
                      }
                      return Val::Own(std::move(out));
                    }};
    f["combine"].kwonly = {"recursive", "list_merge"};
    f["flatten"] = {
        {"levels"}, 0, false, false, [](const Val& in, const Args& a, Scope&) {
          const json& lv = a.get(0, kNull);
          return Val::Own(Flatten(ListArg(in, a.pos, "flatten"), lv.is_null() ? -1 : AsInt(lv)));
        }};
    f["union"] = {{"other"}, 1, false, false, [](const Val& in, const Args& a, Scope&) {
                    json all = ListArg(in, a.pos, "union");
                    for (const auto& e : a.get(0, kNull)) all.push_back(e);
                    return Val::Own(Unique(all));
                  }};
    // Ansible's zip: [a, b] | zip([1, 2]) is [[a, 1], [b, 2]], as long as
    // the shortest list.
    f["zip"] = {{}, 0, true, false, [](const Val& in, const Args& a, Scope&) {
                  std::vector<const json*> lists = {&ListArg(in, a.pos, "zip")};
                  for (const auto& r : a.rest) lists.push_back(&ListArg(r, a.pos, "zip"));
                  size_t n = lists[0]->size();
                  for (const json* l : lists) n = std::min(n, l->size());
                  json out = json::array();
                  for (size_t i = 0; i < n; ++i) {
                    json row = json::array();
                    for (const json* l : lists) row.push_back((*l)[i]);
                    out.push_back(std::move(row));
                  }
                  return Val::Own(std::move(out));
                }};
    f["intersect"] = {{"other"}, 1, false, false, [](const Val& in, const Args& a, Scope&) {
                        json out = json::array();
                        for (const auto& e : ListArg(in, a.pos, "intersect"))
                          if (Contains(a.get(0, kNull), e)) out.push_back(e);
                        return Val::Own(Unique(out));
                      }};
    f["difference"] = {{"other"}, 1, false, false, [](const Val& in, const Args& a, Scope&) {
                         json out = json::array();
                         for (const auto& e : ListArg(in, a.pos, "difference"))
                           if (!Contains(a.get(0, kNull), e)) out.push_back(e);
                         return Val::Own(Unique(out));
                       }};
    f["ternary"] = {{"true_val", "false_val", "none_val"},
                    2,
                    false,
                    false,
                    [](const Val& in, const Args& a, Scope&) {
                      const json& v = Need(in, a.pos);
                      if (v.is_null() && a.has(2)) return Val::Own(a.get(2, kNull));
                      return Val::Own(Truthy(v) ? a.get(0, kNull) : a.get(1, kNull));
                    }};
    f["type_debug"] = {{}, 0, false, false, [](const Val& in, const Args& a, Scope&) {
                         return Val::Own(TypeName(Need(in, a.pos)));
                       }};
    f["indent"] = {
        {"width", "first", "blank"}, 0, false, false, [](const Val& in, const Args& a, Scope&) {
          const json w = a.get(0, json(4));
          std::string pad = w.is_string() ? w.get<std::string>() : std::string(AsInt(w), ' ');
          const bool first = Truthy(a.get(1, kFalse));
          const bool blank = Truthy(a.get(2, kFalse));
          std::string s = Str(Need(in, a.pos)), out;
          size_t start = 0;
          for (int line = 0; start <= s.size(); ++line) {
            size_t nl = s.find('\n', start);
            std::string l = s.substr(start, nl == std::string::npos ? nl : nl - start);
            if ((line > 0 || first) && (blank || !l.empty())) out += pad;
            out += l;
            if (nl == std::string::npos) break;
            out += '\n';
            start = nl + 1;
          }
          return Val::Own(out);
        }};
    return f;
  }();
  return filters;
}

}  // namespace prov::jinja
