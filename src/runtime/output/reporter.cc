// Shared helpers of the reporters, the CSV and JSON encodings, and the trivial reporters.
#include "runtime/output/reporter.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <ostream>

#include "model/error.h"
#include "runtime/h5/results_file.h"

namespace commsim {
namespace {

// Shortest text that reads back as the same double.
std::string number(double v) {
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, r.ptr);
}

std::string cell(double v) { return std::isfinite(v) ? number(v) : std::string(); }

}  // namespace

std::string_view to_string(OutputFormat f) {
  switch (f) {
    case OutputFormat::Table: return "table";
    case OutputFormat::Csv: return "csv";
    case OutputFormat::Json: return "json";
  }
  return "?";
}

std::vector<std::string> csv_cells(const Point& p) {
  return {
      std::string(to_string(p.collective)),
      std::string(to_string(p.algorithm)),
      p.backend,
      std::string(to_string(p.protocol)),
      p.dtype,
      std::to_string(p.nodes),
      std::to_string(p.ranks),
      std::to_string(p.bytes),
      cell(p.predicted_us),
      cell(p.predicted_busbw_gbps),
      cell(p.measured_median_us),
      cell(p.measured_p95_us),
      cell(p.algbw_gbps),
      cell(p.busbw_gbps),
      cell(p.rel_error),
      p.wrong < 0 ? std::string() : std::to_string(p.wrong),
      p.status,
      // extras
      p.transport,
      p.redop,
      std::to_string(p.count),
      std::to_string(p.root),
      std::to_string(p.pipeline_chunk_bytes),
      p.iters > 0 ? std::to_string(p.iters) : std::string(),
      cell(p.measured_min_us),
      cell(p.measured_mean_us),
      cell(p.measured_max_us),
      p.predicted_winner,
      p.note,
      p.nccl_algo,
      p.nccl_proto,
      p.nccl_channels > 0 ? std::to_string(p.nccl_channels) : std::string(),
  };
}

std::string csv_quote(std::string_view field) {
  if (field.find_first_of(",\"\r\n") == std::string_view::npos) return std::string(field);
  std::string out = "\"";
  for (char ch : field) {
    if (ch == '"') out += '"';
    out += ch;
  }
  out += '"';
  return out;
}

std::string json_string(std::string_view s) {
  std::string out = "\"";
  for (unsigned char ch : s) {
    switch (ch) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (ch < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", ch);
          out += buf;
        } else {
          out += static_cast<char>(ch);
        }
    }
  }
  out += '"';
  return out;
}

std::string json_number(double v) { return std::isfinite(v) ? number(v) : std::string("null"); }

namespace {

// Builds one JSON object field by field.
class JsonObject {
 public:
  JsonObject& raw(std::string_view key, const std::string& value) {
    out_ += first_ ? "{" : ",";
    first_ = false;
    out_ += json_string(key);
    out_ += ':';
    out_ += value;
    return *this;
  }
  JsonObject& str(std::string_view key, std::string_view v) { return raw(key, json_string(v)); }
  JsonObject& num(std::string_view key, double v) { return raw(key, json_number(v)); }
  JsonObject& integer(std::string_view key, long long v) { return raw(key, std::to_string(v)); }
  JsonObject& strings(std::string_view key, const std::vector<std::string>& v) {
    std::string a = "[";
    for (std::size_t i = 0; i < v.size(); ++i) {
      if (i) a += ',';
      a += json_string(v[i]);
    }
    return raw(key, a + "]");
  }
  std::string done() { return first_ ? "{}" : out_ + "}"; }

 private:
  std::string out_;
  bool first_ = true;
};

}  // namespace

std::string point_json(const Point& p, bool with_samples) {
  JsonObject o;
  o.str("collective", to_string(p.collective))
      .str("algorithm", to_string(p.algorithm))
      .str("backend", p.backend)
      .str("transport", p.transport)
      .str("protocol", to_string(p.protocol))
      .str("dtype", p.dtype)
      .str("redop", p.redop)
      .integer("nodes", p.nodes)
      .integer("ranks", p.ranks)
      .integer("bytes", static_cast<long long>(p.bytes))
      .integer("count", static_cast<long long>(p.count))
      .integer("root", p.root)
      .integer("pipeline_chunk_bytes", static_cast<long long>(p.pipeline_chunk_bytes))
      .num("predicted_us", p.predicted_us)
      .num("predicted_busbw_gbps", p.predicted_busbw_gbps)
      .str("predicted_winner", p.predicted_winner)
      .integer("iters", p.iters)
      .num("measured_min_us", p.measured_min_us)
      .num("measured_median_us", p.measured_median_us)
      .num("measured_mean_us", p.measured_mean_us)
      .num("measured_p95_us", p.measured_p95_us)
      .num("measured_max_us", p.measured_max_us)
      .num("algbw_gbps", p.algbw_gbps)
      .num("busbw_gbps", p.busbw_gbps)
      .num("rel_error", p.rel_error)
      .raw("wrong", p.wrong < 0 ? std::string("null") : std::to_string(p.wrong))
      .str("status", p.status)
      .str("note", p.note)
      .str("nccl_algo", p.nccl_algo)
      .str("nccl_proto", p.nccl_proto)
      .integer("nccl_channels", p.nccl_channels);
  if (with_samples) {
    std::string a = "[";
    for (std::size_t i = 0; i < p.samples_us.size(); ++i) {
      if (i) a += ',';
      a += json_number(p.samples_us[i]);
    }
    o.raw("samples_us", a + "]");
  }
  return o.done();
}

std::string context_json(const RunContext& c) {
  JsonObject slurm;
  slurm.str("job_id", c.slurm.job_id)
      .str("array_job_id", c.slurm.array_job_id)
      .str("array_task_id", c.slurm.array_task_id)
      .str("node_list", c.slurm.node_list)
      .str("partition", c.slurm.partition)
      .str("cluster", c.slurm.cluster);
  JsonObject o;
  o.str("command_line", c.command_line)
      .str("commsim_version", c.commsim_version)
      .str("started", c.started)
      .strings("hostnames", c.hostnames)
      .integer("ranks", c.ranks)
      .integer("nodes", c.nodes)
      .strings("cpus", c.cpus)
      .str("cpu_binding", c.cpu_binding)
      .str("backend", c.backend)
      .str("transport", c.transport)
      .str("mpi_version", c.mpi_version)
      .str("nccl_version", c.nccl_version)
      .str("cuda_version", c.cuda_version)
      .str("ucx_version", c.ucx_version)
      .strings("gpu_names", c.gpu_names)
      .strings("environment", c.environment)
      .raw("slurm", slurm.done())
      .str("topology_name", c.topology_name)
      .str("topology_path", c.topology_path)
      .str("topology_text", c.topology_text);
  if (c.index >= 0) o.integer("index", c.index).str("status", c.status).str("finished", c.finished);
  return o.done();
}

// ---- CSV

CsvReporter::CsvReporter(std::ostream& out) : out_(out) {
  bool first = true;
  for (auto c : kCsvColumns) {
    out_ << (first ? "" : ",") << c;
    first = false;
  }
  for (auto c : kCsvExtraColumns) out_ << ',' << c;
  out_ << '\n';
  out_.flush();
}

void CsvReporter::point(const Point& p) {
  std::string line;
  bool first = true;
  for (const std::string& c : csv_cells(p)) {
    if (!first) line += ',';
    line += csv_quote(c);
    first = false;
  }
  line += '\n';
  out_ << line;
  out_.flush();
}

// ---- JSON

JsonReporter::JsonReporter(std::ostream& out, bool with_samples) : out_(out), with_samples_(with_samples) {}

void JsonReporter::open() {
  if (opened_) return;
  out_ << "{\"context\":null,\"points\":[";
  opened_ = true;
}

void JsonReporter::context(const RunContext& ctx) {
  if (opened_) return;  // only the first context names the document's
  out_ << "{\"context\":" << context_json(ctx) << ",\"points\":[";
  opened_ = true;
  out_.flush();
}

void JsonReporter::point(const Point& p) {
  open();
  out_ << (points_ ? ",\n" : "\n") << point_json(p, with_samples_);
  ++points_;
  out_.flush();
}

void JsonReporter::note(std::string_view text) { notes_.emplace_back(text); }

void JsonReporter::finalize() {
  if (finalized_) return;
  open();
  out_ << "\n]";
  if (!notes_.empty()) {
    out_ << ",\"notes\":[";
    for (std::size_t i = 0; i < notes_.size(); ++i) out_ << (i ? "," : "") << json_string(notes_[i]);
    out_ << "]";
  }
  out_ << "}\n";
  out_.flush();
  finalized_ = true;
}

// ---- HDF5

Hdf5Reporter::Hdf5Reporter(ResultsFile& file) : file_(file) {}
void Hdf5Reporter::point(const Point& p) { file_.append(p); }

// ---- fan-out

void MultiReporter::add(std::unique_ptr<Reporter> r) {
  if (r) reporters_.push_back(std::move(r));
}
void MultiReporter::context(const RunContext& ctx) {
  for (auto& r : reporters_) r->context(ctx);
}
void MultiReporter::point(const Point& p) {
  for (auto& r : reporters_) r->point(p);
}
void MultiReporter::note(std::string_view text) {
  for (auto& r : reporters_) r->note(text);
}
void MultiReporter::finalize() {
  for (auto& r : reporters_) r->finalize();
}

std::unique_ptr<Reporter> make_console_reporter(OutputFormat format, std::ostream& out,
                                                TableReporter::Columns columns) {
  switch (format) {
    case OutputFormat::Table: return std::make_unique<TableReporter>(out, columns);
    case OutputFormat::Csv: return std::make_unique<CsvReporter>(out);
    case OutputFormat::Json: return std::make_unique<JsonReporter>(out);
  }
  throw Error("unknown output format");
}

}  // namespace commsim
