#include "cli.h"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <functional>
#include <istream>
#include <map>
#include <memory>
#include <ostream>
#include <set>
#include <sstream>

#include "base/file_util.h"
#include "settings.h"
#include "verb.h"

namespace prov::ctl {
namespace {

constexpr const char* kAbout =
    "provisionctl: the command line of provisiond (nodes, power, images, profiles, events)";

constexpr const char* kEnvironment =
    R"(provisionctl talks to provisiond over its REST API (HTTP) and never opens the
database. Every command sends a bearer token: a `read` token shows, an `admin`
token also changes.

Environment:
  PROVISIOND_URL    provisiond's base URL (default http://127.0.0.1:8080); --url wins.
                    Off the control node use its HTTPS listener, https://<host>:8443:
                    its certificate is pinned on first use (as ssh pins host keys) in
                    ~/.config/provisionctl/known_servers (PROVISIONCTL_KNOWN_SERVERS)
  PROVISIOND_TOKEN  API token; --token-file wins
  PROVISIOND_CA_FILE, PROVISIOND_FINGERPRINT  as --ca-file, --fingerprint

Config file: ~/.config/provisionctl/config (PROVISIONCTL_CONFIG names another), lines of
`key: value` with the keys url, token_file, ca_file and fingerprint, for what no flag or
environment variable gives.

Exit status: 0 done, 1 failed (provisiond said no, or cannot be reached), 2 usage error,
130 stopped following with Ctrl-C (image build; the build goes on).)";

// The words of a verb's path: "node list" -> {"node", "list"}.
std::vector<std::string> Words(const char* path) {
  std::istringstream in(path);
  std::vector<std::string> words;
  for (std::string w; in >> w;) words.push_back(w);
  return words;
}

// The subcommand a verb's path leads to, or null.
const CLI::App* Find(const CLI::App& app, const Verb& verb) {
  const CLI::App* at = &app;
  for (const auto& w : Words(verb.path)) {
    auto subs = at->get_subcommands([&](const CLI::App* s) { return s->get_name() == w; });
    if (subs.empty()) return nullptr;
    at = subs.front();
  }
  return at;
}

std::string Indent(const std::string& text, const std::string& by) {
  std::string out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out += line.empty() ? "\n" : by + line + "\n";
  return out;
}

// "  synopsis\n      summary" for every verb.
std::string CommandList() {
  std::string out = "Commands:\n";
  for (const auto& v : Verbs())
    out += "  provisionctl " + std::string(v.synopsis) + "\n      " + v.summary + "\n";
  return out;
}

// CLI11's help, with the table's synopsis as the usage line of each verb.
class Formatter : public CLI::Formatter {
 public:
  explicit Formatter(std::shared_ptr<std::map<const CLI::App*, const Verb*>> verbs)
      : verbs_(std::move(verbs)) {}
  std::string make_usage(const CLI::App* app, std::string name) const override {
    auto it = verbs_->find(app);
    if (it == verbs_->end()) return CLI::Formatter::make_usage(app, std::move(name));
    return "Usage: provisionctl " + std::string(it->second->synopsis) + "\n";
  }

 private:
  std::shared_ptr<std::map<const CLI::App*, const Verb*>> verbs_;
};

// One subcommand per verb, nested under its noun ("node", "profile"); the
// table's options bound to `args`. Returns each verb's subcommand.
std::map<const CLI::App*, const Verb*> BuildCli(CLI::App& app, GlobalArgs& global, Args& args) {
  auto verbs = std::make_shared<std::map<const CLI::App*, const Verb*>>();
  // Subcommands copy their parent's formatter and footer when created: the
  // formatter goes first, the root's footer last.
  app.formatter(std::make_shared<Formatter>(verbs));
  app.require_subcommand(1);
  app.set_version_flag("--version", "provisionctl " PROVISION_VERSION);
  app.add_option("--url", global.url,
                 "provisiond's base URL; several, comma-separated, for control nodes sharing one "
                 "inventory (the one that answers is used)")
      ->type_name("URL")
      ->envname("PROVISIOND_URL")
      ->capture_default_str();
  app.add_option("--token-file", global.token_file,
                 "File with the API token (its first non-comment word)")
      ->type_name("FILE");
  app.add_option("--ca-file", global.ca_file,
                 "https: verify provisiond's certificate against this CA (PEM) instead of pinning")
      ->type_name("FILE")
      ->envname("PROVISIOND_CA_FILE");
  app.add_option("--fingerprint", global.fingerprint,
                 "https: require this SHA-256 certificate fingerprint (AB:CD:...)")
      ->type_name("SHA256")
      ->envname("PROVISIOND_FINGERPRINT");
  app.fallthrough();  // global options may follow the verb

  std::map<std::string, std::vector<std::string>> nouns;  // noun -> its verbs
  for (const auto& verb : Verbs()) {
    std::vector<std::string> words = Words(verb.path);
    CLI::App* parent = &app;
    for (size_t i = 0; i + 1 < words.size(); ++i) {
      auto found = parent->get_subcommands([&](CLI::App* s) { return s->get_name() == words[i]; });
      if (found.empty()) {
        parent = parent->add_subcommand(words[i]);
        parent->require_subcommand(1);
        parent->fallthrough();
      } else {
        parent = found.front();
      }
    }
    if (words.size() > 1 && std::find(nouns[words.front()].begin(), nouns[words.front()].end(),
                                      words[1]) == nouns[words.front()].end())
      nouns[words.front()].push_back(words[1]);
    CLI::App* command = parent->add_subcommand(words.back(), verb.summary);
    command->footer(verb.description);
    command->fallthrough();
    verb.bind(*command, args);
    (*verbs)[command] = &verb;
  }
  for (const auto& [noun, subs] : nouns) {
    std::string list;
    for (const auto& s : subs) list += (list.empty() ? "" : ", ") + s;
    app.get_subcommand(noun)->description(noun + " commands: " + list);
  }
  app.footer(CommandList() + "\n" + kEnvironment +
             "\n\n'provisionctl doc' describes every command at length.");
  return *verbs;
}

// The options of `command` as help lines, without --help.
std::string OptionLines(const CLI::App& command) {
  CLI::Formatter f;
  f.column_width(28);
  std::string out;
  for (const CLI::Option* opt : command.get_options()) {
    if (opt == command.get_help_ptr()) continue;
    out += f.make_option(opt, opt->get_positional() && !opt->nonpositional());
  }
  return out;
}

Result<std::string> ReadToken(const GlobalArgs& global, std::string& source) {
  if (!global.token_file.empty()) {
    auto text = ReadFile(global.token_file);
    if (!text.ok()) return text.status();
    source = "--token-file " + global.token_file;
    return ParseTokenFile(*text, global.token_file);
  }
  const char* env = getenv("PROVISIOND_TOKEN");
  std::istringstream words(env ? env : "");
  std::string token;
  if (words >> token) source = "PROVISIOND_TOKEN";
  return token;
}

// Edit distance, for "did you mean".
size_t Distance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] != b[j - 1] ? 1 : 0)});
      diagonal = up;
    }
  }
  return row[b.size()];
}

// The choice nearest to `word` (a prefix of it, or at most two edits away),
// or "".
std::string Nearest(const std::string& word, const std::vector<std::string>& choices) {
  std::string best;
  size_t best_distance = 3;
  for (const auto& c : choices) {
    if (c.rfind(word, 0) == 0 && word.size() >= 2) return c;
    size_t d = Distance(word, c);
    if (d < best_distance && d < c.size()) best = c, best_distance = d;
  }
  return best;
}

// The command words of argv (global options and their values skipped), up
// to the first two.
std::vector<std::string> CommandWords(int argc, const char* const* argv) {
  std::vector<std::string> words;
  for (int i = 1; i < argc && words.size() < 2; ++i) {
    std::string a = argv[i];
    if (a == "--") break;
    if (a.rfind("-", 0) == 0) {
      if (a.find('=') == std::string::npos &&
          (a == "--url" || a == "--token-file" || a == "--ca-file" || a == "--fingerprint"))
        ++i;
      if (words.empty()) continue;
      break;  // a verb's own options follow its words
    }
    words.push_back(a);
  }
  return words;
}

// Before CLI11: no command, an unknown noun or verb, or a noun without its
// verb get the commands they could have meant rather than "A subcommand is
// required". Returns -1 when the words are fine.
int CheckCommandWords(int argc, const char* const* argv, const Io& io) {
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--help" || a == "-h" || a == "--version") return -1;
  }
  std::map<std::string, std::vector<std::string>> verbs_of;  // "" holds the top level
  std::map<std::string, std::string> synopsis;
  for (const auto& v : Verbs()) {
    auto w = Words(v.path);
    auto& top = verbs_of[""];
    if (std::find(top.begin(), top.end(), w.front()) == top.end()) top.push_back(w.front());
    // The word after the noun: a verb, or the group of a verb of three
    // words ("node storage wipe").
    if (w.size() > 1) {
      auto& subs = verbs_of[w.front()];
      if (std::find(subs.begin(), subs.end(), w[1]) == subs.end()) subs.push_back(w[1]);
    }
    synopsis[v.path] = v.synopsis;
  }
  const auto words = CommandWords(argc, argv);
  auto list = [&](const std::string& noun) {
    std::string out;
    for (const auto& v : Verbs())
      if (noun.empty() || Words(v.path).front() == noun)
        out += "  provisionctl " + std::string(v.synopsis) + "\n";
    return out;
  };
  if (words.empty()) {
    io.err << "provisionctl: which command? (provisionctl --help describes them)\n" << list("");
    return kExitUsage;
  }
  const auto& top = verbs_of[""];
  if (std::find(top.begin(), top.end(), words[0]) == top.end()) {
    std::string near = Nearest(words[0], top);
    io.err << "provisionctl: unknown command '" << words[0] << "'"
           << (near.empty() ? "" : "; did you mean '" + near + "'?") << "\n";
    if (near.empty()) io.err << "Commands:\n" << list("");
    return kExitUsage;
  }
  auto nested = verbs_of.find(words[0]);
  if (nested == verbs_of.end() || nested->second.empty()) return -1;  // a verb of one word
  if (words.size() < 2) {
    io.err << "provisionctl " << words[0] << ": which one?\n" << list(words[0]);
    return kExitUsage;
  }
  const auto& subs = nested->second;
  if (std::find(subs.begin(), subs.end(), words[1]) == subs.end()) {
    std::string near = Nearest(words[1], subs);
    io.err << "provisionctl " << words[0] << ": unknown command '" << words[1] << "'"
           << (near.empty() ? "" : "; did you mean '" + words[0] + " " + near + "'?") << "\n"
           << words[0] << " commands:\n"
           << list(words[0]);
    return kExitUsage;
  }
  return -1;
}

// What neither a flag nor the environment gave (`given` says which did)
// comes from the config file.
void FillFromSettings(const Settings& settings, GlobalArgs& global,
                      const std::function<bool(const char*)>& given) {
  if (!settings.url.empty() && !given("--url")) global.url = settings.url;
  if (!settings.ca_file.empty() && !given("--ca-file")) global.ca_file = settings.ca_file;
  if (!settings.fingerprint.empty() && !given("--fingerprint"))
    global.fingerprint = settings.fingerprint;
  if (!settings.token_file.empty() && global.token_file.empty() && !getenv("PROVISIOND_TOKEN"))
    global.token_file = settings.token_file;
}

ClientOptions ClientOptionsOf(const GlobalArgs& global, const std::string& token,
                              std::ostream* notices) {
  ClientOptions options;
  options.url = global.url;
  options.token = token;
  options.ca_file = global.ca_file;
  options.fingerprint = global.fingerprint;
  options.notices = notices;
  return options;
}

// The names a verb's positional takes, from provisiond (when a token is at
// hand; nothing otherwise): nodes, profile versions or image names by the
// verb's noun.
std::vector<std::string> TargetNames(const Verb& verb, const GlobalArgs& global) {
  const std::string noun = Words(verb.path).front();
  std::string path, list, key;
  if (noun == "profile") {
    path = "/api/v1/profiles", list = "profiles", key = "version";
  } else if (noun == "image") {
    path = "/api/v1/images", list = "images", key = "name";
  } else if (noun == "node" || noun == "cmd" || noun == "gather" || noun == "wait") {
    path = "/api/v1/nodes?limit=1000", list = "nodes", key = "hostname";
  } else {
    return {};
  }
  std::string source;
  auto token = ReadToken(global, source);
  if (!token.ok() || token->empty()) return {};
  std::ostringstream notices;
  Client client(ClientOptionsOf(global, *token, &notices));
  auto r = client.Get(path, 5);
  std::vector<std::string> names;
  if (!r.ok() || !r->contains(list) || !(*r)[list].is_array()) return names;
  for (const auto& item : (*r)[list])
    if (item.is_object() && item.contains(key) && item[key].is_string())
      names.push_back(item[key].get<std::string>());
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  return names;
}

}  // namespace

int Complete(const std::vector<std::string>& options, const std::vector<std::string>& words,
             const Io& io) {
  CLI::App app{kAbout, "provisionctl"};
  GlobalArgs global;
  Args args;
  auto verbs = BuildCli(app, global, args);
  // The global options before __complete (and the environment) as RunCli
  // parses them, with `doc`, a verb of no arguments, to complete the line;
  // then the config file for the rest.
  std::vector<const char*> argv = {"provisionctl"};
  for (const auto& o : options) argv.push_back(o.c_str());
  argv.push_back("doc");
  try {
    app.parse(static_cast<int>(argv.size()), argv.data());
  } catch (const CLI::ParseError&) {
    return kExitOk;  // a broken line: nothing to offer
  }
  if (auto settings = LoadSettings(); settings.ok())
    FillFromSettings(*settings, global,
                     [&app](const char* option) { return app.get_option(option)->count() > 0; });
  const std::string current = words.empty() ? "" : words.back();
  // Down the commands the words so far name; an option's value is skipped.
  const CLI::App* at = &app;
  const Verb* verb = nullptr;
  bool positional_given = false;
  auto all = [](const CLI::App*) { return true; };
  for (size_t i = 0; i + 1 < words.size(); ++i) {
    const std::string& w = words[i];
    if (w.rfind("-", 0) == 0) {
      const CLI::Option* opt = nullptr;
      try {
        opt = at->get_option_no_throw(w.substr(0, w.find('=')));
      } catch (...) {
      }
      if (opt && opt->get_type_size() != 0 && w.find('=') == std::string::npos) ++i;
      continue;
    }
    const CLI::App* next = nullptr;
    for (const CLI::App* sub : at->get_subcommands(all))
      if (sub->get_name() == w) next = sub;
    if (next) {
      at = next;
      auto found = verbs.find(next);
      if (found != verbs.end()) verb = found->second;
    } else if (verb) {
      positional_given = true;
    }
  }
  std::vector<std::string> candidates;
  if (current.rfind("-", 0) == 0) {
    for (const CLI::App* a : {at, static_cast<const CLI::App*>(&app)}) {
      for (const CLI::Option* opt : a->get_options())
        for (const auto& name : opt->get_lnames()) candidates.push_back("--" + name);
      if (a == &app) break;
    }
  } else if (!at->get_subcommands(all).empty()) {
    for (const CLI::App* sub : at->get_subcommands(all)) candidates.push_back(sub->get_name());
  } else if (verb && !positional_given) {
    candidates = TargetNames(*verb, global);
  }
  std::set<std::string> said;
  for (const auto& c : candidates)
    if (c.rfind(current, 0) == 0 && said.insert(c).second) io.out << c << "\n";
  return kExitOk;
}

std::string RenderDoc(const CLI::App& app) {
  std::string out = std::string(kAbout) + "\n\n" + kEnvironment + "\n\nGlobal options:\n";
  CLI::Formatter f;
  f.column_width(28);
  for (const CLI::Option* opt : app.get_options())
    if (opt != app.get_help_ptr()) out += f.make_option(opt, false);
  for (const auto& verb : Verbs()) {
    out += "\n\nprovisionctl " + std::string(verb.synopsis) + "\n";
    out += "    " + std::string(verb.summary) + ".\n\n";
    out += Indent(verb.description, "    ");
    if (const CLI::App* command = Find(app, verb)) {
      std::string options = OptionLines(*command);
      if (!options.empty()) out += "\n    Options:\n" + Indent(options, "    ");
    }
  }
  return out;
}

int RunCli(int argc, const char* const* argv, const Io& io) {
  CLI::App app{kAbout, "provisionctl"};
  GlobalArgs global;
  Args args;
  std::map<const CLI::App*, const Verb*> verbs;
  // The shell's completion asks: provisionctl [GLOBAL OPTIONS] __complete
  // WORD... CURRENT.
  for (int i = 1; i < argc; ++i)
    if (std::string(argv[i]) == "__complete")
      return Complete(std::vector<std::string>(argv + 1, argv + i),
                      std::vector<std::string>(argv + i + 1, argv + argc), io);
  if (int status = CheckCommandWords(argc, argv, io); status >= 0) return status;
  try {
    verbs = BuildCli(app, global, args);
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e, io.out, io.err) == 0 ? kExitOk : kExitUsage;
  }
  // What neither a flag nor the environment gave comes from the config file.
  auto settings = LoadSettings();
  if (!settings.ok()) {
    io.err << "provisionctl: " << settings.status().message() << "\n";
    return kExitUsage;
  }
  FillFromSettings(*settings, global,
                   [&app](const char* option) { return app.get_option(option)->count() > 0; });
  const Verb* verb = nullptr;
  for (const auto& [command, v] : verbs)
    if (command->parsed()) verb = v;
  if (!verb) {  // require_subcommand makes this unreachable; say so rather than crash
    io.err << "provisionctl: no command given\n" << app.help();
    return kExitUsage;
  }

  std::string token_source;
  auto token = ReadToken(global, token_source);
  if (!token.ok()) {
    io.err << "provisionctl: " << token.status().message() << "\n";
    return kExitFailed;
  }
  try {
    Client client(ClientOptionsOf(global, *token, &io.err));
    Context ctx{client, io.in, io.out, io.err, io.interactive, token_source, app};
    return verb->run(ctx, args);
  } catch (const std::exception& e) {
    // Broken invariants only: expected failures come back as Status.
    io.err << "provisionctl: internal error: " << e.what() << "\n";
    return kExitFailed;
  }
}

}  // namespace prov::ctl
