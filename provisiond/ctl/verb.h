// provisionctl's verb table: one entry per verb (the words that select it,
// synopsis, summary, long description with examples, its options, the
// function that runs it). Each noun's verbs sit with their help text in
// verbs/<noun>.cc, and verbs/table.cc gathers them into Verbs(); the command
// line, --help and `provisionctl doc` are all generated from it (cli.cc).
#pragma once

#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "client.h"

namespace CLI {
class App;
}

namespace prov::ctl {

inline constexpr int kExitOk = 0;
inline constexpr int kExitFailed = 1;
inline constexpr int kExitUsage = 2;
inline constexpr int kExitInterrupted = 130;  // 128 + SIGINT, as a shell reports Ctrl-C

// Options that apply to every verb.
struct GlobalArgs {
  std::string url = kDefaultUrl;  // --url, or PROVISIOND_URL
  std::string token_file;         // --token-file
  std::string ca_file;            // --ca-file, or PROVISIOND_CA_FILE
  std::string fingerprint;        // --fingerprint, or PROVISIOND_FINGERPRINT
};

// Everything a verb may be given; each verb binds the fields it uses in its
// table entry and reads only those.
struct Args {
  std::string target;  // the positional: node, hostlist, hostname, image or profile version
  bool json = false;
  std::optional<std::string> state, profile, ip, hostname, reason, host_key;
  std::optional<std::string> power;        // node set --power SPEC
  std::optional<std::string> uefi_loader;  // node add/set --uefi-loader
  std::string action;                      // node power: on, off or cycle
  std::string kernel, initrd;              // image import --kernel, --initrd
  std::string mac;
  bool no_profile = false;
  bool purge = false;
  bool yes = false;
  bool password = false;                // node adopt --password: ask for a one-time password
  std::string node;                     // events --node
  std::optional<int64_t> since;         // events --since
  std::optional<int64_t> boot;          // node console --boot
  int64_t limit = 0;                    // events --limit; 0: the API's default
  bool follow = false;                  // events --follow
  bool no_follow = false;               // image build --no-follow
  std::string user;                     // cmd --user
  int64_t timeout_s = 0;                // cmd, wait, playbook run --timeout
  std::vector<std::string> command;     // cmd -- COMMAND...
  std::string remote_path, local_dir;   // gather
  std::vector<std::string> extra_vars;  // playbook run -e key=value
  std::string playbook;                 // playbook run PLAYBOOK
  std::string runner = "auto";          // playbook run/check --runner
  std::string wait_state = "ready";     // wait --state
  std::string format;                   // export FORMAT
  std::string run_id;                   // run show/logs ID
  bool no_wait = false;                 // profile apply --no-wait
  std::string from_file;                // secret set --from-file
  std::vector<std::string> disks;       // node storage wipe --disk
};

// What a verb runs with. `cli` is the whole command line (for `doc`).
struct Context {
  Client& client;
  std::istream& in;
  std::ostream& out;
  std::ostream& err;
  bool interactive;          // stdin is a terminal: a verb may ask
  std::string token_source;  // where the token came from, for error hints; "" if none
  const CLI::App& cli;
};

struct Verb {
  const char* path;                             // the words that select it: "node list"
  const char* synopsis;                         // "node list [HOSTLIST] [--state STATE] ..."
  const char* summary;                          // one line
  const char* description;                      // paragraphs and examples
  void (*bind)(CLI::App& command, Args& args);  // declares the verb's options
  int (*run)(Context& ctx, const Args& args);   // returns the exit status
};

// Every verb, in the order help and doc list them.
const std::vector<Verb>& Verbs();

}  // namespace prov::ctl
