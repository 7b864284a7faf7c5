// The syntax tree of an expression (internal to playbook/jinja/): what the
// parser builds and the evaluator walks.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "playbook/jinja/value.h"

namespace prov::jinja {

struct Node;
using NodeP = std::unique_ptr<Node>;

struct Node {
  enum Kind {
    kLiteral,
    kVar,
    kAttr,   // kids[0].name
    kIndex,  // kids[0][kids[1]]
    kSlice,  // kids[0][kids[1]:kids[2]:kids[3]], absent parts null
    kList,
    kDict,  // kids: key, value, key, value, ...
    kNeg,
    kPos,
    kNot,
    kBinary,  // name is the operator
    kAnd,
    kOr,
    kTest,    // kids[0] is ..., name, kids[1..] args
    kFilter,  // kids[0] | name(kids[1..])
    kCall,    // name(kids...)
    kMethod,  // kids[0].name(kids[1..])
    kCond,    // kids[0] if kids[1] else kids[2] (null: undefined)
  };
  Kind kind;
  size_t pos;
  json value;
  std::string name;
  std::string path;  // "a.b[0]" for variables, used in messages
  std::vector<NodeP> kids;
  std::vector<std::pair<std::string, NodeP>> kwargs;
  bool negate = false;
};

inline NodeP MakeNode(Node::Kind kind, size_t pos) {
  auto n = std::make_unique<Node>();
  n->kind = kind;
  n->pos = pos;
  return n;
}

}  // namespace prov::jinja
