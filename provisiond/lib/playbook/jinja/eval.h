// Evaluating expressions (internal to playbook/jinja/): the scope variables
// are found in, and the tables of filters, tests and methods. The parser
// checks names and argument counts against the same tables, so a typo is a
// load-time error.
#pragma once

#include <cstddef>
#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "playbook/jinja/ast.h"
#include "playbook/jinja/value.h"

namespace prov::jinja {

// The variables: the caller's, under the frames that {% for %} and {% set %}
// add.
struct Scope {
  const json& globals;
  std::deque<json> frames;  // innermost last; a deque keeps references stable

  explicit Scope(const json& g) : globals(g) { frames.emplace_back(json::object()); }

  const json* Find(const std::string& name) const {
    for (auto it = frames.rbegin(); it != frames.rend(); ++it) {
      auto f = it->find(name);
      if (f != it->end()) return &*f;
    }
    if (globals.is_object()) {
      auto f = globals.find(name);
      if (f != globals.end()) return &*f;
    }
    return nullptr;
  }
};

// Arguments of one call, aligned with the callee's parameter names; `rest`
// holds positional arguments past them for variadic callees.
struct Args {
  std::vector<std::optional<Val>> at;
  std::vector<Val> rest;
  size_t pos = 0;

  bool has(size_t i) const { return i < at.size() && at[i].has_value(); }
  const json& get(size_t i, const json& fallback) const {
    if (!has(i)) return fallback;
    return Need(*at[i], pos);
  }
};

using CallFn = std::function<Val(const Val& in, const Args& args, Scope& scope)>;

struct Callable {
  Callable() = default;
  Callable(std::vector<std::string> p, size_t req, bool var, bool undef, CallFn f)
      : params(std::move(p)),
        required(req),
        variadic(var),
        accepts_undefined(undef),
        fn(std::move(f)) {}

  std::vector<std::string> params;  // positional or keyword
  size_t required = 0;
  bool variadic = false;           // extra positional arguments go to Args::rest
  bool accepts_undefined = false;  // default, mandatory, defined, ...
  CallFn fn;
  std::vector<std::string> kwonly;  // keyword-only, after params in Args::at
};

// One table each: filters.cc, tests.cc.
const std::map<std::string, Callable>& Filters();
const std::map<std::string, Callable>& Tests();

// Methods of Python's str and dict that playbooks call ("x.startswith('a')"),
// in methods.cc. The bool says which type owns the method: true for str,
// false for dict.
using MethodFn = std::function<Val(const json& self, const std::vector<Val>& args, size_t pos)>;
const std::map<std::string, std::pair<bool, MethodFn>>& Methods();

Val Eval(const Node& n, Scope& s);

// By name, for filters that apply another filter or a test (map, select).
Val CallTest(const std::string& name, const Val& subject, std::vector<Val> args, size_t pos,
             Scope& scope);
Val CallFilter(const std::string& name, const Val& subject, std::vector<Val> args, size_t pos,
               Scope& scope);

}  // namespace prov::jinja
