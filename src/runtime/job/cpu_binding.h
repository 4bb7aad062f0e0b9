#pragma once
// Which CPUs each rank may run on (its affinity, as mpirun --bind-to or srun --cpu-bind set it),
// recorded with every run: a host-memory collective's time depends on whether the ranks keep their
// cores, share them, or wander between them.
#include <string>
#include <string_view>
#include <vector>

namespace commsim {

// The CPUs this process may run on (sched_getaffinity), as a list like "0-3,8,10-11"; "" where the
// system does not say.
std::string cpus_of_this_process();
// The number of CPUs online on this host (0 where the system does not say).
int cpus_online();

// "0-3,8" <-> {0, 1, 2, 3, 8}. parse_cpu_list throws Error on anything else (empty text: no CPUs).
std::vector<int> parse_cpu_list(std::string_view text);
std::string format_cpu_list(std::vector<int> cpus);

// One rank's view: its host, the CPUs it may run on and how many the host has online.
struct RankCpus {
  std::string host;
  std::string cpus;  // a list as above; "" unknown
  int online = 0;    // 0 unknown
};

struct BindingSummary {
  std::string text;  // for the run's header, e.g. "each rank bound to its own CPU"
  // Non-empty when more ranks share a host's CPUs than it has (they take turns, and the times
  // include the waiting): what to do about it.
  std::string oversubscribed;
};

// How the ranks were bound, host by host (the same words for all hosts are said once).
BindingSummary summarize_binding(const std::vector<RankCpus>& ranks);

// Every rank's CPUs (collective over MPI_COMM_WORLD; this process alone without MPI), with
// `hosts` (one per rank) the summary: `cpus` gets one list per rank, in rank order.
BindingSummary gather_binding(const std::vector<std::string>& hosts, std::vector<std::string>& cpus);

}  // namespace commsim
