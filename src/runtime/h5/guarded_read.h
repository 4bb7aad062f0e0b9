#pragma once
// Reading a file that may be damaged without trusting libhdf5 to survive it. The readers check
// what they can before use (schema and version attributes, 1-D tables, sample ranges inside
// /samples, run indices, known names: results_file.cc, probe_file.cc), but some damage (a global
// heap object whose recorded size is 2^63-1, a B-tree that points into itself) makes libhdf5
// itself crash or loop. So a reader first runs in a forked copy of this process: when that copy
// dies of a signal (in the read, or when it then collects libhdf5's free lists, which a damaged
// file can break without a crash at first) or does not finish in time, the file is reported as
// damaged and never read here; when it throws, its message is thrown here.
#include <functional>
#include <string>

namespace commsim::h5 {

// Runs `read` in a forked child, which reads `path` and exits. Returns when the child finished
// without an error (the caller then reads the file for real); throws Error naming `path` when the
// child threw (its message), died of a signal, or ran longer than a limit that grows with the
// file's size (10 s + 1 s per 10 MB), or when the file changed (inode, size or modification time)
// while the child read it. Called inside such a child (a guarded read within a guarded read), it
// runs `read` directly: the outer child is the one checked.
void read_in_child_first(const std::string& path, const std::function<void()>& read);

}  // namespace commsim::h5
