// The reporters, tested on their real output: the CSV and JSON are parsed back by independent
// small parsers here, the HDF5 read back with read_results.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <map>
#include <memory>
#include <sstream>
#include <variant>

#include "runtime/h5/results_file.h"
#include "runtime/output/caveats.h"
#include "runtime/output/reporter.h"
#include "test_util.h"
#include "text_formats.h"

namespace commsim {
namespace {

using test::Json;
using test::JsonParser;
using test::parse_csv;

double cell_number(const std::string& s) {
  return s.empty() ? kNaN : std::stod(s);
}

std::vector<Point> sample_points() {
  std::vector<Point> v = {test::measured_point(1024), test::predicted_point(Collective::AllGather, 4096),
                          test::measured_point(3)};
  v[0].note = "has, a comma and \"quotes\"\nand a newline";
  v[2].status = "wrong";
  v[2].wrong = 5;
  v[1].pipeline_chunk_bytes = 3 << 20;
  v[2].algorithm = Algorithm::Nccl;
  v[2].nccl_algo = "Tree";
  v[2].nccl_proto = "LL128";
  v[2].nccl_channels = 12;
  return v;
}

TEST(CsvReporter, HeaderAndCellsReadBack) {
  std::ostringstream out;
  auto points = sample_points();
  {
    CsvReporter r(out);
    EXPECT_EQ(out.str().find('\n') + 1, out.str().size()) << "header written at construction";
    for (const Point& p : points) r.point(p);
    r.finalize();
  }
  auto rows = parse_csv(out.str());
  ASSERT_EQ(rows.size(), 1 + points.size());
  const std::vector<std::string> required = {"collective",
                                             "algorithm",
                                             "backend",
                                             "protocol",
                                             "dtype",
                                             "nodes",
                                             "ranks",
                                             "bytes",
                                             "predicted_us",
                                             "predicted_busbw_gbps",
                                             "measured_median_us",
                                             "measured_p95_us",
                                             "algbw_gbps",
                                             "busbw_gbps",
                                             "rel_error",
                                             "wrong",
                                             "status"};
  const auto& header = rows[0];
  ASSERT_GE(header.size(), required.size());
  for (std::size_t i = 0; i < required.size(); ++i) EXPECT_EQ(header[i], required[i]) << "column " << i;
  std::map<std::string, std::size_t> col;
  for (std::size_t i = 0; i < header.size(); ++i) col[header[i]] = i;
  ASSERT_TRUE(col.count("note"));
  for (std::size_t k = 0; k < points.size(); ++k) {
    SCOPED_TRACE(k);
    const auto& row = rows[k + 1];
    const Point& p = points[k];
    ASSERT_EQ(row.size(), header.size());
    EXPECT_EQ(row[col["collective"]], to_string(p.collective));
    EXPECT_EQ(row[col["algorithm"]], to_string(p.algorithm));
    EXPECT_EQ(row[col["protocol"]], to_string(p.protocol));
    EXPECT_EQ(std::stoull(row[col["bytes"]]), p.bytes);
    EXPECT_EQ(std::stoi(row[col["ranks"]]), p.ranks);
    EXPECT_EQ(std::stoull(row[col["pipeline_chunk_bytes"]]), p.pipeline_chunk_bytes);
    for (auto [name, value] :
         std::vector<std::pair<std::string, double>>{{"predicted_us", p.predicted_us},
                                                     {"predicted_busbw_gbps", p.predicted_busbw_gbps},
                                                     {"measured_median_us", p.measured_median_us},
                                                     {"measured_p95_us", p.measured_p95_us},
                                                     {"algbw_gbps", p.algbw_gbps},
                                                     {"busbw_gbps", p.busbw_gbps},
                                                     {"rel_error", p.rel_error}}) {
      double got = cell_number(row[col[name]]);
      if (std::isnan(value))
        EXPECT_TRUE(row[col[name]].empty()) << name << " should be an empty cell";
      else
        EXPECT_EQ(got, value) << name;  // shortest round-trip text: exact
    }
    EXPECT_EQ(row[col["wrong"]], p.wrong < 0 ? "" : std::to_string(p.wrong));
    EXPECT_EQ(row[col["status"]], p.status);
    EXPECT_EQ(row[col["note"]], p.note);
    EXPECT_EQ(row[col["nccl_algo"]], p.nccl_algo);
    EXPECT_EQ(row[col["nccl_proto"]], p.nccl_proto);
    EXPECT_EQ(row[col["nccl_channels"]], p.nccl_channels > 0 ? std::to_string(p.nccl_channels) : "");
  }
}

TEST(JsonReporter, DocumentParsesWithNaNAsNull) {
  std::ostringstream out;
  auto points = sample_points();
  RunContext ctx = test::sample_context();
  {
    JsonReporter r(out, /*with_samples=*/true);
    r.context(ctx);
    for (const Point& p : points) r.point(p);
    r.note("on 2 nodes, allreduce: tree beats ring below 1 MiB");
    r.finalize();
  }
  Json doc;
  ASSERT_NO_THROW(doc = JsonParser(out.str()).document()) << out.str();
  EXPECT_EQ(doc["context"]["backend"].str(), "host");
  EXPECT_EQ(doc["context"]["topology_text"].str(), ctx.topology_text);
  EXPECT_EQ(doc["context"]["slurm"]["job_id"].str(), "1234");
  EXPECT_EQ(doc["context"]["hostnames"].arr().size(), 4u);
  const auto& pts = doc["points"].arr();
  ASSERT_EQ(pts.size(), points.size());
  EXPECT_EQ(pts[0]["note"].str(), points[0].note);
  EXPECT_EQ(pts[1]["pipeline_chunk_bytes"].num(), 3 << 20);
  EXPECT_EQ(pts[0]["pipeline_chunk_bytes"].num(), 0);
  EXPECT_EQ(pts[2]["nccl_algo"].str(), "Tree");
  EXPECT_EQ(pts[2]["nccl_proto"].str(), "LL128");
  EXPECT_EQ(pts[2]["nccl_channels"].num(), 12);
  EXPECT_EQ(pts[0]["nccl_algo"].str(), "");
  EXPECT_EQ(pts[0]["measured_median_us"].num(), points[0].measured_median_us);
  EXPECT_EQ(pts[0]["samples_us"].arr().size(), points[0].samples_us.size());
  EXPECT_TRUE(pts[1]["measured_median_us"].is_null());
  EXPECT_TRUE(pts[1]["wrong"].is_null());
  EXPECT_EQ(pts[1]["protocol"].str(), "LL128");
  EXPECT_EQ(pts[2]["wrong"].num(), 5);
  EXPECT_EQ(doc["notes"].arr().at(0).str(), "on 2 nodes, allreduce: tree beats ring below 1 MiB");
}

TEST(JsonReporter, EmptyDocumentIsValid) {
  std::ostringstream out;
  {
    JsonReporter r(out);
    r.finalize();
  }
  Json doc = JsonParser(out.str()).document();
  EXPECT_TRUE(doc["context"].is_null());
  EXPECT_TRUE(doc["points"].arr().empty());
}

std::vector<std::string> lines_of(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream in(s);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

std::vector<std::string> words(const std::string& line) {
  std::istringstream in(line);
  std::vector<std::string> w;
  for (std::string x; in >> x;) w.push_back(x);
  return w;
}

TEST(TableReporter, PredictedTableHasUnitsAndDerivedBandwidth) {
  std::ostringstream out;
  Point p = test::predicted_point(Collective::AllReduce, 1 << 20);
  p.predicted_us = 50.0;
  {
    TableReporter r(out, TableReporter::Columns::Predicted);
    r.point(p);
    r.note("on 16 nodes, allreduce: tree beats ring below 2 MiB");
    r.finalize();
  }
  std::string s = out.str();
  EXPECT_NE(s.find("(us)"), std::string::npos) << s;
  EXPECT_NE(s.find("(GB/s)"), std::string::npos) << s;
  EXPECT_NE(s.find("allreduce: 16 nodes x 8 ranks = 128 ranks"), std::string::npos) << s;
  // The data row: size count type redop algorithm proto time algbw busbw winner.
  std::vector<std::string> row;
  for (const auto& l : lines_of(s))
    if (!l.empty() && l[0] != '#' && l.find("beats") == std::string::npos) row = words(l);
  ASSERT_EQ(row.size(), 10u) << s;
  EXPECT_EQ(std::stoull(row[0]), p.bytes);
  EXPECT_EQ(std::stoull(row[1]), p.count);
  EXPECT_EQ(row[4], "tree");
  EXPECT_EQ(row[5], "LL128");
  EXPECT_DOUBLE_EQ(std::stod(row[6]), 50.0);
  EXPECT_NEAR(std::stod(row[7]), (1 << 20) / 50e-6 / 1e9, 0.01);  // algbw = bytes / time
  EXPECT_NEAR(std::stod(row[8]), 99.0, 0.01);
  EXPECT_NE(s.find("tree beats ring below 2 MiB"), std::string::npos);
}

// A GiB over a slow network takes tens of seconds: the time must stay a word of its own.
TEST(TableReporter, LongTimesDoNotRunIntoTheColumnBefore) {
  for (const auto columns : {TableReporter::Columns::Predicted, TableReporter::Columns::Measured}) {
    std::ostringstream out;
    Point p = test::predicted_point(Collective::AllReduce, 1ull << 30);
    p.predicted_us = 57445220.58;    // recursive doubling, 1 GiB on 2 nodes of local-cpu
    p.measured_median_us = 1.23e10;  // wider than any column
    {
      TableReporter r(out, columns);
      r.point(p);
      r.finalize();
    }
    const std::string s = out.str();
    std::vector<std::string> row;
    for (const auto& l : lines_of(s))
      if (!l.empty() && l[0] != '#') {
        row = words(l);
        break;
      }
    ASSERT_GE(row.size(), 8u) << s;
    // The measured table has a root column after the reduction: one word more before the protocol.
    const std::size_t proto = columns == TableReporter::Columns::Predicted ? 5 : 6;
    EXPECT_EQ(row[proto], "LL128") << s;  // not "LL12857445220.58"
    EXPECT_DOUBLE_EQ(std::stod(row[proto + 1]), columns == TableReporter::Columns::Predicted ? 57445220.58 : 1.23e10)
        << s;
  }
}

TEST(TableReporter, MeasuredTableShowsWrongPredictionAndError) {
  std::ostringstream out;
  Point p = test::measured_point(1024);
  {
    TableReporter r(out, TableReporter::Columns::Measured);
    r.context(test::sample_context());
    r.point(p);
    Point q = test::measured_point(2048);
    q.collective = Collective::AllGather;
    r.point(q);
  }
  std::string s = out.str();
  EXPECT_NE(s.find("#wrong"), std::string::npos);
  EXPECT_NE(s.find("rel.err"), std::string::npos);
  EXPECT_NE(s.find("backend host, transport mpi, 4 ranks on 2 nodes"), std::string::npos) << s;
  EXPECT_NE(s.find("# allgather:"), std::string::npos) << "a new block per collective";
  std::vector<std::string> row;
  for (const auto& l : lines_of(s))
    if (!l.empty() && l[0] != '#') {
      row = words(l);
      break;
    }
  ASSERT_GE(row.size(), 16u) << s;
  EXPECT_EQ(row[4], "-1") << "nccl-tests' root column: -1 for a collective without a root";
  EXPECT_NEAR(std::stod(row[7]), p.measured_median_us, 0.01);
  EXPECT_EQ(row[10], spread_text(p.measured_p95_us / p.measured_median_us));  // the spread beside the median
  EXPECT_EQ(row[11], "0");
  EXPECT_NEAR(std::stod(row[12]), p.predicted_us, 0.01);
  EXPECT_NEAR(std::stod(row[13]), p.rel_error * 100, 0.06);
  // The model picked tree: this row is marked only when it is the tree's.
  EXPECT_EQ(row[14], p.algorithm == Algorithm::Tree ? "predicted" : "-");
  EXPECT_EQ(row[15], "ok");
}

// nccl-tests' closing lines (src/util.cu writeResultFooter), byte for byte: the wrong elements of
// every checked row and the mean busbw of the measured rows.
TEST(TableReporter, EndsWithNcclTestsClosingLines) {
  auto table_of = [](std::vector<Point> points) {
    std::ostringstream out;
    TableReporter r(out, TableReporter::Columns::Measured);
    for (const Point& p : points) r.point(p);
    r.finalize();
    return lines_of(out.str());
  };
  Point a = test::measured_point(1024), b = test::measured_point(2048);
  a.wrong = b.wrong = 0;
  a.busbw_gbps = 1.5;
  b.busbw_gbps = 2.25;
  std::vector<std::string> lines = table_of({a, b});
  ASSERT_GE(lines.size(), 2u);
  EXPECT_EQ(lines[lines.size() - 2], "# Out of bounds values : 0 OK");
  EXPECT_EQ(lines[lines.size() - 1], "# Avg bus bandwidth    : 1.875 ");
  b.wrong = 3;
  lines = table_of({a, b});
  EXPECT_EQ(lines[lines.size() - 2], "# Out of bounds values : 3 FAILED");
  a.wrong = b.wrong = -1;
  lines = table_of({a, b});
  EXPECT_EQ(lines[lines.size() - 2], "# Out of bounds values : N/A (not checked)");
  // A table with no measured row (every point skipped) has no closing lines.
  Point skipped;
  skipped.status = "skipped";
  for (const std::string& l : table_of({skipped})) EXPECT_EQ(l.find("Avg bus bandwidth"), std::string::npos);
}

TEST(Hdf5Reporter, RowsReadBack) {
  test::TempDir dir;
  const std::string path = dir.file("r.h5");
  auto points = sample_points();
  {
    ResultsFile f = ResultsFile::create(path, false, test::sample_context());
    MultiReporter m;
    std::ostringstream csv;
    m.add(std::make_unique<Hdf5Reporter>(f));
    m.add(std::make_unique<CsvReporter>(csv));
    for (const Point& p : points) m.point(p);
    m.finalize();
    f.finish(RunStatus::Complete);
    EXPECT_EQ(parse_csv(csv.str()).size(), 1 + points.size());
  }
  auto back = read_points(path);
  ASSERT_EQ(back.size(), points.size());
  for (std::size_t i = 0; i < points.size(); ++i) {
    EXPECT_EQ(back[i].bytes, points[i].bytes);
    EXPECT_EQ(back[i].note, points[i].note);
    EXPECT_EQ(back[i].samples_us, points[i].samples_us);
  }
}

}  // namespace
}  // namespace commsim
