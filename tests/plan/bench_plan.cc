// Benchmark of `commsim plan`: the time to enumerate and price every layout, up to 16,384 GPUs,
// and the comparison with published Megatron-LM runs (GPT-3 175B and the 1T model on DGX A100).
//
//   bench_plan [--repeat N] [--budget-s S]
//
// Prints two tables and exits non-zero when a plan of 16,384 GPUs or fewer takes longer than the
// budget (default 1 s). Every timed plan starts cold (no prices cached from an earlier plan) and
// prices every valid layout (the memory limit is lifted for the timing).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "model/error.h"
#include "model/plan/llm_model.h"
#include "model/plan/plan.h"
#include "model/topology/topology.h"

namespace commsim {
namespace {

std::string config(const std::string& kind, const std::string& name) {
  return std::string(COMMSIM_SOURCE_DIR) + "/configs/" + kind + "/" + name + ".yaml";
}

struct SpeedCase {
  const char* topology;
  const char* model;
  int nodes;
  int global_batch;
  int seq;
};

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

int speed_table(int repeat, double budget_s) {
  const SpeedCase cases[] = {
      {"dgx-h100", "llama3-70b", 16, 1024, 8192},    {"dgx-h100", "llama3-405b", 128, 2048, 8192},
      {"dgx-h100", "llama3-405b", 2048, 2048, 8192}, {"dgx-h100", "mixtral-8x7b", 2048, 8192, 4096},
      {"dgx-a100", "gpt3-175b", 2048, 16384, 2048},  {"gb200-nvl72", "llama3-405b", 224, 16128, 8192},
  };
  std::printf("%-12s %-13s %6s %9s %8s %6s %9s %9s %11s %11s\n", "topology", "model", "GPUs", "layouts", "invalid",
              "priced", "prices", "lookups", "plan ms", "ms/layout");
  int over = 0;
  for (const auto& c : cases) {
    Topology topo = load_topology(config("topologies", c.topology));
    LlmModel model = load_llm_model(config("models", c.model));
    PlanOptions o;
    o.nodes = c.nodes;
    o.global_batch = c.global_batch;
    o.micro_batch = 1;
    o.seq = c.seq;
    o.sequence_parallel = true;
    o.recompute = Recompute::Selective;
    o.zero = 1;
    // Price every valid layout (none left out for memory): the worst case for time.
    o.memory_limit_bytes = 1ull << 50;
    std::vector<double> times;
    PlanResult r;
    for (int i = 0; i < repeat; ++i) {
      auto t0 = std::chrono::steady_clock::now();
      r = plan_layouts(topo, model, o);
      times.push_back(seconds_since(t0));
    }
    std::sort(times.begin(), times.end());
    double median = times[times.size() / 2];
    std::size_t invalid = 0, memory = 0;
    for (const auto& e : r.excluded) (e.memory ? memory : invalid) += 1;
    std::size_t layouts = r.ranked.size() + r.excluded.size();
    std::printf("%-12s %-13s %6d %9zu %8zu %6zu %9zu %9zu %11.3f %11.4f\n", c.topology, c.model, r.gpus, layouts,
                invalid, r.ranked.size(), r.distinct_prices, r.price_lookups, median * 1e3,
                median * 1e3 / std::max<std::size_t>(1, layouts));
    if (r.gpus <= 16384 && median > budget_s) ++over;
  }
  return over;
}

// Narayanan et al. 2021 (SC'21), Table 2 (GPT-3 175B, TP 8 x PP 12, micro-batch 1) and Table 1
// (the 1T model: 128 layers, h 25600, 160 heads, TP 8 x PP 64, 3072 GPUs, batch 3072).
struct MegatronRun {
  const char* name;
  int layers, hidden, heads;
  int gpus, tp, pp, batch;
  double tflops;  // published achieved TFLOP/s per GPU
};

double paper_flops(const MegatronRun& m) {
  const double B = m.batch, s = 2048, l = m.layers, h = m.hidden, V = 51200;
  return 96 * B * s * l * h * h * (1 + s / (6 * h) + V / (16 * l * h));
}

void megatron_table() {
  const MegatronRun runs[] = {
      {"GPT-3 175B", 96, 12288, 96, 384, 8, 12, 1536, 153},
      {"GPT-3 175B", 96, 12288, 96, 768, 8, 12, 1536, 149},
      {"GPT-3 175B", 96, 12288, 96, 1536, 8, 12, 1536, 141},
      {"GPT 1T", 128, 25600, 160, 3072, 8, 64, 3072, 163},
  };
  Topology topo = load_topology(config("topologies", "dgx-a100"));
  LlmModel base = load_llm_model(config("models", "gpt3-175b"));
  base.vocab = 51200;
  auto options = [](const MegatronRun& m, double tflops) {
    PlanOptions o;
    o.nodes = m.gpus / 8;
    o.global_batch = m.batch;
    o.micro_batch = 1;
    o.seq = 2048;
    o.recompute = Recompute::Full;
    o.memory_limit_bytes = 80ull << 30;
    o.gpu_tflops = tflops;
    if (tflops > 0) o.rank_by = RankBy::Step;
    return o;
  };
  auto model_of = [&](const MegatronRun& m) {
    LlmModel x = base;
    x.name = m.name;
    x.layers = m.layers;
    x.hidden = m.hidden;
    x.heads = m.heads;
    x.kv_heads = m.heads;
    x.ffn_hidden = 4 * m.hidden;
    return x;
  };
  auto find = [](const PlanResult& r, const MegatronRun& m, int* rank) -> const LayoutPlan* {
    for (std::size_t i = 0; i < r.ranked.size(); ++i) {
      const Shape& s = r.ranked[i].shape;
      if (s.tp == m.tp && s.pp == m.pp && s.dp == m.gpus / (m.tp * m.pp)) {
        *rank = static_cast<int>(i) + 1;
        return &r.ranked[i];
      }
    }
    return nullptr;
  };

  // One number fitted on the first run: the kernels' achieved TFLOP/s.
  const MegatronRun& first = runs[0];
  PlanResult r0 = plan_layouts(topo, model_of(first), options(first, 0));
  int rank0 = 0;
  const LayoutPlan* p0 = find(r0, first, &rank0);
  if (!p0) throw Error("the published layout of the first run is not planned");
  double t0 = paper_flops(first) / (first.gpus * first.tflops * 1e12);
  double x = paper_flops(first) / (first.gpus * (t0 - p0->comm_s) * (1 - p0->bubble_fraction)) / 1e12;

  std::printf(
      "\nMegatron-LM (Narayanan et al. 2021) on dgx-a100, recompute full, micro-batch 1, overlap none;\n"
      "compute throughput fitted on the first row: %.1f TFLOP/s per GPU\n\n",
      x);
  std::printf("%-11s %5s %3s %3s %3s %5s %9s %9s %7s %7s %7s %8s %8s %6s %6s %16s\n", "model", "GPUs", "DP", "TP", "PP",
              "m", "iter pub", "comm", "TP", "comm%", "bubble", "TF pub", "TF pred", "rank", "rankC", "best (step)");
  for (const auto& m : runs) {
    LlmModel model = model_of(m);
    PlanResult rc = plan_layouts(topo, model, options(m, 0));
    PlanResult rs = plan_layouts(topo, model, options(m, x));
    int rank_comm = 0, rank_step = 0;
    const LayoutPlan* pc = find(rc, m, &rank_comm);
    const LayoutPlan* ps = find(rs, m, &rank_step);
    if (!pc || !ps) {
      std::printf("%-11s %5d: published layout TP=%d PP=%d not planned (does not fit or invalid)\n", m.name, m.gpus,
                  m.tp, m.pp);
      continue;
    }
    double t_pub = paper_flops(m) / (m.gpus * m.tflops * 1e12);
    double predicted = paper_flops(m) / (m.gpus * ps->step_s) / 1e12;
    const Shape& best = rs.ranked.front().shape;
    char best_text[64];
    std::snprintf(best_text, sizeof best_text, "%d/%d/%d %.1fs", best.dp, best.tp, best.pp, rs.ranked.front().step_s);
    std::printf("%-11s %5d %3d %3d %3d %5d %8.1fs %8.2fs %6.2fs %6.1f%% %6.1f%% %8.0f %8.1f %3d/%-2zu %3d/%-2zu %16s\n",
                m.name, m.gpus, pc->shape.dp, m.tp, m.pp, pc->shape.micro_batches, t_pub, pc->comm_s, pc->dim(Dim::TP),
                100 * pc->comm_s / t_pub, 100 * pc->bubble_fraction, m.tflops, predicted, rank_step, rs.ranked.size(),
                rank_comm, rc.ranked.size(), best_text);
  }
  std::printf(
      "\niter pub = FLOPs/(GPUs x published TFLOP/s); comm = predicted exposed communication of the published\n"
      "layout; comm%% = comm / iter pub; TF pred = predicted TFLOP/s per GPU with the fitted compute rate;\n"
      "rank = the published layout's rank by step time / layouts that fit; rankC = its rank by communication\n"
      "alone; best = DP/TP/PP and step time of the planner's best layout by step time.\n");
}

}  // namespace
}  // namespace commsim

int main(int argc, char** argv) {
  int repeat = 5;
  double budget_s = 1.0;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--repeat") && i + 1 < argc) {
      repeat = std::max(1, std::atoi(argv[++i]));
    } else if (!std::strcmp(argv[i], "--budget-s") && i + 1 < argc) {
      budget_s = std::atof(argv[++i]);
    } else {
      std::fprintf(stderr, "usage: bench_plan [--repeat N] [--budget-s S]\n");
      return 2;
    }
  }
  try {
    int over = commsim::speed_table(repeat, budget_s);
    commsim::megatron_table();
    if (over) {
      std::fprintf(stderr, "bench_plan: %d plan(s) of <= 16384 GPUs took longer than %.3f s\n", over, budget_s);
      return 1;
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_plan: error: %s\n", e.what());
    return 1;
  }
  return 0;
}
