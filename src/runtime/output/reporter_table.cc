// The console table. Reads like nccl-tests' output: one block per collective and rank layout,
// sizes in bytes, time in microseconds, bandwidths in GB/s (1e9 bytes per second).
#include <fmt/format.h>

#include <cmath>
#include <cstdio>
#include <ostream>

#include "runtime/output/caveats.h"
#include "runtime/output/reporter.h"

namespace commsim {
namespace {

// Width of the time columns (us): 99,999,999.99 us (100 s, a GiB over a slow network) still fits.
constexpr int kTimeWidth = 13;

// `cell` right-aligned in `width`, always with a space before it: a value wider than its column
// pushes the row right rather than run into the column before it.
std::string cell(const std::string& cell_text, int width) {
  std::string s = fmt::format("{:>{}}", cell_text, width);
  if (s.size() >= static_cast<std::size_t>(width) && (s.empty() || s.front() != ' ')) s.insert(0, " ");
  return s;
}

// A right-aligned number, or "N/A" (as nccl-tests prints) when there is none.
std::string num(double v, int width, int precision) {
  if (!std::isfinite(v)) return cell("N/A", width);
  return cell(fmt::format("{:.{}f}", v, precision), width);
}

bool has_root(Collective c) {
  return c == Collective::Broadcast || c == Collective::Reduce;
}

std::string text(std::string_view s, int width) {
  return cell(std::string(s), width);
}

}  // namespace

TableReporter::TableReporter(std::ostream& out, Columns columns) : out_(out), columns_(columns) {}

TableReporter::~TableReporter() {
  flush_size();
}

void TableReporter::context(const RunContext& c) {
  out_ << "# commsim " << c.commsim_version << ": " << c.command_line << '\n';
  if (!c.topology_name.empty()) {
    out_ << "# topology " << c.topology_name;
    if (!c.topology_path.empty()) out_ << " (" << c.topology_path << ")";
    out_ << '\n';
  }
  if (c.backend != "model") {
    out_ << "# backend " << c.backend;
    if (!c.transport.empty()) out_ << ", transport " << c.transport;
    out_ << ", " << c.ranks << " ranks on " << c.nodes << (c.nodes == 1 ? " node" : " nodes");
    if (!c.mpi_version.empty()) out_ << "; " << c.mpi_version;
    if (!c.nccl_version.empty()) out_ << "; NCCL " << c.nccl_version;
    if (!c.cuda_version.empty()) out_ << "; CUDA " << c.cuda_version;
    out_ << '\n';
    if (!c.cpu_binding.empty()) out_ << "# cpus: " << c.cpu_binding << '\n';
  }
  if (!c.slurm.job_id.empty())
    out_ << "# slurm job " << c.slurm.job_id << (c.slurm.array_task_id.empty() ? "" : "_" + c.slurm.array_task_id)
         << ", partition " << c.slurm.partition << ", nodes " << c.slurm.node_list << '\n';
  out_.flush();
}

void TableReporter::group_header(const Point& p) {
  std::string group = std::string(to_string(p.collective)) + "|" + p.backend + "|" + p.transport + "|" +
                      std::to_string(p.nodes) + "|" + std::to_string(p.ranks) + "|" + p.dtype + "|" + p.timing;
  if (group == group_) return;
  flush_size();
  group_ = group;
  out_ << "#\n# " << to_string(p.collective) << ": " << p.nodes << (p.nodes == 1 ? " node" : " nodes");
  if (p.nodes > 0 && p.ranks % p.nodes == 0)
    out_ << " x " << p.ranks / p.nodes << " ranks = " << p.ranks << (p.ranks == 1 ? " rank" : " ranks");
  else
    out_ << ", " << p.ranks << " ranks";
  out_ << ", backend " << p.backend;
  if (!p.transport.empty()) out_ << " over " << p.transport;
  if (p.timing == "nccl-tests") out_ << ", timed as nccl-tests (iterations back to back)";
  out_ << '\n';
  if (columns_ == Columns::Predicted) {
    out_ << "#" << text("size", 12) << text("count", 14) << text("type", 10) << text("redop", 7)
         << text("algorithm", 20) << text("proto", 7) << text("time", kTimeWidth) << text("algbw", 9)
         << text("busbw", 9) << "  winner\n";
    out_ << "#" << text("(B)", 12) << text("(elements)", 14) << text("", 10) << text("", 7) << text("", 20)
         << text("", 7) << text("(us)", kTimeWidth) << text("(GB/s)", 9) << text("(GB/s)", 9) << "  (predicted)\n";
  } else {
    out_ << "#" << text("size", 12) << text("count", 14) << text("type", 10) << text("redop", 7) << text("root", 6)
         << text("algorithm", 20) << text("proto", 7) << text("time", kTimeWidth) << text("algbw", 9)
         << text("busbw", 9) << text("spread", 8) << text("#wrong", 8) << text("predicted", kTimeWidth)
         << text("rel.err", 9) << "  winner               status\n";
    out_ << "#" << text("(B)", 12) << text("(elements)", 14) << text("", 10) << text("", 7) << text("", 6)
         << text("", 20) << text("", 7) << text("(us)", kTimeWidth) << text("(GB/s)", 9) << text("(GB/s)", 9)
         << text("p95/med", 8) << text("", 8) << text("(us)", kTimeWidth) << text("(%)", 9)
         << "  (predicted|fastest)\n";
  }
}

void TableReporter::point(const Point& p) {
  group_header(p);
  std::string_view proto = to_string(p.protocol);
  std::string line = " ";
  line += text(std::to_string(p.bytes), 12);
  line += text(std::to_string(p.count), 14);
  line += text(p.dtype, 10);
  line += text(p.redop, 7);
  // nccl-tests prints -1 for the collectives without a root.
  if (columns_ == Columns::Measured) line += text(std::to_string(has_root(p.collective) ? p.root : -1), 6);
  line += text(to_string(p.algorithm), 20);
  line += text(proto.empty() ? "-" : proto, 7);
  if (columns_ == Columns::Predicted) {
    double algbw = p.predicted_us > 0 ? static_cast<double>(p.bytes) / p.predicted_us / 1e3 : kNaN;
    line += num(p.predicted_us, kTimeWidth, 2) + num(algbw, 9, 2) + num(p.predicted_busbw_gbps, 9, 2) + "  " +
            p.predicted_winner;
  } else {
    line += num(p.measured_median_us, kTimeWidth, 2) + num(p.algbw_gbps, 9, 2) + num(p.busbw_gbps, 9, 2) +
            text(spread_text(spread_of(p)), 8) + text(p.wrong < 0 ? "N/A" : std::to_string(p.wrong), 8) +
            num(p.predicted_us, kTimeWidth, 2) +
            (std::isfinite(p.rel_error) ? text(fmt::format("{:+.1f}", p.rel_error * 100.0), 9) : text("N/A", 9));
    if (p.measured()) {
      if (p.wrong < 0)
        unchecked_ = true;
      else
        wrong_total_ += p.wrong;
      if (std::isfinite(p.busbw_gbps)) {
        busbw_sum_gbps_ += p.busbw_gbps;
        ++busbw_rows_;
      }
    }
    // The winner marks wait until every algorithm of this size has run (flush_size).
    if (!size_rows_.empty() && size_rows_.front().second.bytes != p.bytes) flush_size();
    size_rows_.emplace_back(line, p);
    return;
  }
  out_ << line << '\n';
  out_.flush();
}

// The rows of one size, each marked where the model picked it ("predicted": its predicted_winner)
// and where it measured fastest among the rows measured ok (when two or more were).
void TableReporter::flush_size() {
  const Point* fastest = nullptr;
  int measured = 0;
  for (const auto& [line, p] : size_rows_) {
    if (p.status != "ok" || !p.measured()) continue;
    ++measured;
    if (!fastest || p.measured_median_us < fastest->measured_median_us) fastest = &p;
  }
  for (const auto& [line, p] : size_rows_) {
    const bool picked = !p.predicted_winner.empty() && p.predicted_winner == to_string(p.algorithm);
    const bool fast = measured >= 2 && &p == fastest;
    const std::string mark = picked && fast ? "predicted+fastest" : picked ? "predicted" : fast ? "fastest" : "-";
    std::string row = line + "  " + fmt::format("{:<19}", mark) + "  " + p.status;
    if (p.in_place) row += " in-place";
    if (!p.note.empty() && p.status != "ok") row += " (" + p.note + ")";
    out_ << row << '\n';
  }
  size_rows_.clear();
  out_.flush();
}

void TableReporter::note(std::string_view text_line) {
  flush_size();
  out_ << text_line << '\n';
  out_.flush();
}

void TableReporter::finalize() {
  flush_size();
  // nccl-tests' closing lines (src/util.cu, writeResultFooter), which scripts grep for: the wrong
  // elements of every checked row, and the mean busbw of the measured rows.
  if (columns_ == Columns::Measured && busbw_rows_ > 0) {
    const std::string errors = unchecked_ && wrong_total_ == 0
                                   ? std::string("N/A (not checked)")
                                   : fmt::format("{} {}", wrong_total_, wrong_total_ ? "FAILED" : "OK");
    out_ << fmt::format("# {:<20} : {}\n", "Out of bounds values", errors);
    out_ << fmt::format("# {:<20} : {:g} \n", "Avg bus bandwidth", busbw_sum_gbps_ / busbw_rows_);
  }
  out_.flush();
}

}  // namespace commsim
