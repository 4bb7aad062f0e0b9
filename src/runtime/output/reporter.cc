// Shared helpers of the reporters, the CSV and JSON encodings, and the trivial reporters.
#include "runtime/output/reporter.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <charconv>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <optional>
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

}  // namespace

std::string_view to_string(OutputFormat f) {
  switch (f) {
    case OutputFormat::Table: return "table";
    case OutputFormat::Csv: return "csv";
    case OutputFormat::Json: return "json";
  }
  return "?";
}

namespace {

constexpr bool is_number(ColumnKind k) {
  return k == ColumnKind::I32 || k == ColumnKind::I64 || k == ColumnKind::U64 || k == ColumnKind::F64;
}

// A column's value as text, before CSV quoting or JSON escaping; nullopt for a missing value:
// NaN, a Negative column below 0, and (in CSV only: JSON keeps counts of 0) a NonPositive column
// at or below 0.
template <ColumnKind K, class V>
std::optional<std::string> text_of(const V& v, Missing missing, bool json) {
  if constexpr (K == ColumnKind::Collective || K == ColumnKind::Algorithm || K == ColumnKind::Protocol) {
    return std::string(to_string(v));
  } else if constexpr (!is_number(K)) {
    return v;
  } else if constexpr (K == ColumnKind::F64) {
    if (!std::isfinite(v)) return std::nullopt;
    return number(v);
  } else {
    if ((missing == Missing::Negative && v < 0) || (!json && missing == Missing::NonPositive && v <= 0))
      return std::nullopt;
    return std::to_string(v);
  }
}

template <ColumnKind K, class V>
std::string json_value(const V& v, Missing missing) {
  std::optional<std::string> text = text_of<K>(v, missing, true);
  if (!text) return "null";
  return is_number(K) ? *text : json_string(*text);
}

}  // namespace

std::vector<std::string> csv_cells(const Point& p) {
  std::vector<std::string> cells(kCsvColumnCount);
#define COMMSIM_CSV_CELL(name, kind, length, initial, csv, json, missing, unit, since) \
  if constexpr (csv >= 0) cells[csv] = text_of<ColumnKind::kind>(p.name, Missing::missing, false).value_or("");
#define COMMSIM_CSV_FILE_CELL(name, kind)
  COMMSIM_POINT_COLUMNS(COMMSIM_CSV_CELL, COMMSIM_CSV_FILE_CELL)
#undef COMMSIM_CSV_CELL
#undef COMMSIM_CSV_FILE_CELL
  return cells;
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
  // Invalid UTF-8 (a garbled error message) becomes U+FFFD, so the document stays valid JSON.
  return nlohmann::json(s).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string json_number(double v) {
  return std::isfinite(v) ? number(v) : std::string("null");
}

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
  std::string done() { return first_ ? "{}" : out_ + "}"; }

 private:
  std::string out_;
  bool first_ = true;
};

}  // namespace

std::string point_json(const Point& p, bool with_samples) {
  // Each column's value at its JSON position; numbers keep to_chars' shortest form (nlohmann's
  // would print 100 as 100.0), strings are escaped by nlohmann.
  std::vector<std::string> values(kJsonColumnCount);
  constexpr auto keys = columns_in_order<kJsonColumnCount>(&ColumnInfo::json);
#define COMMSIM_JSON_VALUE(name, kind, length, initial, csv, json, missing, unit, since) \
  if constexpr (json >= 0) values[json] = json_value<ColumnKind::kind>(p.name, Missing::missing);
#define COMMSIM_JSON_FILE_VALUE(name, kind)
  COMMSIM_POINT_COLUMNS(COMMSIM_JSON_VALUE, COMMSIM_JSON_FILE_VALUE)
#undef COMMSIM_JSON_VALUE
#undef COMMSIM_JSON_FILE_VALUE
  JsonObject o;
  for (std::size_t i = 0; i < values.size(); ++i) o.raw(keys[i], values[i]);
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
  // No floating-point fields: nlohmann's compact dump is the whole encoding.
  nlohmann::ordered_json slurm = {{"job_id", c.slurm.job_id},
                                  {"array_job_id", c.slurm.array_job_id},
                                  {"array_task_id", c.slurm.array_task_id},
                                  {"node_list", c.slurm.node_list},
                                  {"partition", c.slurm.partition},
                                  {"cluster", c.slurm.cluster}};
  nlohmann::ordered_json o = {{"command_line", c.command_line},
                              {"commsim_version", c.commsim_version},
                              {"started", c.started},
                              {"hostnames", c.hostnames},
                              {"ranks", c.ranks},
                              {"nodes", c.nodes},
                              {"cpus", c.cpus},
                              {"cpu_binding", c.cpu_binding},
                              {"backend", c.backend},
                              {"transport", c.transport},
                              {"mpi_version", c.mpi_version},
                              {"nccl_version", c.nccl_version},
                              {"cuda_version", c.cuda_version},
                              {"ucx_version", c.ucx_version},
                              {"gpu_names", c.gpu_names},
                              {"environment", c.environment},
                              {"slurm", slurm},
                              {"topology_name", c.topology_name},
                              {"topology_path", c.topology_path},
                              {"topology_text", c.topology_text}};
  if (c.index >= 0) {
    o["index"] = c.index;
    o["status"] = c.status;
    o["finished"] = c.finished;
  }
  return o.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

// ---- CSV

CsvReporter::CsvReporter(std::ostream& out) : out_(out) {
  out_ << fmt::format("{}\n", fmt::join(columns_in_order<kCsvColumnCount>(&ColumnInfo::csv), ","));
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

void JsonReporter::note(std::string_view text) {
  notes_.emplace_back(text);
}

void JsonReporter::finalize() {
  if (finalized_) return;
  open();
  out_ << "\n]";
  if (!notes_.empty())
    out_ << ",\"notes\":" << nlohmann::json(notes_).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  out_ << "}\n";
  out_.flush();
  finalized_ = true;
}

// ---- HDF5

Hdf5Reporter::Hdf5Reporter(ResultsFile& file) : file_(file) {}
void Hdf5Reporter::point(const Point& p) {
  file_.append(p);
}

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
