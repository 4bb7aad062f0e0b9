#include "collectives/elements/dtype.h"

#include <cctype>
#include <string>

namespace commsim {

std::uint32_t dtype_size(DType t) {
  switch (t) {
    case DType::Float32: return 4;
    case DType::Float64: return 8;
    case DType::Int32: return 4;
    case DType::BFloat16: return 2;
    case DType::Float16: return 2;
  }
  return 0;
}

std::string_view to_string(DType t) {
  switch (t) {
    case DType::Float32: return "float32";
    case DType::Float64: return "float64";
    case DType::Int32: return "int32";
    case DType::BFloat16: return "bfloat16";
    case DType::Float16: return "float16";
  }
  return "?";
}

std::string_view to_string(RedOp op) {
  switch (op) {
    case RedOp::Sum: return "sum";
    case RedOp::Min: return "min";
    case RedOp::Max: return "max";
  }
  return "?";
}

std::optional<DType> parse_dtype(std::string_view name) {
  std::string n;
  for (char c : name) n += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (n == "float32" || n == "float" || n == "fp32" || n == "f32") return DType::Float32;
  if (n == "float64" || n == "double" || n == "fp64" || n == "f64") return DType::Float64;
  if (n == "int32" || n == "int" || n == "i32") return DType::Int32;
  if (n == "bfloat16" || n == "bf16") return DType::BFloat16;
  if (n == "float16" || n == "half" || n == "fp16" || n == "f16") return DType::Float16;
  return std::nullopt;
}

std::optional<RedOp> parse_redop(std::string_view name) {
  std::string n;
  for (char c : name) n += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (n == "sum") return RedOp::Sum;
  if (n == "min") return RedOp::Min;
  if (n == "max") return RedOp::Max;
  return std::nullopt;
}

}  // namespace commsim
