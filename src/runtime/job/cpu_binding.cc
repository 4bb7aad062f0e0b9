#include "runtime/job/cpu_binding.h"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <map>
#include <set>

#include "model/error.h"
#include "runtime/job/mpi_session.h"

namespace commsim {

std::string cpus_of_this_process() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) != 0) return "";
  std::vector<int> cpus;
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &set)) cpus.push_back(c);
  return format_cpu_list(std::move(cpus));
}

int cpus_online() {
  const long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? static_cast<int>(n) : 0;
}

std::vector<int> parse_cpu_list(std::string_view text) {
  std::vector<int> out;
  auto bad = [&] { return Error("'" + std::string(text) + "' is not a CPU list (e.g. 0-3,8)"); };
  auto number = [&](std::string_view s) {
    if (s.empty() || s.size() > 7 || s.find_first_not_of("0123456789") != std::string_view::npos) throw bad();
    return std::stoi(std::string(s));
  };
  std::size_t pos = 0;
  while (pos < text.size()) {
    const std::size_t comma = std::min(text.find(',', pos), text.size());
    const std::string_view item = text.substr(pos, comma - pos);
    const std::size_t dash = item.find('-');
    const int lo = number(item.substr(0, dash));
    const int hi = dash == std::string_view::npos ? lo : number(item.substr(dash + 1));
    if (hi < lo) throw bad();
    for (int c = lo; c <= hi; ++c) out.push_back(c);
    pos = comma + 1;
    if (comma + 1 == text.size()) throw bad();  // a trailing comma
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::string format_cpu_list(std::vector<int> cpus) {
  std::sort(cpus.begin(), cpus.end());
  cpus.erase(std::unique(cpus.begin(), cpus.end()), cpus.end());
  std::string out;
  for (std::size_t i = 0; i < cpus.size();) {
    std::size_t j = i;
    while (j + 1 < cpus.size() && cpus[j + 1] == cpus[j] + 1) ++j;
    if (!out.empty()) out += ',';
    out += std::to_string(cpus[i]);
    if (j > i) {
      out += '-';
      out += std::to_string(cpus[j]);
    }
    i = j + 1;
  }
  return out;
}

namespace {

std::string plural(std::size_t n, const char* one, const char* many) {
  return std::to_string(n) + " " + (n == 1 ? one : many);
}

// The words for one host's ranks; `over` is set when they outnumber the CPUs they may use.
std::string describe_host(const std::vector<const RankCpus*>& ranks, std::string& over) {
  std::vector<std::vector<int>> sets;
  for (const RankCpus* r : ranks) {
    if (r->cpus.empty()) return "not known (the system does not say)";
    sets.push_back(parse_cpu_list(r->cpus));
  }
  std::set<int> all;
  std::size_t shared = 0, unbound = 0, lo = sets.front().size(), hi = lo;
  std::map<int, int> users;
  for (std::size_t i = 0; i < sets.size(); ++i) {
    all.insert(sets[i].begin(), sets[i].end());
    lo = std::min(lo, sets[i].size());
    hi = std::max(hi, sets[i].size());
    if (ranks[i]->online > 0 && static_cast<int>(sets[i].size()) >= ranks[i]->online) ++unbound;
    for (int c : sets[i]) ++users[c];
  }
  for (const auto& [cpu, n] : users) shared += n > 1 ? 1 : 0;
  if (ranks.size() > all.size())
    over = plural(ranks.size(), "rank", "ranks") + " on " + plural(all.size(), "CPU", "CPUs");
  std::string each = plural(lo, "CPU", "CPUs");
  if (lo != hi) each = std::to_string(lo) + " to " + plural(hi, "CPU", "CPUs");
  if (unbound == ranks.size())
    return "not bound: each rank may run on any of the host's " + plural(all.size(), "CPU", "CPUs") +
           " (the system may move it; mpirun --bind-to core or srun --cpu-bind=cores keeps each on one core)";
  if (shared == 0)
    return hi == 1 ? "each rank bound to its own CPU" : "each rank bound to its own " + each;
  return "ranks bound to " + each + " each, " + plural(shared, "CPU", "CPUs") + " shared between ranks";
}

}  // namespace

BindingSummary summarize_binding(const std::vector<RankCpus>& ranks) {
  std::map<std::string, std::vector<const RankCpus*>> by_host;
  std::vector<std::string> order;
  for (const RankCpus& r : ranks) {
    auto [it, added] = by_host.try_emplace(r.host);
    if (added) order.push_back(r.host);
    it->second.push_back(&r);
  }
  BindingSummary s;
  std::vector<std::pair<std::string, std::string>> words;  // host, description
  for (const std::string& host : order) {
    std::string over;
    words.emplace_back(host, describe_host(by_host[host], over));
    if (!over.empty()) {
      if (!s.oversubscribed.empty()) s.oversubscribed += "; ";
      s.oversubscribed += over + " of host " + host;
    }
  }
  if (words.empty()) return s;
  const bool same = std::all_of(words.begin(), words.end(), [&](const auto& w) { return w.second == words[0].second; });
  if (same) {
    s.text = words[0].second;
    if (words.size() > 1) s.text += " (all " + std::to_string(words.size()) + " hosts)";
  } else {
    for (const auto& [host, text] : words) s.text += (s.text.empty() ? "" : "; ") + host + ": " + text;
  }
  if (!s.oversubscribed.empty())
    s.oversubscribed += ": ranks take turns on a CPU and the times include the waiting; start at most one rank per CPU";
  return s;
}

BindingSummary gather_binding(const std::vector<std::string>& hosts, std::vector<std::string>& cpus) {
  cpus = gather_strings(cpus_of_this_process());
  const std::vector<std::string> online = gather_strings(std::to_string(cpus_online()));
  std::vector<RankCpus> ranks;
  for (std::size_t r = 0; r < cpus.size(); ++r)
    ranks.push_back({r < hosts.size() ? hosts[r] : std::string(), cpus[r], std::stoi(online[r])});
  return summarize_binding(ranks);
}

}  // namespace commsim
