// `commsim plan` run as a process: the table, CSV and JSON it prints, the HDF5 /plan group it
// writes, the calibration warning, and its messages for bad input.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "runtime/h5/hdf5.h"
#include "runtime/h5/results_file.h"
#include "test_util.h"
#include "text_formats.h"

namespace commsim {
namespace {

using test::slurp;
using Result = test::CommandResult;

// Runs `commsim plan <args>`.
Result run(const std::string& args, const test::TempDir& dir) {
  return test::run_binary(COMMSIM_BIN, "plan " + args, dir);
}

bool contains(const std::string& hay, const std::string& needle) {
  return hay.find(needle) != std::string::npos;
}

// The rows of the table's layout section: the lines after its header ("rank ...") up to the first
// blank line.
std::vector<std::string> layout_rows(const std::string& out) {
  std::vector<std::string> rows;
  std::istringstream lines(out);
  bool in_table = false;
  for (std::string line; std::getline(lines, line);) {
    if (!in_table) {
      in_table = line.rfind(" rank ", 0) == 0;
      continue;
    }
    if (line.empty()) break;
    if (line.rfind("  (", 0) != 0) rows.push_back(line);
  }
  return rows;
}

// The command, with the memory savers that make Llama 3 70B at 8K tokens fit.
const std::string kLlama =
    "--topology configs/topologies/dgx-h100.yaml --nodes 16 --model configs/models/llama3-70b.yaml "
    "--global-batch 1024 --micro-batch 1 --seq 8192 --sequence-parallel --recompute selective";

class PlanE2E : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_EQ(chdir(COMMSIM_SOURCE_DIR), 0); }
};

TEST_F(PlanE2E, TableRanksLayoutsWithTheirParts) {
  test::TempDir dir;
  Result r = run(kLlama + " --top 3", dir);
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "llama3-70b (70.6 B parameters) on 16 x dgx-h100 (128 GPUs")) << r.out;
  for (const char* col : {"rank", "DP", "TP", "PP", "EP", "comm", "bubble", "mem GiB", "algorithms"})
    EXPECT_TRUE(contains(r.out, col)) << col;
  EXPECT_TRUE(contains(r.out, "# assumptions")) << r.out;
  EXPECT_TRUE(contains(r.out, "overlap none: every collective is on the critical path")) << r.out;
  EXPECT_TRUE(contains(r.out, "warning: topology 'dgx-h100' carries no calibrated range")) << r.out;
  // Three ranked rows in the layout table (the lines after its header up to the blank line).
  EXPECT_EQ(layout_rows(r.out).size(), 3u) << r.out;
}

TEST_F(PlanE2E, DefaultsAreWhatTrainingRunsDo) {
  test::TempDir dir;
  // Without any memory option: fused attention, sequence parallelism, ZeRO-1 are the defaults,
  // and the layouts are ranked by step time at the topology's peak x the default utilisation.
  Result r =
      run("--topology configs/topologies/dgx-h100.yaml --nodes 16 --model configs/models/llama3-70b.yaml "
          "--global-batch 1024 --micro-batch 1 --seq 8192",
          dir);
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_FALSE(contains(r.out, "# 0 layouts fit")) << r.out;
  EXPECT_TRUE(contains(r.out, "recompute selective, ZeRO-1, overlap none, sequence parallel, VP <= 8; ranked by step"))
      << r.out;
  EXPECT_TRUE(contains(r.out,
                       "compute rate: 989 TFLOP/s peak (device.peak_tflops of 'dgx-h100') x 50% (--mfu) = "
                       "494 TFLOP/s per GPU"))
      << r.out;
  EXPECT_TRUE(contains(r.out, "# checkpoint every 100 steps")) << r.out;
  // Ranked by step time: step_s ascends.
  Result csv =
      run("--topology configs/topologies/dgx-h100.yaml --nodes 16 --model configs/models/llama3-70b.yaml "
          "--global-batch 1024 --seq 8192 --top 0 --format csv",
          dir);
  ASSERT_EQ(csv.rc, 0) << csv.err;
  auto table = test::parse_csv(csv.out);
  ASSERT_GE(table.size(), 3u) << csv.out;
  const auto step_col = std::find(table[0].begin(), table[0].end(), "step_s") - table[0].begin();
  ASSERT_LT(static_cast<std::size_t>(step_col), table[0].size());
  for (std::size_t i = 2; i < table.size(); ++i)
    EXPECT_LE(std::stod(table[i - 1][step_col]), std::stod(table[i][step_col])) << csv.out;
  // Each switchable off: the old plain model, which does not fit at 8K tokens.
  Result plain =
      run("--topology configs/topologies/dgx-h100.yaml --nodes 16 --model configs/models/llama3-70b.yaml "
          "--global-batch 1024 --seq 8192 --recompute none --no-sequence-parallel --zero 0 --rank-by comm "
          "--virtual-stages 1",
          dir);
  ASSERT_EQ(plain.rc, 0) << plain.err;
  EXPECT_TRUE(contains(plain.out, "# 0 layouts fit")) << plain.out;
  EXPECT_TRUE(contains(plain.out, "recompute none, ZeRO-0, overlap none; ranked by comm")) << plain.out;
}

TEST_F(PlanE2E, CheckpointCostPerLayout) {
  test::TempDir dir;
  Result r = run(kLlama + " --top 3 --checkpoint-every 50", dir);
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "# checkpoint every 50 steps: ")) << r.out;
  EXPECT_TRUE(contains(r.out, "sync waits for shared-fs, async for local-nvme then copies on")) << r.out;
  for (const char* col : {"GiB/GPU", "GiB/node", "local-nvme", "shared-fs", "sync/step", "async/step", "background"})
    EXPECT_TRUE(contains(r.out, col)) << col << "\n" << r.out;
  EXPECT_TRUE(contains(r.out, "checkpoint: 2 B/param weights + Adam 12 B/param")) << r.out;

  // The CSV carries the same numbers: sync per step = sync stall / 50, size per node >= per GPU.
  Result csv = run(kLlama + " --top 3 --checkpoint-every 50 --format csv", dir);
  ASSERT_EQ(csv.rc, 0) << csv.err;
  auto rows = test::parse_csv(csv.out);
  ASSERT_GE(rows.size(), 2u);
  auto col = [&](const char* name) {
    auto it = std::find(rows[0].begin(), rows[0].end(), name);
    EXPECT_NE(it, rows[0].end()) << name;
    return static_cast<std::size_t>(it - rows[0].begin());
  };
  for (std::size_t i = 1; i < rows.size(); ++i) {
    EXPECT_NEAR(std::stod(rows[i][col("ckpt_sync_per_step_s")]) * 50, std::stod(rows[i][col("ckpt_sync_stall_s")]),
                1e-9);
    EXPECT_GE(std::stod(rows[i][col("ckpt_bytes_per_node")]), std::stod(rows[i][col("ckpt_bytes_per_gpu")]));
    EXPECT_GT(std::stod(rows[i][col("ckpt_async_stall_s")]), 0);
  }

  // Without storage tiers: sizes only, and it says why.
  Result none =
      run("--topology local-cpu --nodes 2 --model llama3-8b --global-batch 64 --seq 2048 "
          "--memory-limit 64GiB --top 2",
          dir);
  ASSERT_EQ(none.rc, 0) << none.err;
  EXPECT_TRUE(contains(none.out, "the topology lists no storage tiers")) << none.out;
  EXPECT_TRUE(contains(none.out, "no device.peak_tflops: no compute estimate, ranked by communication")) << none.out;

  Result off = run(kLlama + " --top 3 --checkpoint-every 0", dir);
  ASSERT_EQ(off.rc, 0) << off.err;
  EXPECT_FALSE(contains(off.out, "# checkpoint every")) << off.out;
}

TEST_F(PlanE2E, NothingFitsSaysWhyAndWhatToChange) {
  test::TempDir dir;
  // Attention scores of 8K tokens stored, no sequence parallelism, replicated optimizer: nothing fits.
  Result r =
      run("--topology configs/topologies/dgx-h100.yaml --nodes 16 --model configs/models/llama3-70b.yaml "
          "--global-batch 1024 --micro-batch 1 --seq 8192 --recompute none --no-sequence-parallel --zero 0",
          dir);
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "# 0 layouts fit")) << r.out;
  EXPECT_TRUE(contains(r.out, "# closest to fitting")) << r.out;
  EXPECT_TRUE(
      contains(r.out, "warning: no layout fits in 76.9 GiB per GPU (80.0 GiB less the 3.1 GiB reserve); the closest, "))
      << r.out;
  // The options that make the closest layout fit, each with the memory it then needs.
  EXPECT_TRUE(contains(r.out, "it fits with --recompute selective (")) << r.out;
  EXPECT_TRUE(contains(r.out, "more nodes")) << r.out;
}

TEST_F(PlanE2E, CsvHasOneRowPerLayoutShown) {
  test::TempDir dir;
  Result r = run(kLlama + " --top 0 --format csv", dir);
  ASSERT_EQ(r.rc, 0) << r.err;
  auto rows = test::parse_csv(r.out);
  ASSERT_GE(rows.size(), 2u) << r.out;
  const auto& header = rows[0];
  for (const char* col : {"rank", "dp", "tp", "pp", "ep", "comm_s", "tp_s", "pp_s", "dp_s", "ep_s", "bubble_fraction",
                          "mem_total_bytes", "tp_algorithm"})
    EXPECT_NE(std::find(header.begin(), header.end(), col), header.end()) << col;
  for (std::size_t i = 1; i < rows.size(); ++i) {
    ASSERT_EQ(rows[i].size(), header.size());
    EXPECT_EQ(rows[i][0], std::to_string(i));
    EXPECT_EQ(std::stoi(rows[i][1]) * std::stoi(rows[i][2]) * std::stoi(rows[i][3]), 128);  // DP*TP*PP
  }
  EXPECT_TRUE(contains(r.err, "no calibrated range")) << "warnings go to stderr with --format csv";
}

TEST_F(PlanE2E, JsonIsValid) {
  test::TempDir dir;
  Result r = run(kLlama + " --format json --show-excluded", dir);
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "\"layouts\": [")) << r.out;
  EXPECT_TRUE(contains(r.out, "\"collectives\": [")) << r.out;
  EXPECT_TRUE(contains(r.out, "\"excluded\": [")) << r.out;
  if (std::system("command -v python3 >/dev/null 2>&1") == 0) {
    std::ofstream(dir.file("plan.json")) << r.out;
    std::string check = "python3 -c 'import json,sys; json.load(open(sys.argv[1]))' '" + dir.file("plan.json") + "'";
    EXPECT_EQ(std::system(check.c_str()), 0) << r.out;
  }
}

TEST_F(PlanE2E, WritesThePlanGroup) {
  test::TempDir dir;
  const std::string path = dir.file("plan.h5");
  Result r = run(kLlama + " --out '" + path + "'", dir);
  ASSERT_EQ(r.rc, 0) << r.err;
  ASSERT_TRUE(test::exists(path));
  // An ordinary results file (the run context holds the topology) ...
  ResultsContents c = read_results(path);
  ASSERT_EQ(c.runs.size(), 1u);
  EXPECT_EQ(c.runs[0].topology_name, "dgx-h100");
  EXPECT_TRUE(c.points.empty());
  // ... plus /plan.
  h5::File f = h5::open_file(path, false);
  h5::Group g = h5::open_group(f.get(), "plan");
  EXPECT_EQ(h5::get_string_attribute(g.get(), "model_name"), "llama3-70b");
  EXPECT_EQ(h5::get_int_attribute(g.get(), "gpus"), 128);
  EXPECT_EQ(h5::get_string_attribute(g.get(), "recompute"), "selective");
  h5::Dataset layouts = h5::open_dataset(g.get(), "layouts");
  h5::Dataset colls = h5::open_dataset(g.get(), "collectives");
  h5::Dataset excluded = h5::open_dataset(g.get(), "excluded");
  EXPECT_GT(h5::rows(layouts), 0u);
  EXPECT_GE(h5::rows(colls), h5::rows(layouts));
  EXPECT_GT(h5::rows(excluded), 0u);
  EXPECT_FALSE(h5::read_string_list(g.get(), "assumptions").empty());
  // Never overwritten without --force.
  Result again = run(kLlama + " --out '" + path + "'", dir);
  EXPECT_NE(again.rc, 0);
  EXPECT_TRUE(contains(again.err, "--force")) << again.err;
}

TEST_F(PlanE2E, WarnsOutsideACalibratedTopologysRange) {
  test::TempDir dir;
  std::string text = slurp("configs/topologies/dgx-h100.yaml");
  text += "calibrated: { sizes: \"8B:64MiB\", nodes: \"1:2\" }\n";
  const std::string topo = dir.file("calibrated.yaml");
  std::ofstream(topo) << text;
  std::string args = kLlama;
  args.replace(args.find("configs/topologies/dgx-h100.yaml"), 32, "'" + topo + "'");
  Result r = run(args + " --top 3", dir);
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_FALSE(contains(r.out, "carries no calibrated range")) << r.out;
  EXPECT_TRUE(contains(r.out, "outside the calibrated range (8B..64MiB, 1..2 nodes")) << r.out;
  EXPECT_TRUE(contains(r.out, "1!")) << "the table marks layouts outside the range\n" << r.out;
}

TEST_F(PlanE2E, CalibratedRangeFromAResultsFile) {
  test::TempDir dir;
  const std::string measured = dir.file("measured.h5");
  {
    ResultsFile f = ResultsFile::create(measured, false, test::sample_context());
    f.append(test::measured_point(1024));                                        // 2 nodes
    f.append(test::measured_point(1 << 20));                                     // 2 nodes
    Point predicted = test::predicted_point(Collective::AllReduce, 1ull << 30);  // not measured: ignored
    f.append(predicted);
    f.finish(RunStatus::Complete);
  }
  Result r = run(kLlama + " --top 2 --calibrated-range '" + measured + "'", dir);
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "outside the calibrated range (1KiB..1MiB, 2..2 nodes, from " + measured)) << r.out;
  EXPECT_FALSE(contains(r.out, "carries no calibrated range")) << r.out;

  // A file without measurements cannot give a range.
  const std::string model_only = dir.file("model-only.h5");
  {
    ResultsFile f = ResultsFile::create(model_only, false, test::sample_context());
    f.append(test::predicted_point(Collective::AllReduce, 1024));
    f.finish(RunStatus::Complete);
  }
  Result bad = run(kLlama + " --calibrated-range '" + model_only + "'", dir);
  EXPECT_EQ(bad.rc, 1);
  EXPECT_TRUE(contains(bad.err, "holds no correctly measured point")) << bad.err;
}

TEST_F(PlanE2E, LayoutFilterKeepsTheGlobalRank) {
  test::TempDir dir;
  Result all = run(kLlama + " --top 0 --format csv", dir);
  ASSERT_EQ(all.rc, 0) << all.err;
  Result one = run(kLlama + " --layout tp=8,pp=4 --format csv", dir);
  ASSERT_EQ(one.rc, 0) << one.err;
  auto rows = test::parse_csv(one.out);
  ASSERT_EQ(rows.size(), 2u) << one.out;
  EXPECT_EQ(rows[1][2], "8");
  EXPECT_EQ(rows[1][3], "4");
  // The same line appears in the full ranking.
  std::istringstream lines(one.out);
  std::string header, line;
  std::getline(lines, header);
  std::getline(lines, line);
  EXPECT_TRUE(contains(all.out, line)) << line;
}

TEST_F(PlanE2E, BadInputIsAnErrorNamingIt) {
  test::TempDir dir;
  const std::string bad = dir.file("bad-model.yaml");
  std::ofstream(bad) << "name: x\nlayers: 80\nhidden: 8192\nheads: sixty-four\nffn_hidden: 28672\nvocab: 128256\n";
  Result r = run("--topology dgx-h100 --nodes 2 --model '" + bad + "' --global-batch 64 --seq 2048", dir);
  EXPECT_EQ(r.rc, 1);
  EXPECT_TRUE(contains(r.err, bad + ":4: heads: expected a whole number, got 'sixty-four'")) << r.err;

  Result missing = run("--topology dgx-h100 --nodes 2 --global-batch 64 --seq 2048", dir);
  EXPECT_NE(missing.rc, 0);
  EXPECT_TRUE(contains(missing.err, "--model is required")) << missing.err;

  Result overlap = run("--model llama3-8b --global-batch 64 --seq 2048 --overlap some", dir);
  EXPECT_NE(overlap.rc, 0);
  EXPECT_TRUE(contains(overlap.err, "--overlap: unknown value 'some'")) << overlap.err;

  // A topology without device.peak_tflops has no compute estimate: --rank-by step needs --gpu-tflops.
  Result step = run("--topology local-cpu --model llama3-8b --global-batch 64 --seq 2048 --rank-by step", dir);
  EXPECT_NE(step.rc, 0);
  EXPECT_TRUE(contains(step.err, "gives no device.peak_tflops; pass --gpu-tflops")) << step.err;

  Result mfu = run("--model llama3-8b --global-batch 64 --seq 2048 --mfu 40", dir);
  EXPECT_NE(mfu.rc, 0);
  EXPECT_TRUE(contains(mfu.err, "--mfu must be a fraction of the peak in (0, 1]")) << mfu.err;

  Result sp = run("--model llama3-8b --global-batch 64 --seq 2048 --sequence-parallel --no-sequence-parallel", dir);
  EXPECT_NE(sp.rc, 0);
  EXPECT_TRUE(contains(sp.err, "contradict")) << sp.err;

  Result layout = run("--model llama3-8b --global-batch 64 --seq 2048 --layout tp:8", dir);
  EXPECT_NE(layout.rc, 0);
  EXPECT_TRUE(contains(layout.err, "--layout: cannot read 'tp:8'")) << layout.err;
}

// Every `commsim plan` command in a fenced code block of the READMEs, continuation lines joined:
// each must run and find at least one layout. The READMEs are read as they are, so an example
// that stops working fails here.
std::vector<std::string> readme_plan_commands(const std::string& path) {
  std::vector<std::string> out;
  std::istringstream lines(slurp(path));
  bool fenced = false;
  std::string pending;
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("```", 0) == 0) {
      fenced = !fenced;
      continue;
    }
    if (!fenced) continue;
    std::string text = pending.empty() ? line.substr(std::min(line.find_first_not_of(' '), line.size())) : line;
    if (pending.empty() && text.rfind("commsim plan ", 0) != 0) continue;
    const bool more = !text.empty() && text.back() == '\\';
    pending += more ? text.substr(0, text.size() - 1) : text;
    if (!more) {
      out.push_back(pending.substr(std::string("commsim plan ").size()));
      pending.clear();
    }
  }
  return out;
}

TEST_F(PlanE2E, EveryReadmeExampleFindsLayouts) {
  test::TempDir dir;
  std::size_t from_main_readme = 0;
  for (const char* readme : {"README.md", "configs/models/README.md", "configs/topologies/README.md"}) {
    for (const std::string& args : readme_plan_commands(readme)) {
      if (std::string(readme) == "README.md") ++from_main_readme;
      Result r = run(args, dir);
      ASSERT_EQ(r.rc, 0) << readme << ": commsim plan " << args << "\n" << r.err;
      EXPECT_FALSE(layout_rows(r.out).empty()) << readme << ": commsim plan " << args << "\n" << r.out;
      EXPECT_FALSE(contains(r.out, "# 0 layouts fit")) << readme << ": commsim plan " << args << "\n" << r.out;
    }
  }
  EXPECT_GE(from_main_readme, 1u) << "README.md shows how to run commsim plan";
}

TEST_F(PlanE2E, MemoryReserveIsPrintedAndOverridable) {
  test::TempDir dir;
  Result r = run(kLlama + " --top 3", dir);
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "(128 GPUs, 80.0 GiB each, 3.1 GiB kept free)")) << r.out;
  EXPECT_TRUE(contains(r.out,
                       "memory reserve: 3.1 GiB of the 80.0 GiB per GPU kept free, layouts use at most 76.9 GiB "
                       "(CUDA context and workspaces 0.5 GiB, NCCL buffers 1.0 GiB, allocator fragmentation 2% "
                       "= 1.6 GiB)"))
      << r.out;
  EXPECT_TRUE(contains(r.out, "2-byte parameters, 4-byte gradients, optimizer 12 B/param")) << r.out;

  Result none = run(kLlama + " --top 3 --memory-reserve 0 --grad-dtype bf16", dir);
  ASSERT_EQ(none.rc, 0) << none.err;
  EXPECT_TRUE(contains(none.out, "0.0 GiB kept free")) << none.out;
  EXPECT_TRUE(contains(none.out, "(no reserve; --memory-reserve default keeps one)")) << none.out;
  EXPECT_TRUE(contains(none.out, "2-byte gradients, optimizer 16 B/param")) << none.out;

  Result fixed = run(kLlama + " --top 3 --memory-reserve 8GiB --fp8 --tp-overlap", dir);
  ASSERT_EQ(fixed.rc, 0) << fixed.err;
  EXPECT_TRUE(contains(fixed.out, "overlapped with the GEMMs (--tp-overlap)")) << fixed.out;
  EXPECT_TRUE(contains(fixed.out, "memory reserve: 8.0 GiB of the 80.0 GiB per GPU kept free")) << fixed.out;
  EXPECT_TRUE(contains(fixed.out, "FP8 GEMMs save their inputs as 1-byte casts")) << fixed.out;

  // Host ranks keep no GPU reserve.
  Result host =
      run("--topology local-cpu --model llama3-8b --global-batch 8 --seq 512 --memory-limit 64GiB "
          "--gpu-tflops 1 --top 1",
          dir);
  ASSERT_EQ(host.rc, 0) << host.err;
  EXPECT_TRUE(contains(host.out, "64.0 GiB each, 0.0 GiB kept free")) << host.out;

  Result all = run(kLlama + " --memory-reserve 80GiB", dir);
  EXPECT_EQ(all.rc, 1);
  EXPECT_TRUE(contains(all.err, "leaves nothing of the 80.0 GiB per GPU; give a smaller --memory-reserve")) << all.err;
  Result grad = run(kLlama + " --grad-dtype fp8", dir);
  EXPECT_EQ(grad.rc, 1);
  EXPECT_TRUE(contains(grad.err, "gradients must be 2 (bf16/fp16) or 4 (fp32) bytes")) << grad.err;
  Result bad = run(kLlama + " --grad-dtype int4", dir);
  EXPECT_EQ(bad.rc, 1);
  EXPECT_TRUE(contains(bad.err, "unknown dtype 'int4'")) << bad.err;
}

TEST_F(PlanE2E, PricesWithNcclsChoiceUnlessAskedForOurs) {
  test::TempDir dir;
  Result nccl = run(kLlama + " --top 1", dir);
  ASSERT_EQ(nccl.rc, 0) << nccl.err;
  EXPECT_TRUE(contains(nccl.out, "pricing: each collective as NCCL runs it, NCCL's own choice")) << nccl.out;
  EXPECT_TRUE(contains(nccl.out, "tp:nccl-")) << nccl.out;
  Result ours = run(kLlama + " --top 1 --algorithms ours", dir);
  ASSERT_EQ(ours.rc, 0) << ours.err;
  EXPECT_TRUE(contains(ours.out, "pricing: each collective by the fastest of 16 candidate algorithms")) << ours.out;
  Result host =
      run("--topology local-cpu --model llama3-8b --global-batch 8 --seq 512 --memory-limit 64GiB "
          "--gpu-tflops 1 --algorithms nccl",
          dir);
  EXPECT_EQ(host.rc, 1);
  EXPECT_TRUE(contains(host.err, "has no nccl: section (or no GPUs) for NCCL's model; use --algorithms ours"))
      << host.err;
}

// The README's plan example shows this build's output: its layout rows are the command's, and
// they leave the reserve free.
TEST_F(PlanE2E, ReadmeExampleOutputIsThisBuilds) {
  test::TempDir dir;
  const std::string readme = slurp("README.md");
  const std::size_t section = readme.find("## plan:");
  ASSERT_NE(section, std::string::npos);
  const std::size_t cmd_at = readme.find("commsim plan ", section);
  const std::string args = readme.substr(cmd_at + 13, readme.find('\n', cmd_at) - cmd_at - 13);
  const std::size_t text_at = readme.find("```text\n", section);
  ASSERT_NE(text_at, std::string::npos);
  const std::string shown = readme.substr(text_at + 8, readme.find("```", text_at + 8) - text_at - 8);
  Result r = run(args, dir);
  ASSERT_EQ(r.rc, 0) << r.err;
  // The title and the count of layouts (the README's first two lines) as printed.
  std::istringstream head(shown);
  for (std::string line; std::getline(head, line) && line.rfind("# ", 0) == 0;)
    EXPECT_TRUE(r.out.find(line + "\n") != std::string::npos) << "README.md's plan example is out of date: " << line;
  // The README shows the first layout rows without the algorithms column, up to the checkpoint table.
  std::vector<std::string> in_readme = layout_rows(shown);
  in_readme.erase(std::find_if(in_readme.begin(), in_readme.end(), [](const std::string& l) { return l[0] == '#'; }),
                  in_readme.end());
  const std::vector<std::string> printed = layout_rows(r.out);
  ASSERT_FALSE(in_readme.empty()) << shown;
  for (std::size_t i = 0; i < in_readme.size(); ++i) {
    ASSERT_LT(i, printed.size());
    EXPECT_EQ(in_readme[i], printed[i].substr(0, in_readme[i].size())) << "README.md's plan example is out of date";
  }
  // The memory column is right-aligned under its header.
  const std::size_t header_at = r.out.find(" rank ");
  const std::string header = r.out.substr(header_at, r.out.find('\n', header_at) - header_at);
  const std::size_t mem_end = header.find("mem GiB") + 7;
  ASSERT_LT(mem_end, printed.front().size());
  const std::string upto = printed.front().substr(0, mem_end);
  EXPECT_LE(std::stod(upto.substr(upto.find_last_of(' ') + 1)), 80.0 - 3.1) << "the top layout leaves the reserve free";
}

}  // namespace
}  // namespace commsim
