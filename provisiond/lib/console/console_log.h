// What booting nodes print, kept per node and per boot: the network console.
// The lines come from the node itself (the kernel's netconsole, which also
// carries the initrd's steps and the journal, both written to the kernel
// log) and from provisiond, which adds a line for each boot stage it served
// or saw (Debian's iPXE is built without its syslog console and grub has
// none: what the loader fetched is the loader's trace). Kept in their own SQLite database
// beside the inventory (console.db): a storm of kernel lines never waits on,
// or holds up, the inventory's lock. Bounded per node: the newest boots and
// the newest lines.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "db/sql.h"
#include "store/boot_stage.h"

namespace prov {

struct ConsoleLine {
  int64_t id = 0;
  int64_t node_id = 0;
  int64_t boot = 0;  // the node's boots, counted from 1
  int64_t time_ms = 0;
  // provisiond (a stage of the boot it served: the loader's trace) |
  // kernel | initrd | system
  std::string source;
  std::string text;
  // provisiond's lines: the stage served (not stored; it starts a new boot
  // when it is a loader's stage seen after the kernel).
  std::optional<BootStage> stage = std::nullopt;
};

struct ConsoleRetention {
  int64_t lines_per_node = 5000;  // the newest kept (0: all)
  int64_t boots_per_node = 5;     // the newest boots kept (0: all)
};

// A datagram a node sent, as lines: split at newlines, control characters
// dropped (tabs become spaces), a syslog priority ("<6>") removed, each line
// at most 1,000 bytes, empty lines left out.
std::vector<std::string> ConsoleTextLines(std::string_view datagram);

// Where a line a node sent comes from, by its form: the initrd's steps say
// "provision: ...", the journal's forwarded lines are "ident[pid]: ...",
// everything else is the kernel's. A kernel timestamp ("[    1.234567] ")
// in front is skipped.
std::string ConsoleSource(std::string_view text);

// Which boot a line belongs to, per node: provisiond's lines for the first
// stages of a boot (dhcp, ipxe-binary, shim, grub, grub-config, script: its
// text starts with the stage) come before the node's own, so one after lines
// from the node starts a boot; so does a kernel banner ("Linux version")
// when this boot already had one (a reset provisiond did not see).
struct ConsoleBootState {
  int64_t boot = 0;
  bool past_loader = false;  // lines from the node came in this boot
  bool kernel_seen = false;  // its kernel banner came
};
int64_t AssignBoot(ConsoleBootState& state, const ConsoleLine& line);

class ConsoleLog {
 public:
  // Opens (creating, 0600) the database at `path`; ":memory:" for tests.
  static Result<std::unique_ptr<ConsoleLog>> Open(const std::string& path,
                                                  ConsoleRetention keep = {});
  ~ConsoleLog();
  ConsoleLog(const ConsoleLog&) = delete;
  ConsoleLog& operator=(const ConsoleLog&) = delete;

  // Appends `lines` in one transaction, filling each one's boot and id, and
  // applies the retention to the nodes they belong to.
  Status Append(std::vector<ConsoleLine>& lines);
  // Lines of `node_id`'s boot `boot` (0: its latest) with id > `after`,
  // oldest first, at most `limit`.
  std::vector<ConsoleLine> Lines(int64_t node_id, int64_t boot, int64_t after, int64_t limit);
  // The node's boots still kept, oldest first.
  std::vector<int64_t> Boots(int64_t node_id);
  // The last `count` lines of the node's latest boot, and the last error
  // line of that boot when it is not among them (`error`, id 0 if none).
  std::vector<ConsoleLine> Tail(int64_t node_id, int64_t count, ConsoleLine* error = nullptr);
  // Blocks until a line with id > `after` was appended, `timeout_ms` passed
  // or WakeWaiters was called; false once WakeWaiters was called.
  bool Wait(int64_t after, int64_t timeout_ms);
  void WakeWaiters();
  int64_t LastId();

 private:
  struct Statements;
  ConsoleLog(sql::Database db, ConsoleRetention keep);
  ConsoleBootState& BootState(int64_t node_id);  // under mu_
  Status Prune(int64_t node_id, int64_t boot);   // under mu_

  sql::Database db_;
  std::unique_ptr<Statements> q_;  // prepared at Open; used under mu_
  const ConsoleRetention keep_;
  std::mutex mu_;
  std::condition_variable cv_;
  int64_t last_id_ = 0;                              // guarded by mu_
  bool stopping_ = false;                            // guarded by mu_
  std::map<int64_t, ConsoleBootState> boots_;        // guarded by mu_
  std::map<int64_t, int64_t> appended_since_prune_;  // guarded by mu_
};

}  // namespace prov
