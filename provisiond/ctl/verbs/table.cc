// The verb table: every noun's verbs in the order help and doc list them.
#include "table.h"

namespace prov::ctl {

const std::vector<Verb>& Verbs() {
  static const std::vector<Verb> verbs = [] {
    std::vector<Verb> all;
    for (auto nouns :
         {StatusVerbs, PreflightVerbs, NodeVerbs, ImageVerbs, ProfileVerbs, SecretVerbs,
          EventsVerbs, RunVerbs, CmdVerbs, WaitVerbs, PlaybookVerbs, ExportVerbs, DocVerbs})
      for (const Verb& verb : nouns()) all.push_back(verb);
    return all;
  }();
  return verbs;
}

}  // namespace prov::ctl
