// What the store's units (store.cc and store_*.cc) share to reach SQLite
// through db/sql.h: a cached statement held for one use, and the reads
// and binds they all make. Private to the store: nothing outside
// lib/store/store*.cc includes it.
#pragma once

#include <spdlog/spdlog.h>

#include <string_view>

#include "db/sql.h"
#include "store/store.h"

namespace prov {

// One use of a cached statement: reset, its parameters cleared, when the
// scope ends, so the statement is always ready for its next use.
class Store::Stmt {
 public:
  Stmt(Store& store, const char* sql) : s_(store.Prepared(sql)) {}
  ~Stmt() { s_.Reset(); }
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;
  sql::Statement& operator*() { return s_; }
  sql::Statement* operator->() { return &s_; }

 private:
  sql::Statement& s_;
};

// Text; with `null_if_empty`, NULL for "" (a column whose NULL means none,
// like a discovered node's hostname).
inline void BindText(sql::Statement& s, int index, std::string_view value,
                     bool null_if_empty = false) {
  if (null_if_empty && value.empty())
    s.BindNull(index);
  else
    s.Bind(index, value);
}

// One step of a read that answers what it has (a list, a count, a counter):
// true for a row; false at the end, and on a failed step, which is logged
// ("store: `what`: SQLite's message").
inline bool ReadRow(sql::Statement& s, std::string_view what) {
  Result<bool> row = s.Step(what);
  if (!row.ok()) spdlog::warn("store: {}", row.status().message());
  return row.ok() && *row;
}

// Every row of a read whose caller returns a Status, each given to `row`: a
// failed step ends it with its error.
template <typename Fn>
Status ForEachRow(sql::Statement& s, std::string_view what, Fn row) {
  for (;;) {
    Result<bool> more = s.Step(what);
    if (!more.ok()) return more.status();
    if (!*more) return Status::Ok();
    row(s);
  }
}

}  // namespace prov
