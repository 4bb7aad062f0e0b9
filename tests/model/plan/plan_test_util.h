#pragma once
// What the planning tests share: the preset topologies and models of configs/, a GPT-style model
// built in code, and the options `commsim plan` starts from.
#include <string>

#include "model/plan/llm_model.h"
#include "model/plan/plan.h"
#include "model/topology/topology.h"

namespace commsim::test {

inline Topology preset_topology(const std::string& name) {
  return load_topology(std::string(COMMSIM_SOURCE_DIR) + "/configs/topologies/" + name + ".yaml");
}

inline LlmModel preset_model(const std::string& name) {
  return load_llm_model(std::string(COMMSIM_SOURCE_DIR) + "/configs/models/" + name + ".yaml");
}

// A GPT-style model (GELU MLP of 4h, multi-head attention, 2-byte parameters): Korthikanti's
// formulas apply as printed.
inline LlmModel gpt_model(int layers, int hidden, int heads, int vocab) {
  LlmModel m;
  m.name = "gpt-test";
  m.layers = layers;
  m.hidden = hidden;
  m.heads = heads;
  m.kv_heads = heads;
  m.ffn_hidden = 4 * hidden;
  m.ffn = FfnKind::Gelu;
  m.vocab = vocab;
  m.param_bytes = 2;
  return m;
}

// The options `commsim plan` starts from on this topology (micro-batch 1, sequence parallelism,
// ZeRO-1, selective recomputation, the peak at the default utilisation, ranked by step time,
// interleaving up to the default depth, the default checkpoint interval, the default memory
// reserve); the job's sizes are the caller's. The gradient dtype is the parameter dtype's unless
// the model is given (then Megatron's, as `commsim plan --grad-dtype auto`).
inline PlanOptions plan_command_defaults(const Topology& topo) {
  PlanOptions o;
  o.micro_batch = 1;
  o.sequence_parallel = true;
  o.zero = 1;
  o.recompute = Recompute::Selective;
  o.gpu_tflops = topo.peak_tflops * kDefaultMfu;
  o.rank_by = RankBy::Step;
  o.max_virtual_stages = kDefaultMaxVirtualStages;
  o.checkpoint_every = kDefaultCheckpointEvery;
  o.memory_reserve = kDefaultMemoryReserve;
  return o;
}

inline PlanOptions plan_command_defaults(const Topology& topo, const LlmModel& model) {
  PlanOptions o = plan_command_defaults(topo);
  o.grad_bytes = default_grad_bytes(model);
  return o;
}

}  // namespace commsim::test
