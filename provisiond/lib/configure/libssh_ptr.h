// Owners for libssh's handles: each freed exactly once, whatever path leaves.
#pragma once

#include <libssh/libssh.h>

#include <memory>
#include <type_traits>

namespace prov {

struct SshSessionFree {
  void operator()(ssh_session s) const {
    if (ssh_is_connected(s)) ssh_disconnect(s);
    ssh_free(s);
  }
};
using SessionPtr = std::unique_ptr<std::remove_pointer_t<ssh_session>, SshSessionFree>;

struct SshChannelFree {
  void operator()(ssh_channel c) const { ssh_channel_free(c); }
};
using ChannelPtr = std::unique_ptr<std::remove_pointer_t<ssh_channel>, SshChannelFree>;

struct SshKeyFree {
  void operator()(ssh_key k) const { ssh_key_free(k); }
};
using KeyPtr = std::unique_ptr<std::remove_pointer_t<ssh_key>, SshKeyFree>;

}  // namespace prov
