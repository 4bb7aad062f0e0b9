// Model files: the presets load and match the published parameter counts; bad files are rejected
// with file, line and field.
#include <gtest/gtest.h>

#include <string>

#include "model/error.h"
#include "model/plan/llm_model.h"

namespace commsim {
namespace {

std::string preset(const std::string& name) {
  return std::string(COMMSIM_SOURCE_DIR) + "/configs/models/" + name + ".yaml";
}

// The message of the Error thrown by parsing `text`, or "" when it parses.
std::string error_of(const std::string& text) {
  try {
    parse_llm_model(text, "bad.yaml");
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

const char* kSmall =
    "name: small\n"
    "layers: 2\n"
    "hidden: 8\n"
    "heads: 2\n"
    "kv_heads: 1\n"
    "ffn_hidden: 16\n"
    "ffn: swiglu\n"
    "vocab: 10\n";

TEST(LlmModel, ParameterCountOfASmallModelByHand) {
  LlmModel m = parse_llm_model(kSmall, "small.yaml");
  EXPECT_EQ(m.head_dim(), 4);
  // Q, O: 8x8 each; K, V: 8 x (1 KV head x 4) each -> 128 + 64.
  EXPECT_DOUBLE_EQ(m.attention_params_per_layer(), 192);
  // + 2 norm scales of 8 + SwiGLU 3 x 8 x 16.
  EXPECT_DOUBLE_EQ(m.dense_params_per_layer(), 192 + 16 + 384);
  // 2 layers + embedding 10x8 + untied output 10x8 + final norm 8.
  EXPECT_DOUBLE_EQ(m.total_params(), 2 * 592 + 80 + 80 + 8);
  EXPECT_DOUBLE_EQ(m.active_params(), m.total_params());
  EXPECT_EQ(m.param_bytes, 2);  // bf16 by default
  EXPECT_EQ(m.experts, 1);
}

TEST(LlmModel, MoeCountsExpertsAndActiveParameters) {
  std::string text = std::string(kSmall) + "experts: 4\ntop_k: 2\n";
  LlmModel m = parse_llm_model(text, "moe.yaml");
  ASSERT_TRUE(m.moe());
  EXPECT_DOUBLE_EQ(m.expert_params_per_layer(), 4 * 384);
  EXPECT_DOUBLE_EQ(m.dense_params_per_layer(), 192 + 16 + 8 * 4 /* router */);
  EXPECT_DOUBLE_EQ(m.total_params() - m.active_params(), 2 * 2 * 384);  // 2 idle experts per layer

  // Shared experts: dense (every token passes them), so active as well as counted once.
  LlmModel shared = parse_llm_model(text + "shared_experts: 1\n", "shared.yaml");
  EXPECT_EQ(shared.shared_experts, 1);
  EXPECT_DOUBLE_EQ(shared.dense_params_per_layer(), m.dense_params_per_layer() + 384);
  EXPECT_DOUBLE_EQ(shared.total_params() - shared.active_params(), 2 * 2 * 384);
  EXPECT_NE(error_of(std::string(kSmall) + "shared_experts: 1\n").find("shared_experts: needs a mixture of experts"),
            std::string::npos);

  // A capacity factor pads the routed copies; 0 (the default) is dropless.
  EXPECT_DOUBLE_EQ(m.routed_copies(), 2);
  LlmModel padded = parse_llm_model(text + "capacity_factor: 1.25\n", "padded.yaml");
  EXPECT_DOUBLE_EQ(padded.capacity_factor, 1.25);
  EXPECT_DOUBLE_EQ(padded.routed_copies(), 2.5);
  EXPECT_DOUBLE_EQ(padded.total_params(), m.total_params());
  EXPECT_NE(error_of(text + "capacity_factor: lots\n").find("capacity_factor: expected a number, got 'lots'"),
            std::string::npos);
  EXPECT_NE(error_of(text + "capacity_factor: -1\n").find("capacity_factor: must not be negative"), std::string::npos);
}

// Published totals: Megatron-LM's 174.6B for GPT-3 (Narayanan et al. 2021, Table 2), Meta's model
// cards for Llama 3 (8.03B, 70.6B, 405B), Mixtral's paper (46.7B total, 12.9B active), Qwen's
// Qwen1.5-MoE-A2.7B (14.3B total, 2.7B active; https://qwenlm.github.io/blog/qwen-moe/).
TEST(LlmModel, PresetsMatchPublishedParameterCounts) {
  struct Case {
    const char* name;
    double total;
    double active;
  } cases[] = {{"gpt3-175b", 174.6e9, 174.6e9}, {"llama3-8b", 8.03e9, 8.03e9},    {"llama3-70b", 70.6e9, 70.6e9},
               {"llama3-405b", 405e9, 405e9},   {"mixtral-8x7b", 46.7e9, 12.9e9}, {"qwen1.5-moe-a2.7b", 14.3e9, 2.7e9}};
  for (const auto& c : cases) {
    LlmModel m = load_llm_model(preset(c.name));
    EXPECT_EQ(m.name, c.name);
    EXPECT_NEAR(m.total_params() / c.total, 1.0, 0.005) << c.name << ": " << m.total_params();
    EXPECT_NEAR(m.active_params() / c.active, 1.0, 0.005) << c.name << ": " << m.active_params();
  }
}

// Dropout: on unless a file says otherwise; the Llama and Mixtral presets train without it.
TEST(LlmModel, DropoutDefaultsOnAndPresetsSayIt) {
  EXPECT_TRUE(parse_llm_model(kSmall, "small.yaml").dropout);
  EXPECT_FALSE(parse_llm_model(std::string(kSmall) + "dropout: false\n", "small.yaml").dropout);
  EXPECT_TRUE(load_llm_model(preset("gpt3-175b")).dropout);
  for (const char* name : {"llama3-8b", "llama3-70b", "llama3-405b", "mixtral-8x7b"})
    EXPECT_FALSE(load_llm_model(preset(name)).dropout) << name;
}

TEST(LlmModel, ResolvesBareNamesToPresets) {
  std::string path = resolve_model_path("llama3-70b");
  EXPECT_NE(path.find("models/llama3-70b.yaml"), std::string::npos) << path;
  EXPECT_EQ(load_llm_model(path).layers, 80);
  EXPECT_EQ(resolve_model_path("some/dir/x.yaml"), "some/dir/x.yaml");
  EXPECT_THROW(resolve_model_path("no-such-model"), Error);
}

TEST(LlmModel, RejectsBadFilesWithFileLineAndField) {
  EXPECT_EQ(error_of(kSmall), "");
  struct Case {
    std::string text;
    std::string expect;  // a piece of the message
  } cases[] = {
      {"", "bad.yaml:1: the model file is empty"},
      {"name: [unclosed\n", "bad.yaml:"},
      {"- a\n- b\n", "bad.yaml:1: expected a mapping"},
      {std::string(kSmall) + "layerz: 3\n", "bad.yaml:9: layerz: unknown field"},
      {"name: x\nhidden: 8\nheads: 2\nffn_hidden: 16\nvocab: 10\n", "bad.yaml:1: layers: missing field"},
      {"name: x\nlayers: two\nhidden: 8\nheads: 2\nffn_hidden: 16\nvocab: 10\n",
       "bad.yaml:2: layers: expected a whole number, got 'two'"},
      {"name: x\nlayers: 2\nhidden: 8.5\nheads: 2\nffn_hidden: 16\nvocab: 10\n",
       "bad.yaml:3: hidden: expected a whole number"},
      {"name: x\nlayers: 0\nhidden: 8\nheads: 2\nffn_hidden: 16\nvocab: 10\n", "bad.yaml:2: layers: must be positive"},
      {"name: x\nlayers: 2\nhidden: 8\nheads: 2\nffn_hidden: -16\nvocab: 10\n",
       "bad.yaml:5: ffn_hidden: must be positive"},
      {"name: x\nlayers: [1, 2]\nhidden: 8\nheads: 2\nffn_hidden: 16\nvocab: 10\n",
       "bad.yaml:2: layers: expected a single value"},
      {"name: x\nlayers: 2\nhidden: 8\nheads: 3\nffn_hidden: 16\nvocab: 10\n",
       "bad.yaml:4: heads: 3 heads do not divide hidden size 8"},
      {std::string(kSmall) + "experts: 2\ntop_k: 3\n", "bad.yaml:10: top_k: top_k 3 exceeds the 2 experts"},
      {std::string(kSmall) + "param_dtype: fp12\n", "bad.yaml:9: param_dtype: unknown dtype 'fp12'"},
      {std::string(kSmall) + "tied_embeddings: maybe\n", "bad.yaml:9: tied_embeddings: expected true or false"},
      {std::string(kSmall) + "layers: 3\n", "bad.yaml:9: layers: field given twice"},
      {std::string(kSmall) + "dropout: 0.1\n", "bad.yaml:9: dropout: expected true or false, got '0.1'"},
  };
  for (const auto& c : cases) {
    std::string msg = error_of(c.text);
    EXPECT_NE(msg.find(c.expect), std::string::npos) << "text:\n" << c.text << "\nmessage: " << msg;
  }
  // kv_heads that do not divide heads, and an unknown MLP kind.
  std::string kv = "name: x\nlayers: 2\nhidden: 8\nheads: 2\nkv_heads: 3\nffn_hidden: 16\nvocab: 10\n";
  EXPECT_NE(error_of(kv).find("bad.yaml:5: kv_heads:"), std::string::npos) << error_of(kv);
  std::string ffn = std::string(kSmall);
  ffn.replace(ffn.find("swiglu"), 6, "relu");
  EXPECT_NE(error_of(ffn).find("bad.yaml:7: ffn: unknown MLP kind 'relu'"), std::string::npos) << error_of(ffn);
}

TEST(LlmModel, MissingFileNamesThePath) {
  try {
    load_llm_model("/nonexistent/model.yaml");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/model.yaml"), std::string::npos);
  }
}

}  // namespace
}  // namespace commsim
