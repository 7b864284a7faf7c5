// Status and Result<T>: expected failures as values (unknown node, bad MAC,
// invalid YAML). Exceptions are reserved for broken invariants and are caught
// at the edges (API handler, CLI verb, main).
#pragma once

#include <cassert>
#include <optional>
#include <string>
#include <utility>

namespace prov {

// What went wrong, in terms a caller can map to an exit code or HTTP status.
enum class Code {
  kOk = 0,
  kInvalid,       // bad input: the message says what and where
  kNotFound,      // the named thing does not exist
  kConflict,      // it exists already, or the change is not allowed now
  kUnauthorized,  // no or unknown token
  kForbidden,     // a token, but not the right one
  kUnavailable,   // a peer (provisiond, dnsmasq, a node) did not answer
  kInternal,      // a bug or an I/O failure of our own
};

class [[nodiscard]] Status {
 public:
  Status() = default;
  static Status Ok() { return Status(); }
  static Status Error(Code code, std::string message) {
    assert(code != Code::kOk);
    return Status(code, std::move(message));
  }
  static Status Invalid(std::string m) { return Error(Code::kInvalid, std::move(m)); }
  static Status NotFound(std::string m) { return Error(Code::kNotFound, std::move(m)); }
  static Status Conflict(std::string m) { return Error(Code::kConflict, std::move(m)); }
  static Status Internal(std::string m) { return Error(Code::kInternal, std::move(m)); }

  bool ok() const { return code_ == Code::kOk; }
  Code code() const { return code_; }
  const std::string& message() const { return message_; }

 private:
  Status(Code code, std::string message) : code_(code), message_(std::move(message)) {}
  Code code_ = Code::kOk;
  std::string message_;
};

// A value or the Status that explains why there is none.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : value_(std::move(value)) {}  // NOLINT: implicit by design
  Result(Status status) : status_(std::move(status)) { assert(!status_.ok()); }  // NOLINT

  bool ok() const { return value_.has_value(); }
  const Status& status() const { return status_; }
  T& value() & {
    assert(ok());
    return *value_;
  }
  const T& value() const& {
    assert(ok());
    return *value_;
  }
  T&& value() && {
    assert(ok());
    return std::move(*value_);
  }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T&& operator*() && { return std::move(*this).value(); }

 private:
  std::optional<T> value_;
  Status status_;
};

}  // namespace prov
