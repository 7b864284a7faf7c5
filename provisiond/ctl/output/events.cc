#include "events.h"

#include "format.h"

namespace prov::ctl {

std::string RenderEvent(const nlohmann::json& event) {
  std::string who = Str(event, "who");
  return FormatTime(Int(event, "time")) + "  " + Pad(Dash(Str(event, "node")), 10) + "  " +
         Pad(Str(event, "kind"), 15) + "  " + Str(event, "detail") +
         (who.empty() ? "" : " (" + who + ")") + "\n";
}

}  // namespace prov::ctl
