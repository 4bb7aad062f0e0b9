#include "runtime/h5/resume_check.h"

#include "model/error.h"
#include "runtime/h5/probe_file.h"
#include "runtime/h5/results_file.h"

namespace commsim {

void check_resumable(const std::string& path, const RunContext& ctx) {
  const ResultsContents old = read_results(path, false);  // first: it tries the file in a forked copy
  if (has_probe_group(path))
    throw Error("cannot resume " + path +
                ": it is a probe file (it has /probe); --resume continues the results of "
                "commsim run");
  for (const RunContext& r : old.runs) {
    const std::string run = "cannot resume " + path + ": its run " + std::to_string(r.index) + " used ";
    const std::string advice = "; continue it with the same options, or write a new file";
    auto differ = [&](const char* what, const std::string& theirs, const std::string& ours) {
      if (theirs != ours) throw Error(run + what + " '" + theirs + "', this run uses '" + ours + "'" + advice);
    };
    differ("backend", r.backend, ctx.backend);
    differ("transport", r.transport, ctx.transport);
    differ("topology", r.topology_name, ctx.topology_name);
    if (r.topology_text != ctx.topology_text)
      throw Error(run + "another version of topology '" + r.topology_name + "' (" + r.topology_path + ")" + advice);
    // Files written before commsim recorded the settings cannot be checked for them.
    if (!r.measure_settings.empty()) differ("--dtype/--op", r.measure_settings, ctx.measure_settings);
    differ("--piece-size", std::to_string(r.piece_bytes.value_or(0)), std::to_string(ctx.piece_bytes.value_or(0)));
  }
}

}  // namespace commsim
