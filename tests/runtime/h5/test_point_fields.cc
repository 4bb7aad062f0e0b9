// The column list (runtime/h5/point_fields.h) against what derives from it by hand: the points
// table of HDF5_SCHEMA.md, and the CSV header and JSON keys readers already depend on.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "runtime/h5/point_fields.h"
#include "runtime/output/reporter.h"

namespace commsim {
namespace {

struct DocRow {
  std::string type;
  std::string meaning;
};

// The rows of the `/points` table in the schema doc, one entry per field name (a row such as
// "| `samples_offset`, `samples_count` | uint64 | ... |" names several fields).
std::map<std::string, DocRow> points_table_of_doc() {
  std::ifstream in(std::string(COMMSIM_SOURCE_DIR) + "/src/runtime/h5/HDF5_SCHEMA.md");
  EXPECT_TRUE(in) << "cannot read HDF5_SCHEMA.md";
  std::map<std::string, DocRow> rows;
  std::string line;
  bool in_section = false, in_table = false;
  while (std::getline(in, line)) {
    if (line.rfind("## ", 0) == 0) {
      in_section = line.find("`/points`") != std::string::npos;
      in_table = false;
      continue;
    }
    if (!in_section) continue;
    if (line.rfind("| field |", 0) == 0) {
      in_table = true;
      continue;
    }
    if (!in_table || line.rfind("|---", 0) == 0) continue;
    if (line.empty() || line[0] != '|') {
      in_table = false;
      continue;
    }
    std::vector<std::string> cells;
    std::stringstream ss(line.substr(1));
    for (std::string cell; std::getline(ss, cell, '|');) cells.push_back(cell);
    if (cells.size() < 3) continue;
    const std::string& names = cells[0];
    auto trim = [](std::string s) {
      while (!s.empty() && s.front() == ' ') s.erase(s.begin());
      while (!s.empty() && s.back() == ' ') s.pop_back();
      return s;
    };
    for (std::size_t open = names.find('`'); open != std::string::npos; open = names.find('`', open)) {
      std::size_t close = names.find('`', open + 1);
      if (close == std::string::npos) break;
      rows[names.substr(open + 1, close - open - 1)] = DocRow{trim(cells[1]), cells[2]};
      open = close + 1;
    }
  }
  return rows;
}

TEST(PointFields, SchemaDocListsExactlyTheColumnsWithTheirTypesAndUnits) {
  const std::map<std::string, DocRow> doc = points_table_of_doc();
  ASSERT_FALSE(doc.empty());
  for (const ColumnInfo& c : kPointColumns) {
    const std::string name(c.name);
    auto it = doc.find(name);
    ASSERT_NE(it, doc.end()) << "HDF5_SCHEMA.md's /points table does not list `" << name << "`";
    EXPECT_EQ(it->second.type, hdf5_type_name(c)) << name;
    // Bytes are spelled out; other units as written.
    const std::string unit = c.unit == "B" ? "bytes" : std::string(c.unit);
    if (!unit.empty()) {
      EXPECT_NE(it->second.meaning.find(unit), std::string::npos) << name << " should say " << unit;
    }
  }
  for (const auto& [name, row] : doc) {
    bool known = false;
    for (const ColumnInfo& c : kPointColumns) known = known || c.name == name;
    EXPECT_TRUE(known) << "HDF5_SCHEMA.md lists `" << name << "`, which is not a column of point_fields.h";
  }
}

TEST(PointFields, EveryPositionIsTakenOnce) {
  std::vector<int> csv(kCsvColumnCount, 0), json(kJsonColumnCount, 0);
  for (const ColumnInfo& c : kPointColumns) {
    if (c.csv >= 0) ++csv.at(static_cast<std::size_t>(c.csv));
    if (c.json >= 0) ++json.at(static_cast<std::size_t>(c.json));
  }
  for (int n : csv) EXPECT_EQ(n, 1);
  for (int n : json) EXPECT_EQ(n, 1);
}

// The CSV header is an interface (analysis/, users' scripts): it must not move.
TEST(PointFields, CsvColumnsKeepTheirOrder) {
  const std::vector<std::string_view> main(kCsvColumns.begin(), kCsvColumns.end());
  const std::vector<std::string_view> extra(kCsvExtraColumns.begin(), kCsvExtraColumns.end());
  EXPECT_EQ(main, (std::vector<std::string_view>{"collective", "algorithm", "backend", "protocol", "dtype", "nodes",
                                                 "ranks", "bytes", "predicted_us", "predicted_busbw_gbps",
                                                 "measured_median_us", "measured_p95_us", "algbw_gbps", "busbw_gbps",
                                                 "rel_error", "wrong", "status"}));
  EXPECT_EQ(extra,
            (std::vector<std::string_view>{"transport", "redop", "count", "root", "pipeline_chunk_bytes", "iters",
                                           "measured_min_us", "measured_mean_us", "measured_max_us", "predicted_winner",
                                           "note", "nccl_algo", "nccl_proto", "nccl_channels", "in_place",
                                           "timing"}));
}

}  // namespace
}  // namespace commsim
