// What `commsim plan` prints and writes, called as library functions on a real plan: the layouts
// shown (--top, --layout) and their warnings, the table, CSV and JSON, the /plan HDF5 group, and the
// calibrated range read from a results file.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "model/error.h"
#include "model/plan/llm_model.h"
#include "model/plan/plan.h"
#include "model/topology/topology.h"
#include "plan_test_util.h"
#include "runtime/h5/hdf5.h"
#include "runtime/h5/plan_file.h"
#include "runtime/h5/results_file.h"
#include "runtime/output/plan_report.h"
#include "test_util.h"
#include "text_formats.h"

namespace commsim {
namespace {

bool contains(const std::string& hay, const std::string& needle) {
  return hay.find(needle) != std::string::npos;
}

// Llama 3 70B at 8K tokens on 16 DGX H100 nodes, ranked by step time at half the peak.
class PlanReportTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    topo_ = new Topology(test::preset_topology("dgx-h100"));
    model_ = new LlmModel(test::preset_model("llama3-70b"));
    opts_ = new PlanOptions(test::plan_command_defaults(*topo_));
    opts_->nodes = 16;
    opts_->global_batch = 1024;
    opts_->seq = 8192;
    result_ = new PlanResult(plan_layouts(*topo_, *model_, *opts_));
  }
  static void TearDownTestSuite() {
    delete result_;
    delete opts_;
    delete model_;
    delete topo_;
  }
  PlanReport report(const LayoutFilter& filter, int top) const {
    return make_plan_report(*model_, *topo_, *opts_, *result_, filter, top);
  }

  static Topology* topo_;
  static LlmModel* model_;
  static PlanOptions* opts_;
  static PlanResult* result_;
};
Topology* PlanReportTest::topo_ = nullptr;
LlmModel* PlanReportTest::model_ = nullptr;
PlanOptions* PlanReportTest::opts_ = nullptr;
PlanResult* PlanReportTest::result_ = nullptr;

TEST(PlanLayoutFilter, ReadsKeysAndSizes) {
  LayoutFilter f = parse_layout_filter("TP=8,pp=4");
  ASSERT_EQ(f.size(), 2u);
  EXPECT_EQ(f[0], (std::pair<std::string, int>{"tp", 8}));
  EXPECT_EQ(f[1], (std::pair<std::string, int>{"pp", 4}));
  Shape s;
  s.tp = 8;
  s.pp = 4;
  s.dp = 4;
  EXPECT_TRUE(layout_matches(f, s));
  s.pp = 2;
  EXPECT_FALSE(layout_matches(f, s));
  EXPECT_TRUE(layout_matches({}, s));
  EXPECT_TRUE(contains(test::error_of([] { parse_layout_filter("tp:8"); }), "--layout: cannot read 'tp:8'"));
  EXPECT_TRUE(contains(test::error_of([] { parse_layout_filter("xp=2"); }), "cannot read 'xp=2'"));
  EXPECT_TRUE(contains(test::error_of([] { parse_layout_filter("tp=0"); }), "cannot read 'tp=0'"));
}

TEST_F(PlanReportTest, TopAndFilterChooseWhatIsShownKeepingTheGlobalRank) {
  ASSERT_GT(result_->ranked.size(), 3u);
  PlanReport top = report({}, 3);
  ASSERT_EQ(top.shown.size(), 3u);
  EXPECT_FALSE(top.filtered);
  for (std::size_t i = 0; i < 3; ++i) EXPECT_EQ(plan_rank(*result_, *top.shown[i]), i + 1);
  EXPECT_EQ(report({}, 0).shown.size(), result_->ranked.size());

  PlanReport filtered = report(parse_layout_filter("tp=8"), 0);
  EXPECT_TRUE(filtered.filtered);
  ASSERT_FALSE(filtered.shown.empty());
  for (const LayoutPlan* lp : filtered.shown) {
    EXPECT_EQ(lp->shape.tp, 8);
    EXPECT_EQ(&result_->ranked[plan_rank(*result_, *lp) - 1], lp);
  }
  EXPECT_EQ(top.warnings, result_->warnings) << "no calibrated range: only the plan's own warnings";
}

TEST_F(PlanReportTest, WarnsOfShownCollectivesOutsideTheCalibratedRange) {
  PlanOptions calibrated = *opts_;
  calibrated.calibration.present = true;
  calibrated.calibration.min_bytes = 8;
  calibrated.calibration.max_bytes = 1024;
  calibrated.calibration.min_nodes = 1;
  calibrated.calibration.max_nodes = 1;
  // plan_layouts marks the collectives outside the range; the report names those of the layouts shown.
  const PlanResult planned = plan_layouts(*topo_, *model_, calibrated);
  PlanReport r = make_plan_report(*model_, *topo_, calibrated, planned, {}, 2);
  EXPECT_GT(r.warnings.size(), planned.warnings.size());
  EXPECT_TRUE(contains(r.warnings.back(), "lies outside the calibrated range (8B..1KiB, 1..1 nodes)"))
      << r.warnings.back();
}

TEST_F(PlanReportTest, CsvHasOneRowPerLayoutShown) {
  std::ostringstream os;
  print_plan_csv(os, report({}, 4));
  auto rows = test::parse_csv(os.str());
  ASSERT_EQ(rows.size(), 5u) << os.str();
  EXPECT_EQ(rows[0][0], "rank");
  for (std::size_t i = 1; i < rows.size(); ++i) {
    ASSERT_EQ(rows[i].size(), rows[0].size());
    EXPECT_EQ(rows[i][0], std::to_string(i));
    EXPECT_EQ(std::stoi(rows[i][1]) * std::stoi(rows[i][2]) * std::stoi(rows[i][3]), 128);
  }
}

TEST_F(PlanReportTest, TableHasHeaderRowsCheckpointsAndAssumptions) {
  std::ostringstream os;
  print_plan_table(os, report({}, 3), false, true);
  const std::string out = os.str();
  EXPECT_TRUE(contains(out, "# commsim plan: llama3-70b (70.6 B parameters) on 16 x dgx-h100 (128 GPUs")) << out;
  EXPECT_TRUE(contains(out, "(3 of ")) << out;
  EXPECT_TRUE(contains(out, "# 1. ")) << "--detail lists each layout's collectives\n" << out;
  EXPECT_TRUE(contains(out, "# checkpoint every 100 steps")) << out;
  EXPECT_TRUE(contains(out, "# assumptions")) << out;
  EXPECT_TRUE(contains(out, "warning: topology 'dgx-h100' carries no calibrated range")) << out;
}

TEST_F(PlanReportTest, JsonIsValid) {
  std::ostringstream os;
  print_plan_json(os, report({}, 2), true);
  const std::string out = os.str();
  EXPECT_TRUE(contains(out, "\"layouts\": [")) << out;
  EXPECT_TRUE(contains(out, "\"excluded\": [")) << out;
  if (std::system("command -v python3 >/dev/null 2>&1") == 0) {
    test::TempDir dir;
    std::ofstream(dir.file("plan.json")) << out;
    std::string check = "python3 -c 'import json,sys; json.load(open(sys.argv[1]))' '" + dir.file("plan.json") + "'";
    EXPECT_EQ(std::system(check.c_str()), 0) << out;
  }
}

TEST_F(PlanReportTest, PlanGroupHoldsEveryRankedLayout) {
  test::TempDir dir;
  const std::string path = dir.file("plan.h5");
  {
    ResultsFile f = ResultsFile::create(path, false, test::sample_context());
    f.finish(RunStatus::Complete);
  }
  const PlanReport r = report({}, 2);
  write_plan_group(path, r);
  h5::File f = h5::open_file(path, false);
  h5::Group g = h5::open_group(f.get(), "plan");
  EXPECT_EQ(h5::get_string_attribute(g.get(), "model_name"), "llama3-70b");
  EXPECT_EQ(h5::get_int_attribute(g.get(), "gpus"), 128);
  EXPECT_EQ(h5::rows(h5::open_dataset(g.get(), "layouts")), result_->ranked.size()) << "not only the shown";
  std::size_t collectives = 0;
  for (const auto& lp : result_->ranked) collectives += lp.collectives.size();
  EXPECT_EQ(h5::rows(h5::open_dataset(g.get(), "collectives")), collectives);
  EXPECT_EQ(h5::rows(h5::open_dataset(g.get(), "excluded")), result_->excluded.size());
  EXPECT_EQ(h5::read_string_list(g.get(), "warnings"), r.warnings);
}

TEST(PlanCalibratedRange, FromTheMeasuredPointsOfAResultsFile) {
  test::TempDir dir;
  const std::string measured = dir.file("measured.h5");
  {
    ResultsFile f = ResultsFile::create(measured, false, test::sample_context());
    f.append(test::measured_point(1024));
    f.append(test::measured_point(1 << 20));
    f.append(test::predicted_point(Collective::AllReduce, 1ull << 30));  // not measured: ignored
    f.finish(RunStatus::Complete);
  }
  CalibrationRange r = calibration_range_from_results(measured);
  EXPECT_TRUE(r.present);
  EXPECT_EQ(r.min_bytes, 1024u);
  EXPECT_EQ(r.max_bytes, 1u << 20);
  EXPECT_EQ(r.origin, measured);

  const std::string model_only = dir.file("model-only.h5");
  {
    ResultsFile f = ResultsFile::create(model_only, false, test::sample_context());
    f.append(test::predicted_point(Collective::AllReduce, 1024));
    f.finish(RunStatus::Complete);
  }
  EXPECT_TRUE(contains(test::error_of([&] { calibration_range_from_results(model_only); }),
                       "holds no correctly measured point"));
}

}  // namespace
}  // namespace commsim
