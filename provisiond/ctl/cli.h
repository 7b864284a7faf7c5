// provisionctl's command line, generated from the verb table (verb.h):
// CLI11 subcommands with the table's synopsis, summary and description as
// their help, the long-form `provisionctl doc`, and the run itself.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace prov::ctl {

// Where a run reads and writes; main() passes the process's own.
struct Io {
  std::istream& in;
  std::ostream& out;
  std::ostream& err;
  bool interactive;  // `in` is a terminal, so a verb may ask a question
};

// Parses argv, runs the verb and returns the exit status: 0 done, 1 failed,
// 2 usage (including every CLI11 parse error). Never throws.
int RunCli(int argc, const char* const* argv, const Io& io);

// Every command at length: synopsis, summary, description with examples and
// options, after the global options, environment and exit status. `app` is
// the command line RunCli built.
std::string RenderDoc(const CLI::App& app);

// What may come next on a command line (the bash completion's source:
// scripts/completion/provisionctl): `words` are the words after
// `provisionctl` and its global `options` (--url and the like), the last one
// being completed (maybe empty). Prints one
// candidate a line: nouns and verbs, the options of the command named so far
// (and the global ones), and for a verb's positional the names provisiond
// has (nodes, profile versions, images) when a token is at hand.
int Complete(const std::vector<std::string>& options, const std::vector<std::string>& words,
             const Io& io);

}  // namespace prov::ctl
