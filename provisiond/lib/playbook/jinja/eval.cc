// Evaluates an expression tree against the variables, with Python's
// arithmetic and Ansible's undefined: a missing variable is a value until
// something needs it, so "is defined" and "default" work and every other use
// names what is missing.
#include "playbook/jinja/eval.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "playbook/jinja/jinja.h"
#include "playbook/jinja/parser.h"
#include "playbook/jinja/text.h"

namespace prov::jinja {
namespace {

// How much a value holds: 1 per value, strings by their length, lists and
// mappings with all they contain; counting stops past `limit`.
int64_t Weight(const json& v, int64_t limit) {
  if (v.is_string())
    return std::max<int64_t>(1, static_cast<int64_t>(v.get_ref<const std::string&>().size()));
  if (!v.is_array() && !v.is_object()) return 1;
  int64_t w = 1;
  for (const auto& e : v) {
    w += Weight(e, limit - w);
    if (w > limit) break;
  }
  return w;
}

// Largest list range() builds: a broken template must not eat the memory.
constexpr int64_t kMaxRange = 100000;

Args BindArgs(const Callable& c, std::vector<Val> positional,
              std::vector<std::pair<std::string, Val>> kwargs, size_t pos) {
  Args a;
  a.pos = pos;
  a.at.resize(c.params.size() + c.kwonly.size());
  for (size_t i = 0; i < positional.size(); ++i) {
    if (i < c.params.size())
      a.at[i] = std::move(positional[i]);
    else
      a.rest.push_back(std::move(positional[i]));
  }
  for (auto& [name, v] : kwargs) {
    auto it = std::find(c.params.begin(), c.params.end(), name);
    if (it != c.params.end()) {
      a.at[it - c.params.begin()] = std::move(v);
      continue;
    }
    auto kw = std::find(c.kwonly.begin(), c.kwonly.end(), name);
    if (kw != c.kwonly.end()) a.at[c.params.size() + (kw - c.kwonly.begin())] = std::move(v);
  }
  return a;
}

}  // namespace

Val CallTest(const std::string& name, const Val& subject, std::vector<Val> args, size_t pos,
             Scope& scope) {
  auto it = Tests().find(StripCollection(name));
  if (it == Tests().end()) Fail(pos, "unknown test '" + name + "'");
  if (subject.undefined && !it->second.accepts_undefined) Fail(pos, subject.why);
  return it->second.fn(subject, BindArgs(it->second, std::move(args), {}, pos), scope);
}

Val CallFilter(const std::string& name, const Val& subject, std::vector<Val> args, size_t pos,
               Scope& scope) {
  auto it = Filters().find(StripCollection(name));
  if (it == Filters().end()) Fail(pos, "unknown filter '" + name + "'");
  if (subject.undefined && !it->second.accepts_undefined) Fail(pos, subject.why);
  return it->second.fn(subject, BindArgs(it->second, std::move(args), {}, pos), scope);
}

namespace {

struct Num {
  bool is_float;
  int64_t i;
  double d;
};

Num ToNum(const json& v) {
  if (v.is_number_float()) return {true, 0, v.get<double>()};
  int64_t i = AsInt(v);
  return {false, i, static_cast<double>(i)};
}

Val Arith(const std::string& op, const json& a, const json& b, size_t pos) {
  if (op == "+") {
    if (a.is_string() && b.is_string())
      return Val::Own(a.get<std::string>() + b.get<std::string>());
    if (a.is_array() && b.is_array()) {
      json out = a;
      for (const auto& e : b) out.push_back(e);
      return Val::Own(std::move(out));
    }
  }
  if (op == "*") {
    const json* seq = a.is_string() || a.is_array()   ? &a
                      : b.is_string() || b.is_array() ? &b
                                                      : nullptr;
    const json* count = seq == &a ? &b : &a;
    if (seq && IsInt(*count)) {
      int64_t k = std::max<int64_t>(0, AsInt(*count));
      const auto unit = static_cast<int64_t>(
          seq->is_string() ? seq->get_ref<const std::string&>().size() : seq->size());
      // What the result holds, nested lists and strings counted whole (a list
      // of one long list is not one element's worth; found by fuzzing).
      constexpr int64_t kMaxRepetition = 10000000;
      if (k > kMaxRepetition || k * Weight(*seq, kMaxRepetition) > kMaxRepetition)
        Fail(pos, "repetition too large");
      json out = seq->is_string() ? json("") : json::array();
      if (unit == 0) return Val::Own(std::move(out));  // nothing to repeat, however often
      if (seq->is_string()) {
        const std::string& text = seq->get_ref<const std::string&>();
        std::string& acc = out.get_ref<std::string&>();
        acc.reserve(static_cast<size_t>(k * unit));
        for (int64_t i = 0; i < k; ++i) acc += text;
      } else {
        for (int64_t i = 0; i < k; ++i)
          for (const auto& e : *seq) out.push_back(e);
      }
      return Val::Own(std::move(out));
    }
  }
  if (op == "%" && a.is_string()) Fail(pos, "string formatting with '%' is not supported");
  if (!IsNum(a) || !IsNum(b))
    Fail(pos, "unsupported operand types for " + op + ": '" + TypeName(a) + "' and '" +
                  TypeName(b) + "'");
  Num x = ToNum(a), y = ToNum(b);
  const bool fl = x.is_float || y.is_float;
  // Python's integers have no bounds; ours are 64 bits, and a result past
  // them is an error rather than a wrapped (undefined) value.
  auto overflow = [&]() {
    Fail(pos, "integer overflow: " + std::to_string(x.i) + " " + op + " " + std::to_string(y.i) +
                  " does not fit in 64 bits");
  };
  int64_t r = 0;
  if (op == "+") {
    if (fl) return Val::Own(x.d + y.d);
    if (__builtin_add_overflow(x.i, y.i, &r)) overflow();
    return Val::Own(r);
  }
  if (op == "-") {
    if (fl) return Val::Own(x.d - y.d);
    if (__builtin_sub_overflow(x.i, y.i, &r)) overflow();
    return Val::Own(r);
  }
  if (op == "*") {
    if (fl) return Val::Own(x.d * y.d);
    if (__builtin_mul_overflow(x.i, y.i, &r)) overflow();
    return Val::Own(r);
  }
  if (op == "**") {
    if (!fl && y.i >= 0) {
      r = 1;
      // |x| >= 2 overflows by the 64th factor; 0, 1 and -1 stay put.
      for (int64_t i = 0; i < y.i && i < 64; ++i)
        if (__builtin_mul_overflow(r, x.i, &r)) overflow();
      if (y.i >= 64 && x.i == -1) r = y.i % 2 ? -1 : 1;
      return Val::Own(r);
    }
    return Val::Own(std::pow(x.d, y.d));
  }
  if (y.d == 0) Fail(pos, "division by zero");
  if (op == "/") return Val::Own(x.d / y.d);
  if (op == "//") {
    if (fl) return Val::Own(std::floor(x.d / y.d));
    if (x.i == std::numeric_limits<int64_t>::min() && y.i == -1) overflow();
    int64_t q = x.i / y.i;
    if ((x.i % y.i != 0) && ((x.i < 0) != (y.i < 0))) --q;
    return Val::Own(q);
  }
  if (op == "%") {
    if (fl) {
      double r = std::fmod(x.d, y.d);
      if (r != 0 && ((r < 0) != (y.d < 0))) r += y.d;
      return Val::Own(r);
    }
    if (y.i == -1) return Val::Own(int64_t{0});  // INT64_MIN % -1 traps
    r = x.i % y.i;
    if (r != 0 && ((r < 0) != (y.i < 0))) r += y.i;
    return Val::Own(r);
  }
  Fail(pos, "unknown operator '" + op + "'");
}

bool In(const json& item, const json& container, size_t pos) {
  if (container.is_string()) {
    if (!item.is_string())
      Fail(pos, "'in <string>' requires a string as left operand, not " + TypeName(item));
    return container.get_ref<const std::string&>().find(item.get<std::string>()) !=
           std::string::npos;
  }
  if (container.is_array()) return Contains(container, item);
  if (container.is_object()) return item.is_string() && container.contains(item.get<std::string>());
  Fail(pos, "argument of type '" + TypeName(container) + "' is not iterable");
}

Val GetAttr(const Val& base, const Node& n, const std::string& key) {
  if (base.undefined) return base;  // chains as Ansible's undefined does
  const json& v = base.j();
  const std::string owner = n.kids[0]->path.empty() ? TypeName(v) + " object" : n.kids[0]->path;
  if (v.is_object()) {
    auto f = v.find(key);
    if (f != v.end()) {
      if (base.ref) return Val::Ref(*f);
      return Val::Own(*f);
    }
    return Val::Undef("'" + owner + "' has no attribute '" + key + "'");
  }
  if (v.is_array() && !key.empty() && key.find_first_not_of("0123456789") == std::string::npos) {
    size_t i = std::stoul(key);
    if (i < v.size()) return base.ref ? Val::Ref(v[i]) : Val::Own(v[i]);
    return Val::Undef("'" + owner + "' has no item " + key);
  }
  return Val::Undef("'" + owner + "' (" + TypeName(v) + ") has no attribute '" + key + "'");
}

Val GetIndex(const Val& base, const Node& n, const json& key) {
  if (base.undefined) return base;
  const json& v = base.j();
  const std::string owner = n.kids[0]->path.empty() ? TypeName(v) + " object" : n.kids[0]->path;
  if (v.is_array() || v.is_string()) {
    if (!IsInt(key)) Fail(n.pos, TypeName(v) + " indices must be integers, not " + TypeName(key));
    int64_t i = AsInt(key);
    const int64_t size =
        static_cast<int64_t>(v.is_string() ? v.get_ref<const std::string&>().size() : v.size());
    if (i < 0) i += size;
    if (i < 0 || i >= size)
      return Val::Undef("'" + owner + "' has no item " + Str(key) + " (length " +
                        std::to_string(size) + ")");
    if (v.is_string()) return Val::Own(std::string(1, v.get_ref<const std::string&>()[i]));
    return base.ref ? Val::Ref(v[i]) : Val::Own(v[i]);
  }
  if (v.is_object()) return GetAttr(base, n, Str(key));
  return Val::Undef("'" + owner + "' (" + TypeName(v) + ") has no item " + Repr(key));
}

Val EvalSlice(const Node& n, Scope& s) {
  const Val base = Eval(*n.kids[0], s);
  const json& v = Need(base, n.pos);
  int64_t vals[3] = {0, 0, 1};
  bool given[3] = {false, false, false};
  for (int k = 0; k < 3; ++k) {
    if (!n.kids[k + 1]) continue;
    const Val xv = Eval(*n.kids[k + 1], s);
    const json& x = Need(xv, n.kids[k + 1]->pos);
    if (x.is_null()) continue;
    if (!IsInt(x)) Fail(n.pos, "slice indices must be integers");
    vals[k] = AsInt(x);
    given[k] = true;
  }
  const int64_t step = vals[2];
  if (step == 0) Fail(n.pos, "slice step cannot be zero");
  json items = v.is_string() ? json::array() : v;
  if (!v.is_string() && !v.is_array()) Fail(n.pos, "'" + TypeName(v) + "' cannot be sliced");
  const std::string* str = v.is_string() ? &v.get_ref<const std::string&>() : nullptr;
  const int64_t size = str ? static_cast<int64_t>(str->size()) : static_cast<int64_t>(v.size());
  auto clamp = [&](int64_t i, int64_t lo, int64_t hi) {
    if (i < 0) i += size;
    return std::max(lo, std::min(hi, i));
  };
  int64_t start = given[0] ? clamp(vals[0], step > 0 ? 0 : -1, step > 0 ? size : size - 1)
                           : (step > 0 ? 0 : size - 1);
  int64_t stop = given[1] ? clamp(vals[1], step > 0 ? 0 : -1, step > 0 ? size : size - 1)
                          : (step > 0 ? size : -1);
  std::string out_s;
  json out = json::array();
  for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step) {
    if (str)
      out_s += (*str)[i];
    else
      out.push_back(v[i]);
  }
  return str ? Val::Own(out_s) : Val::Own(std::move(out));
}

}  // namespace

Val Eval(const Node& n, Scope& s) {
  switch (n.kind) {
    case Node::kLiteral:
      return Val::Ref(n.value);
    case Node::kVar: {
      if (const json* v = s.Find(n.name)) return Val::Ref(*v);
      if (n.name == "omit") return Val::Own(kOmitPlaceholder);
      return Val::Undef("undefined variable '" + n.name + "'");
    }
    case Node::kAttr:
      return GetAttr(Eval(*n.kids[0], s), n, n.name);
    case Node::kIndex: {
      Val base = Eval(*n.kids[0], s);
      Val key = Eval(*n.kids[1], s);
      return GetIndex(base, n, Need(key, n.kids[1]->pos));
    }
    case Node::kSlice:
      return EvalSlice(n, s);
    case Node::kList: {
      json out = json::array();
      for (const auto& k : n.kids) out.push_back(Need(Eval(*k, s), k->pos));
      return Val::Own(std::move(out));
    }
    case Node::kDict: {
      json out = json::object();
      for (size_t i = 0; i + 1 < n.kids.size(); i += 2) {
        const Val key = Eval(*n.kids[i], s);
        out[Str(Need(key, n.kids[i]->pos))] = Need(Eval(*n.kids[i + 1], s), n.kids[i + 1]->pos);
      }
      return Val::Own(std::move(out));
    }
    case Node::kNeg:
    case Node::kPos: {
      const Val operand = Eval(*n.kids[0], s);
      const json& v = Need(operand, n.kids[0]->pos);
      if (!IsNum(v))
        Fail(n.pos, "bad operand type for unary " + std::string(n.kind == Node::kNeg ? "-" : "+") +
                        ": '" + TypeName(v) + "'");
      if (n.kind == Node::kPos) return Val::Own(v.is_boolean() ? json(AsInt(v)) : v);
      if (v.is_number_float()) return Val::Own(-v.get<double>());
      if (AsInt(v) == std::numeric_limits<int64_t>::min())
        Fail(n.pos,
             "integer overflow: -(" + std::to_string(AsInt(v)) + ") does not fit in 64 bits");
      return Val::Own(-AsInt(v));
    }
    case Node::kNot:
      return B(!Truthy(Need(Eval(*n.kids[0], s), n.kids[0]->pos)));
    case Node::kAnd:
    case Node::kOr: {
      Val l = Eval(*n.kids[0], s);
      bool t = Truthy(Need(l, n.kids[0]->pos));
      if ((n.kind == Node::kAnd) != t) return l;  // and: falsy left; or: truthy left
      Val r = Eval(*n.kids[1], s);
      Need(r, n.kids[1]->pos);
      return r;
    }
    case Node::kCond: {
      if (Truthy(Need(Eval(*n.kids[1], s), n.kids[1]->pos))) return Eval(*n.kids[0], s);
      if (n.kids[2]) return Eval(*n.kids[2], s);
      return Val::Undef("the inline if has no else and its condition is false");
    }
    case Node::kBinary: {
      Val lv = Eval(*n.kids[0], s);
      Val rv = Eval(*n.kids[1], s);
      const json& l = Need(lv, n.kids[0]->pos);
      const json& r = Need(rv, n.kids[1]->pos);
      const std::string& op = n.name;
      if (op == "==") return B(Equal(l, r));
      if (op == "!=") return B(!Equal(l, r));
      if (op == "<") return B(Compare(l, r, n.pos) < 0);
      if (op == ">") return B(Compare(l, r, n.pos) > 0);
      if (op == "<=") return B(Compare(l, r, n.pos) <= 0);
      if (op == ">=") return B(Compare(l, r, n.pos) >= 0);
      if (op == "in") return B(In(l, r, n.pos));
      if (op == "not in") return B(!In(l, r, n.pos));
      if (op == "~") return Val::Own(Str(l) + Str(r));
      return Arith(op, l, r, n.pos);
    }
    case Node::kTest:
    case Node::kFilter: {
      const auto& table = n.kind == Node::kTest ? Tests() : Filters();
      const Callable& c = table.at(n.name);
      Val subject = Eval(*n.kids[0], s);
      if (subject.undefined && !c.accepts_undefined) Fail(n.kids[0]->pos, subject.why);
      std::vector<Val> positional;
      for (size_t i = 1; i < n.kids.size(); ++i) {
        Val v = Eval(*n.kids[i], s);
        Need(v, n.kids[i]->pos);
        positional.push_back(std::move(v));
      }
      std::vector<std::pair<std::string, Val>> kwargs;
      for (const auto& [name, node] : n.kwargs) {
        Val v = Eval(*node, s);
        Need(v, node->pos);
        kwargs.emplace_back(name, std::move(v));
      }
      Val r = c.fn(subject, BindArgs(c, std::move(positional), std::move(kwargs), n.pos), s);
      if (n.kind == Node::kTest && n.negate) return B(!Truthy(r.j()));
      return r;
    }
    case Node::kCall: {  // range()
      int64_t a[3] = {0, 0, 1};
      std::vector<int64_t> given;
      for (const auto& k : n.kids) {
        const Val arg = Eval(*k, s);
        const json& v = Need(arg, k->pos);
        if (!IsInt(v)) Fail(k->pos, "range() arguments must be integers");
        given.push_back(AsInt(v));
      }
      if (given.size() == 1) {
        a[1] = given[0];
      } else {
        for (size_t i = 0; i < given.size(); ++i) a[i] = given[i];
      }
      if (a[2] == 0) Fail(n.pos, "range() step must not be zero");
      json out = json::array();
      for (int64_t i = a[0]; a[2] > 0 ? i < a[1] : i > a[1]; i += a[2]) {
        if (static_cast<int64_t>(out.size()) >= kMaxRange)
          Fail(n.pos, "range() is longer than " + std::to_string(kMaxRange));
        out.push_back(i);
      }
      return Val::Own(std::move(out));
    }
    case Node::kMethod: {
      Val self = Eval(*n.kids[0], s);
      const json& v = Need(self, n.kids[0]->pos);
      const auto& [on_str, fn] = Methods().at(n.name);
      if (on_str ? !v.is_string() : !v.is_object())
        Fail(n.pos, "'" + TypeName(v) + "' object has no method '" + n.name + "'");
      std::vector<Val> args;
      for (size_t i = 1; i < n.kids.size(); ++i) {
        Val a = Eval(*n.kids[i], s);
        Need(a, n.kids[i]->pos);
        args.push_back(std::move(a));
      }
      if (!n.kwargs.empty()) Fail(n.pos, "method '" + n.name + "' takes no keyword arguments");
      return fn(v, args, n.pos);
    }
  }
  Fail(n.pos, "internal error: unknown expression node");
}

}  // namespace prov::jinja
