#pragma once
// A transformer language model described by a model file (configs/models/*.yaml): the shapes that
// decide how much a training job communicates and how much memory it needs (layers, hidden size,
// attention heads and KV heads, FFN size, vocabulary, experts and top-k, parameter dtype). Plain
// data; load_llm_model() validates everything and reports file, line and field, as topology files do.
#include <string>

namespace commsim {

enum class FfnKind { Gelu, SwiGlu };  // 2 matrices (h->f->h) or 3 (gate, up, down)

struct LlmModel {
  std::string name;
  std::string description;
  std::string source_path;  // the file it was read from ("" when parsed from text)
  std::string text;         // the YAML text as read

  int layers = 0;      // transformer blocks
  int hidden = 0;      // h, the model width
  int heads = 0;       // attention (query) heads
  int kv_heads = 0;    // key/value heads (= heads without grouped-query attention)
  int ffn_hidden = 0;  // f, the inner size of the MLP (of one expert for MoE)
  FfnKind ffn = FfnKind::Gelu;
  int vocab = 0;
  bool tied_embeddings = false;  // output projection shares the input embedding matrix
  int position_embeddings = 0;   // rows of a learned position table (0: rotary, no parameters)
  int experts = 1;               // 1 = dense; > 1 = every MLP is a mixture of experts
  int top_k = 1;                 // experts each token is routed to
  // Experts every token passes besides the routed ones (DeepSeekMoE, Qwen-MoE), each of
  // ffn_hidden: dense parameters, replicated over expert parallelism. 0 without.
  int shared_experts = 0;
  // Tokens an expert takes, as a multiple of its even share (top_k x tokens / experts); the
  // dispatch buffers, the experts' GEMMs and their activations are padded to it (Switch
  // Transformer, GShard; Megatron-Core --moe-expert-capacity-factor with padding). 0 = dropless:
  // as routed.
  double capacity_factor = 0;
  // The routed copies of a token that dispatch, compute and keep: top_k, or top_k x capacity_factor.
  double routed_copies() const { return capacity_factor > 0 ? top_k * capacity_factor : top_k; }
  // Dropout after attention and the MLP (and on the attention probabilities): its masks are kept
  // for the backward pass. GPT-style models train with it; Llama and Mixtral without.
  bool dropout = true;
  std::string param_dtype = "bf16";
  int param_bytes = 2;  // bytes of one parameter in param_dtype

  bool moe() const { return experts > 1; }
  int head_dim() const { return hidden / heads; }
  int ffn_matrices() const { return ffn == FfnKind::SwiGlu ? 3 : 2; }

  // Parameter counts (weights of matrices plus norm scales; biases are ignored: < 0.01 %).
  double attention_params_per_layer() const;  // Q, K, V, O projections
  double expert_params() const;               // one MLP (one expert)
  double dense_params_per_layer()
      const;  // attention + norms (+ the MLP when dense, + router and shared experts when MoE)
  double expert_params_per_layer() const;  // experts * expert_params() for MoE, else 0
  double embedding_params() const;         // input embedding (+ positions)
  double output_params() const;            // output projection (0 when tied) + final norm
  double total_params() const;
  // Parameters a token passes through in one forward pass (top_k experts of each MoE layer).
  double active_params() const;
};

// Reads and validates a model file. Throws Error("FILE:LINE: FIELD: what is wrong") for an
// unknown key, a missing field, a wrong type, a non-positive value, an inconsistent shape (hidden
// not divisible by heads, heads not divisible by kv_heads, top_k > experts), an unknown dtype, or a
// file that is empty or not YAML.
LlmModel load_llm_model(const std::string& path);
// The same from text; `origin` names it in error messages.
LlmModel parse_llm_model(const std::string& yaml_text, const std::string& origin);

// A bare name ("llama3-70b") resolves to <config dir>/models/llama3-70b.yaml, the config dir found
// as for topologies (model/config_dirs.h); a path (anything with a '/' or ending in .yaml) is
// used as it is.
std::string resolve_model_path(const std::string& name_or_path);

// Bytes of one value of a dtype name: fp32/float32 4, bf16/fp16/float16/bfloat16 2, fp8 1.
// Throws Error listing the valid names.
int dtype_bytes(const std::string& dtype);

}  // namespace commsim
