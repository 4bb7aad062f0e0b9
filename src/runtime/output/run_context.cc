#include "runtime/output/run_context.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <ctime>
#include <string_view>

extern char** environ;

namespace commsim {
namespace {

// Variables that decide what a measurement means (library tuning, launcher, placement).
constexpr std::string_view kPrefixes[] = {"NCCL_", "UCX_", "OMPI_", "SLURM_"};
constexpr std::string_view kExactNames[] = {"CUDA_VISIBLE_DEVICES"};
// Never stored, even under a kept prefix: results files are shared.
constexpr std::string_view kSecretMarks[] = {"TOKEN", "SECRET", "PASSWORD", "PASSWD", "JWT", "CREDENTIAL"};

bool keep_variable(std::string_view key) {
  bool kept = std::any_of(std::begin(kPrefixes), std::end(kPrefixes), [&](std::string_view p) { return key.starts_with(p); }) ||
              std::find(std::begin(kExactNames), std::end(kExactNames), key) != std::end(kExactNames);
  if (!kept) return false;
  return std::none_of(std::begin(kSecretMarks), std::end(kSecretMarks),
                      [&](std::string_view m) { return key.find(m) != std::string_view::npos; });
}

std::string env_or_empty(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

bool needs_quotes(std::string_view arg) {
  if (arg.empty()) return true;
  for (char ch : arg) {
    bool plain = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
                 std::string_view("-_./:=,+@%").find(ch) != std::string_view::npos;
    if (!plain) return true;
  }
  return false;
}

}  // namespace

std::string iso8601_utc_now() {
  std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &utc);
  return buf;
}

std::string join_command_line(int argc, const char* const* argv) {
  std::string out;
  for (int i = 0; i < argc; ++i) {
    std::string_view arg = argv[i] ? argv[i] : "";
    if (i) out += ' ';
    if (!needs_quotes(arg)) {
      out += arg;
      continue;
    }
    out += '\'';
    for (char ch : arg) {
      if (ch == '\'')
        out += "'\\''";
      else
        out += ch;
    }
    out += '\'';
  }
  return out;
}

std::string local_hostname() {
  char buf[256] = {};
  if (gethostname(buf, sizeof buf - 1) != 0) return "";
  return buf;
}

std::vector<std::string> selected_environment() {
  std::vector<std::string> out;
  for (char** e = environ; e && *e; ++e) {
    std::string_view kv = *e;
    auto eq = kv.find('=');
    if (eq == std::string_view::npos) continue;
    if (keep_variable(kv.substr(0, eq))) out.emplace_back(kv);
  }
  std::sort(out.begin(), out.end());
  return out;
}

SlurmContext slurm_from_environment() {
  SlurmContext s;
  s.job_id = env_or_empty("SLURM_JOB_ID");
  if (s.job_id.empty()) s.job_id = env_or_empty("SLURM_JOBID");
  s.array_job_id = env_or_empty("SLURM_ARRAY_JOB_ID");
  s.array_task_id = env_or_empty("SLURM_ARRAY_TASK_ID");
  s.node_list = env_or_empty("SLURM_JOB_NODELIST");
  if (s.node_list.empty()) s.node_list = env_or_empty("SLURM_NODELIST");
  s.partition = env_or_empty("SLURM_JOB_PARTITION");
  s.cluster = env_or_empty("SLURM_CLUSTER_NAME");
  return s;
}

RunContext RunContext::collect_local(int argc, const char* const* argv) {
  RunContext c;
  c.command_line = join_command_line(argc, argv);
  // Commands receive argv starting at their own name ("predict ..."): say which program it was.
  if (argc > 0 && argv[0] && std::string_view(argv[0]).find("commsim") == std::string_view::npos)
    c.command_line = "commsim " + c.command_line;
  c.commsim_version = COMMSIM_VERSION;
  c.started = iso8601_utc_now();
  c.hostnames = {local_hostname()};
  c.ranks = 1;
  c.nodes = 1;
  c.environment = selected_environment();
  c.slurm = slurm_from_environment();
  return c;
}

}  // namespace commsim
