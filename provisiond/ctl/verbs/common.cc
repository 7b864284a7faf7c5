#include "common.h"

#include <signal.h>
#include <CLI/CLI.hpp>

#include <atomic>
#include <chrono>
#include <ostream>

namespace prov::ctl {
namespace {

// Set by SIGINT while an InterruptScope is alive; the client polls it.
std::atomic<bool> g_interrupted{false};
static_assert(std::atomic<bool>::is_always_lock_free);
extern "C" void OnInterrupt(int) {
  g_interrupted.store(true);
}

}  // namespace

std::string NodePath(const std::string& node) {
  return kApi + "/nodes/" + UrlEncode(node);
}

int64_t SteadyMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

int Fail(Context& ctx, const Status& s, const std::string& prefix) {
  ctx.err << "provisionctl: " << prefix << s.message() << "\n";
  if (s.code() == Code::kUnauthorized)
    ctx.err << (ctx.token_source.empty()
                    ? "provisionctl: give a token with --token-file FILE or PROVISIOND_TOKEN "
                      "(provisiond writes one to <data_dir>/tokens on first start)\n"
                    : "provisionctl: the token from " + ctx.token_source +
                          " is not in provisiond's tokens file\n");
  return kExitFailed;
}

int UsageError(Context& ctx, const std::string& message) {
  ctx.err << "provisionctl: " << message << "\nRun with --help for more information.\n";
  return kExitUsage;
}

void PrintJson(Context& ctx, const nlohmann::json& j) {
  ctx.out << j.dump() << "\n";
}

void AddJsonFlag(CLI::App& command, Args& args) {
  command.add_flag("--json", args.json, "Print the API's JSON reply instead of text");
}

struct InterruptScope::Saved {
  struct sigaction action {};
};

InterruptScope::InterruptScope(Client& client)
    : client_(client), saved_(std::make_unique<Saved>()) {
  g_interrupted.store(false);
  struct sigaction sa {};
  sa.sa_handler = &OnInterrupt;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, &saved_->action);
  client_.set_cancel_flag(&g_interrupted);
}

InterruptScope::~InterruptScope() {
  client_.set_cancel_flag(nullptr);
  sigaction(SIGINT, &saved_->action, nullptr);
}

bool InterruptScope::interrupted() const {
  return g_interrupted.load();
}

}  // namespace prov::ctl
