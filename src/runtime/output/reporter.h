#pragma once
// Output formats of points, one Reporter each (as google/benchmark does): context() once before
// the points, point() per finished point, finalize() at the end. Every reporter writes and flushes
// each point as it arrives, so a sweep streams its rows and a killed job keeps what was printed.
//
//   TableReporter  nccl-tests-like console table (size, count, type, redop, time, algbw, busbw,
//                  spread, #wrong) plus algorithm, prediction, relative error and the winner marks:
//                  the model's pick and the measured fastest per size (run: the rows of one size
//                  print together once all have run)
//   CsvReporter    the CSV every command prints: kCsvColumns, then extra columns
//   JsonReporter   one JSON document {"context": {...}, "points": [...]}, NaN as null
//   Hdf5Reporter   rows into a ResultsFile (results_file.h)
//   MultiReporter  the same calls to several reporters (console + HDF5)
#include <iosfwd>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "runtime/output/run_context.h"
#include "runtime/sweep/point.h"

namespace commsim {

class ResultsFile;

class Reporter {
 public:
  virtual ~Reporter() = default;
  virtual void context(const RunContext& ctx) { (void)ctx; }
  virtual void point(const Point& p) = 0;
  // Lines after the last point (e.g. crossovers in the table; ignored by CSV and HDF5).
  virtual void note(std::string_view text) { (void)text; }
  virtual void finalize() {}
};

enum class OutputFormat { Table, Csv, Json };
std::string_view to_string(OutputFormat f);  // "table", "csv", "json"

// The first columns of every CSV, in this order; CsvReporter appends kCsvExtraColumns after them.
// Both derive from the column list (runtime/h5/point_fields.h).
inline constexpr auto kCsvColumns = columns_in_order<kCsvMainColumns>(&ColumnInfo::csv);
inline constexpr auto kCsvExtraColumns =
    columns_in_order<kCsvColumnCount - kCsvMainColumns>(&ColumnInfo::csv, static_cast<int>(kCsvMainColumns));

// The CSV cells of a point, in kCsvColumns then kCsvExtraColumns order, unquoted; "" for a missing
// value (NaN, wrong == -1, no protocol).
std::vector<std::string> csv_cells(const Point& p);
// A CSV field quoted per RFC 4180 when it holds a comma, quote or newline.
std::string csv_quote(std::string_view field);
// A JSON string literal (quotes and escapes) and a JSON number (NaN/inf -> null).
std::string json_string(std::string_view s);
std::string json_number(double v);
// The point / context as one JSON object (all Point fields except samples_us unless asked).
std::string point_json(const Point& p, bool with_samples = false);
std::string context_json(const RunContext& ctx);

class TableReporter : public Reporter {
 public:
  enum class Columns {
    Predicted,  // predict: time/algbw/busbw are the model's; no measurement columns
    Measured,   // run: measured time/algbw/busbw/#wrong, then predicted time, rel. error, winner
  };
  TableReporter(std::ostream& out, Columns columns);
  ~TableReporter() override;  // prints the rows still held (finalize does too)
  void context(const RunContext& ctx) override;
  void point(const Point& p) override;
  void note(std::string_view text) override;
  void finalize() override;

 private:
  void group_header(const Point& p);
  void flush_size();
  std::ostream& out_;
  Columns columns_;
  std::string group_;  // the (collective, nodes, ranks, backend, dtype) of the rows being printed
  // For nccl-tests' closing lines (Measured): wrong elements over checked rows, and busbw of the measured rows.
  long long wrong_total_ = 0;
  bool unchecked_ = false;
  double busbw_sum_gbps_ = 0;
  int busbw_rows_ = 0;
  // Measured: the rows of the size being printed (text up to the error column, and the point),
  // held until the size is complete so that the measured fastest can be marked.
  std::vector<std::pair<std::string, Point>> size_rows_;
};

class CsvReporter : public Reporter {
 public:
  explicit CsvReporter(std::ostream& out);  // writes the header line at once
  void point(const Point& p) override;

 private:
  std::ostream& out_;
};

class JsonReporter : public Reporter {
 public:
  explicit JsonReporter(std::ostream& out, bool with_samples = false);
  void context(const RunContext& ctx) override;  // the first context is the document's "context"
  void point(const Point& p) override;
  void note(std::string_view text) override;  // collected into "notes": [...] after "points"
  void finalize() override;                   // closes the document; "context": null when none was given

 private:
  void open();
  std::vector<std::string> notes_;
  std::ostream& out_;
  bool with_samples_;
  bool opened_ = false;
  bool finalized_ = false;
  std::size_t points_ = 0;
};

// Appends each point to a ResultsFile the caller owns (and finishes). context() is ignored: the
// run's context is given to ResultsFile::create / begin_run.
class Hdf5Reporter : public Reporter {
 public:
  explicit Hdf5Reporter(ResultsFile& file);
  void point(const Point& p) override;

 private:
  ResultsFile& file_;
};

class MultiReporter : public Reporter {
 public:
  void add(std::unique_ptr<Reporter> r);
  void context(const RunContext& ctx) override;
  void point(const Point& p) override;
  void note(std::string_view text) override;
  void finalize() override;
  bool empty() const { return reporters_.empty(); }

 private:
  std::vector<std::unique_ptr<Reporter>> reporters_;
};

// The console reporter for --format on `out`.
std::unique_ptr<Reporter> make_console_reporter(OutputFormat format, std::ostream& out, TableReporter::Columns columns);

}  // namespace commsim
