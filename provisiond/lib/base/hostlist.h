// Hostlists in the syntax of pdsh, clush and Slurm: "node[0-3,7],gpu[01-04]",
// several bracket groups per name ("rack[1-2]-n[1-4]") expand as a product.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"

namespace prov {

// Largest number of names one hostlist may expand to; guards against
// "n[0-999999999]" eating the daemon's memory.
inline constexpr size_t kMaxHostlistNames = 100000;

// Expands `text` to its names, in order, duplicates removed. Errors name the
// offending position ("hostlist 'n[3-1]': range 3-1 is reversed at column 3").
// More than `max_names` names is an error (the fuzz target passes a small
// bound: the same checks, at a cost per input it can afford).
Result<std::vector<std::string>> ExpandHostlist(std::string_view text,
                                                size_t max_names = kMaxHostlistNames);

// The inverse: folds names with a common prefix and numeric suffix into
// ranges ("node0,node1,node2,gpu7" -> "gpu7,node[0-2]"). Names are sorted.
std::string CompressHostlist(std::vector<std::string> names);

// True when `text` uses hostlist syntax (brackets or commas) rather than
// naming a single node.
bool IsHostlist(std::string_view text);

}  // namespace prov
