// Each noun's verbs with their help text, one file per noun; table.cc
// gathers them, in this order, into the one verb table (Verbs()).
#pragma once

#include <vector>

#include "../verb.h"

namespace prov::ctl {

std::vector<Verb> StatusVerbs();     // status
std::vector<Verb> PreflightVerbs();  // preflight
std::vector<Verb> NodeVerbs();       // node list|show|why|add|set|power|rm
std::vector<Verb> ImageVerbs();      // image list|show|build|import|verify|rm
std::vector<Verb> ProfileVerbs();    // profile list|show|plan|apply
std::vector<Verb> SecretVerbs();     // secret list|set|rm
std::vector<Verb> EventsVerbs();     // events
std::vector<Verb> RunVerbs();        // run list|show|logs
std::vector<Verb> CmdVerbs();        // cmd
std::vector<Verb> WaitVerbs();       // wait
std::vector<Verb> PlaybookVerbs();   // playbook run
std::vector<Verb> ExportVerbs();     // export
std::vector<Verb> DocVerbs();        // doc

}  // namespace prov::ctl
