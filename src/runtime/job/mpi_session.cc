#include "runtime/job/mpi_session.h"

#include <cstdio>
#include <exception>
#include <utility>

#include "model/error.h"
#include "runtime/job/watchdog.h"
#include "runtime/output/run_context.h"

#ifdef COMMSIM_HAVE_MPI
#include <mpi.h>

#include "collectives/host/mpi_check.h"
#endif

namespace commsim {

#ifdef COMMSIM_HAVE_MPI
bool have_mpi() {
  return true;
}

bool mpi_active() {
  int init = 0, fin = 0;
  COMMSIM_MPI_CHECK(MPI_Initialized(&init));
  COMMSIM_MPI_CHECK(MPI_Finalized(&fin));
  return init && !fin;
}

namespace {
// This rank and the job's size; size 1 when MPI is not running (or cannot say).
std::pair<int, int> rank_and_size() noexcept {
  int init = 0, fin = 0, rank = 0, size = 1;
  // Called while handling an error: report and carry on rather than throw from here.
  if (!COMMSIM_MPI_CHECK_NOTHROW(MPI_Initialized(&init)) || !COMMSIM_MPI_CHECK_NOTHROW(MPI_Finalized(&fin)))
    return {0, 1};
  if (!init || fin) return {0, 1};
  if (!COMMSIM_MPI_CHECK_NOTHROW(MPI_Comm_size(MPI_COMM_WORLD, &size)) ||
      !COMMSIM_MPI_CHECK_NOTHROW(MPI_Comm_rank(MPI_COMM_WORLD, &rank)))
    return {0, 1};
  return {rank, size};
}
}  // namespace

void abort_job_on_error() {
  if (rank_and_size().second > 1) {
    std::fflush(stdout);
    std::fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 1);  // does not return
  }
}

void abort_job(std::string_view command, const std::string& cause, int exit_code) {
  const auto [rank, size] = rank_and_size();
  const std::string who = size > 1 ? "rank " + std::to_string(rank) + " (" + local_hostname() + "): " : "";
  std::fprintf(stderr, "commsim %.*s: error: %s%s\n", static_cast<int>(command.size()), command.data(), who.c_str(),
               cause.c_str());
  std::fflush(stderr);
  if (size <= 1) return;
  run_abort_hooks();
  std::fflush(stdout);
  MPI_Abort(MPI_COMM_WORLD, exit_code);  // does not return
}

std::vector<std::string> gather_strings(const std::string& mine) {
  if (!mpi_active()) return {mine};
  int size = 1;
  COMMSIM_MPI_CHECK(MPI_Comm_size(MPI_COMM_WORLD, &size));
  const int len = static_cast<int>(mine.size());
  std::vector<int> lens(static_cast<std::size_t>(size)), at(static_cast<std::size_t>(size), 0);
  COMMSIM_MPI_CHECK(MPI_Allgather(&len, 1, MPI_INT, lens.data(), 1, MPI_INT, MPI_COMM_WORLD));
  for (int r = 1; r < size; ++r) at[r] = at[r - 1] + lens[r - 1];
  std::vector<char> all(static_cast<std::size_t>(at.back() + lens.back()) + 1);
  COMMSIM_MPI_CHECK(
      MPI_Allgatherv(mine.data(), len, MPI_CHAR, all.data(), lens.data(), at.data(), MPI_CHAR, MPI_COMM_WORLD));
  std::vector<std::string> out;
  for (int r = 0; r < size; ++r) out.emplace_back(all.data() + at[r], static_cast<std::size_t>(lens[r]));
  return out;
}

MpiSession::MpiSession(MpiThreads threads) {
  const int wanted = threads == MpiThreads::Multiple ? MPI_THREAD_MULTIPLE : MPI_THREAD_SINGLE;
  if (!mpi_active()) {
    // What MPI provides is checked by whoever needs more than one thread (the watchdog).
    int provided = MPI_THREAD_SINGLE;
    COMMSIM_MPI_CHECK(MPI_Init_thread(nullptr, nullptr, wanted, &provided));
    started_ = true;
  }
  COMMSIM_MPI_CHECK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
  COMMSIM_MPI_CHECK(MPI_Comm_rank(MPI_COMM_WORLD, &rank_));
  COMMSIM_MPI_CHECK(MPI_Comm_size(MPI_COMM_WORLD, &size_));
  hostnames_ = gather_strings(local_hostname());
}

MpiSession::~MpiSession() {
  // While an error unwinds in a job of several ranks, the others may be waiting in MPI for this one
  // and MPI_Finalize could wait for them forever: MPI stays up for main to MPI_Abort the job.
  if (std::uncaught_exceptions() > 0 && size_ > 1) return;
  int fin = 0;
  if (started_ && COMMSIM_MPI_CHECK_NOTHROW(MPI_Finalized(&fin)) && !fin) COMMSIM_MPI_CHECK_NOTHROW(MPI_Finalize());
}

std::string MpiSession::library_version() {
  char text[MPI_MAX_LIBRARY_VERSION_STRING] = {};
  int len = 0;
  COMMSIM_MPI_CHECK(MPI_Get_library_version(text, &len));
  std::string v(text, static_cast<std::size_t>(len > 0 ? len : 0));
  if (const auto cut = v.find_first_of("\n,"); cut != std::string::npos) v.resize(cut);
  while (!v.empty() && (v.back() == ' ' || v.back() == '\0')) v.pop_back();
  return v;
}

#else
bool have_mpi() {
  return false;
}
bool mpi_active() {
  return false;
}
void abort_job_on_error() {}
void abort_job(std::string_view command, const std::string& cause, int) {
  std::fprintf(stderr, "commsim %.*s: error: %s\n", static_cast<int>(command.size()), command.data(), cause.c_str());
  std::fflush(stderr);
}
std::vector<std::string> gather_strings(const std::string& mine) {
  return {mine};
}

MpiSession::MpiSession(MpiThreads) : hostnames_{local_hostname()} {}
MpiSession::~MpiSession() = default;
std::string MpiSession::library_version() {
  return {};
}
#endif

std::string MpiSession::first_error(const std::string& mine) const {
  const std::vector<std::string> all = gather_strings(mine);
  for (std::size_t r = 0; r < all.size(); ++r)
    if (!all[r].empty())
      return "rank " + std::to_string(r) + " (" + (r < hostnames_.size() ? hostnames_[r] : "") + "): " + all[r];
  return "";
}

std::string MpiSession::agree(const std::function<void()>& step) const {
  std::string mine;
  try {
    step();
  } catch (const std::exception& e) {
    mine = e.what();
    if (mine.empty()) mine = "error";
  }
  return first_error(mine);
}

}  // namespace commsim
