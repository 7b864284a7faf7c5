// The outermost frame of every thread provisiond starts: an exception that
// gets this far is logged with the thread's name instead of ending the
// process through std::terminate (a handler's bug must not take every node's
// boot service down with it).
#pragma once

#include <spdlog/spdlog.h>

#include <exception>
#include <utility>

namespace prov {

template <typename Body>
void RunGuarded(const char* thread, Body&& body) noexcept {
  try {
    std::forward<Body>(body)();
  } catch (const std::exception& e) {
    spdlog::critical("{} thread: uncaught exception: {}", thread, e.what());
  } catch (...) {
    spdlog::critical("{} thread: uncaught exception", thread);
  }
}

}  // namespace prov
