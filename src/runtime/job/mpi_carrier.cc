#include "runtime/job/mpi_carrier.h"

#ifdef COMMSIM_HAVE_MPI
#include <mpi.h>

#include <algorithm>
#include <fstream>
#include <set>
#include <vector>

#include "collectives/host/mpi_check.h"
#include "runtime/job/mpi_session.h"

namespace commsim {
namespace {

// Open MPI components of `framework` mapped into this process ("mca_btl_tcp.so" -> "tcp"). Open MPI
// unloads the components it did not select, so for the pml this is the one in use.
std::set<std::string> loaded_components(const std::string& framework) {
  std::set<std::string> out;
  std::ifstream maps("/proc/self/maps");
  const std::string prefix = "mca_" + framework + "_";
  std::string line;
  while (std::getline(maps, line)) {
    const auto slash = line.rfind('/');
    if (slash == std::string::npos) continue;
    const std::string file = line.substr(slash + 1);
    if (file.rfind(prefix, 0) != 0 || !file.ends_with(".so")) continue;
    out.insert(file.substr(prefix.size(), file.size() - prefix.size() - 3));
  }
  return out;
}

// The value of an MPI_T string control variable ("pml" -> "^ucx"), "" when absent. The tool
// interface is optional in MPI and a variable may be unreadable: those failures mean "absent", not
// an error, and are tested in place; the calls that must work go through the check.
std::string control_variable(const char* wanted) {
  int provided = 0;
  if (MPI_T_init_thread(MPI_THREAD_SINGLE, &provided) != MPI_SUCCESS) return {};
  std::string value;
  int n = 0;
  COMMSIM_MPI_CHECK(MPI_T_cvar_get_num(&n));
  for (int i = 0; i < n && value.empty(); ++i) {
    char name[256] = {}, desc[8] = {};
    int name_len = sizeof name, desc_len = sizeof desc, verbosity = 0, bind = 0, scope = 0;
    MPI_Datatype type = MPI_DATATYPE_NULL;
    MPI_T_enum enumtype = MPI_T_ENUM_NULL;
    if (MPI_T_cvar_get_info(i, name, &name_len, &verbosity, &type, &enumtype, desc, &desc_len, &bind, &scope) !=
            MPI_SUCCESS ||
        std::string(name) != wanted || type != MPI_CHAR)
      continue;
    MPI_T_cvar_handle handle = MPI_T_CVAR_HANDLE_NULL;
    int count = 0;
    if (MPI_T_cvar_handle_alloc(i, nullptr, &handle, &count) != MPI_SUCCESS) continue;
    std::vector<char> text(static_cast<std::size_t>(std::max(count, 1)) + 1, '\0');
    if (MPI_T_cvar_read(handle, text.data()) == MPI_SUCCESS) value = text.data();
    COMMSIM_MPI_CHECK(MPI_T_cvar_handle_free(&handle));
    if (value.empty()) value = "(default)";
  }
  COMMSIM_MPI_CHECK(MPI_T_finalize());
  return value;
}

std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
  return s;
}

}  // namespace

std::string mpi_carrier(int nnodes) {
  const std::string library = MpiSession::library_version();  // "Open MPI v4.1.4"
  if (library.find("Open MPI") == std::string::npos) return library;

  const std::set<std::string> pmls = loaded_components("pml");
  std::vector<std::string> pml(pmls.begin(), pmls.end());
  pml.erase(std::remove(pml.begin(), pml.end(), "monitoring"), pml.end());
  if (pml.size() != 1) {
    // Components built into the library: report what was asked for instead.
    const std::string asked_pml = control_variable("pml"), asked_btl = control_variable("btl");
    return library + ": pml setting '" + asked_pml + "', btl setting '" + asked_btl + "'";
  }
  std::string s = library + ": pml " + pml[0];
  if (pml[0] != "ob1") return s;

  // ob1 sends over BTLs: shared memory inside a node, the others between nodes.
  const std::set<std::string> btls = loaded_components("btl");
  const std::string shm = btls.count("vader") ? "vader" : btls.count("sm") ? "sm" : "";
  std::vector<std::string> network;
  for (const std::string& b : btls)
    if (b != "self" && b != "vader" && b != "sm") network.push_back(b);
  const std::string inside = shm.empty() ? join(network) : shm;
  s += ", btl " + inside + " inside a node";
  if (nnodes > 1) s += ", " + (network.empty() ? std::string("none") : join(network)) + " between nodes";
  return s;
}

}  // namespace commsim

#else

namespace commsim {
std::string mpi_carrier(int) {
  return {};
}
}  // namespace commsim

#endif  // COMMSIM_HAVE_MPI
