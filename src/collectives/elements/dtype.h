#pragma once
// Element types and reduction operators of the executors (reference, host, CUDA).
#include <cstdint>
#include <optional>
#include <string_view>

namespace commsim {

enum class DType : std::uint8_t { Float32, Float64, Int32, BFloat16, Float16 };
enum class RedOp : std::uint8_t { Sum, Min, Max };

std::uint32_t dtype_size(DType t);
std::string_view to_string(DType t);   // "float32", "float64", "int32", "bfloat16", "float16"
std::string_view to_string(RedOp op);  // "sum", "min", "max"
std::optional<DType> parse_dtype(std::string_view name);  // also "float", "double", "int", "bf16", "half", "fp16"
std::optional<RedOp> parse_redop(std::string_view name);

}  // namespace commsim
