// Which runner a playbook runs on. provisiond has two behind one interface:
// its native runner (playbook.h: a subset of Ansible, in about 0.02 of its
// time, tests/bench/playbook_bench.sh) and Debian's ansible-playbook (all of Ansible). A playbook
// runs natively when it loads there, under Ansible when it does not, with the native loader's
// refusal as the reason; a profile entry (`runner:`) or `provisionctl playbook run --runner` can
// force either. A playbook neither accepts is refused before any node runs it, with Ansible's own
// error.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "base/result.h"
#include "playbook/playbook.h"

namespace prov {

enum class PlaybookRunner { kAuto, kNative, kAnsible };

const char* ToString(PlaybookRunner r);
// "auto", "native" or "ansible".
Result<PlaybookRunner> ParsePlaybookRunner(const std::string& text);

struct RunnerChoice {
  PlaybookRunner runner = PlaybookRunner::kNative;  // never kAuto
  bool forced = false;                              // the profile entry or the run said which
  // Why this runner: "loads natively", "forced by runner: ansible", or the
  // native loader's first refusal ("file:line:col: ...").
  std::string reason;
  std::shared_ptr<const Playbook> native;  // set when runner is kNative
};

// Where ansible-playbook is, and what it sees besides the playbook: the
// ansible_* settings, given to each unit that runs or checks playbooks.
struct AnsibleTool {
  std::string program = "/usr/bin/ansible-playbook";
  std::string roles_path;  // extra roles folders (':'-separated), after <playbook dir>/roles
  // Ansible's interpreter_python: auto_silent (discovery) or a path.
  std::string python_interpreter = "auto_silent";
};

// Chooses the runner for the playbook at `path`, from what `files` holds
// (no I/O: ParsePlaybook): native when the native loader takes it (roles
// looked up in `roles_path` too), ansible-playbook otherwise, or the one
// `wanted` forces. Runs no program: whether Ansible accepts it is
// CheckWithAnsible's to say.
Result<RunnerChoice> ChoosePlaybookRunner(FileSet& files, const std::string& path,
                                          PlaybookRunner wanted,
                                          const std::string& roles_path = "");
// The same, the playbook and what it reaches read from disk first.
Result<RunnerChoice> ReadAndChoosePlaybookRunner(const std::string& path, PlaybookRunner wanted,
                                                 const std::string& roles_path = "");

// Ansible's verdict on a choice: a native one needs none; one on
// ansible-playbook is checked with `ansible-playbook --syntax-check` (roles,
// includes and vars files it names resolved as a run would), its refusal
// quoted as Ansible gave it, beside the native loader's when the choice was
// not forced. A forced choice on a control node without Ansible passes
// unchecked, its reason saying so (the Debian package does not pull Ansible
// in; the run says it is missing); an unforced one fails, as nothing else can
// judge it. Takes seconds: callers run it when a playbook is about to be used
// (plan, apply, bake, `playbook check`, `provisiond --check`), not when it is
// listed.
Status CheckWithAnsible(const std::string& path, RunnerChoice& choice, const AnsibleTool& tool);

// `ansible-playbook --syntax-check` of `path`: OK, or Invalid with Ansible's
// own message (its warnings left out).
Status AnsibleSyntaxCheck(const std::string& path, const AnsibleTool& tool);

// The controller-side files a playbook run by Ansible can reach, by
// Ansible's layout beside it: every file in the playbook's folder and,
// recursively, in its roles/, tasks/, handlers/, vars/, defaults/,
// templates/, files/, group_vars/, host_vars/, library/, module_utils/ and
// filter_plugins/ folders. Sorted; hidden files left out. From `files` (its
// Tree of the playbook's folder).
std::vector<std::string> AnsibleReachedFiles(FileSet& files, const std::string& path);

}  // namespace prov
