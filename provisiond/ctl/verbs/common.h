// What the verbs share: the API's paths, failing with a message a user can
// act on, --json, and Ctrl-C while a verb waits on provisiond.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <memory>
#include <string>

#include "../verb.h"

namespace prov::ctl {

// The API's root: every path a verb asks for starts with it.
inline const std::string kApi = "/api/v1";

// Long polls of GET /events (events --follow, image build) wait this long
// for an event.
inline constexpr long kEventWaitS = 25;

// kApi + "/nodes/<node>", the node's name or MAC encoded.
std::string NodePath(const std::string& node);

// Milliseconds of the steady clock, for deadlines and elapsed times.
int64_t SteadyMs();

// Prints a failed request's message after `prefix`, with a hint where the fix
// is on our side of the wire (the token), and returns kExitFailed.
int Fail(Context& ctx, const Status& s, const std::string& prefix = "");

// Prints "provisionctl: <message>" and where help is on ctx.err, and returns
// kExitUsage.
int UsageError(Context& ctx, const std::string& message);

// The API's reply as one line (--json).
void PrintJson(Context& ctx, const nlohmann::json& j);

// Declares --json, which prints the API's reply instead of text.
void AddJsonFlag(CLI::App& command, Args& args);

// While alive, the first Ctrl-C sets interrupted() and abandons the client's
// request in flight, so a loop that waits on provisiond stops cleanly; the
// previous SIGINT handler comes back afterwards. One scope at a time.
class InterruptScope {
 public:
  explicit InterruptScope(Client& client);
  ~InterruptScope();
  InterruptScope(const InterruptScope&) = delete;
  InterruptScope& operator=(const InterruptScope&) = delete;

  bool interrupted() const;

 private:
  struct Saved;  // the SIGINT handler before this scope
  Client& client_;
  std::unique_ptr<Saved> saved_;
};

}  // namespace prov::ctl
