#include "collectives/elements/reduce.h"

#include <bit>
#include <cmath>
#include <cstring>

namespace commsim {
namespace {

// ---- 16-bit floats: arithmetic in float, rounding to nearest even on the way back -------------------

inline float bf16_to_float(std::uint16_t h) {
  return std::bit_cast<float>(static_cast<std::uint32_t>(h) << 16);
}

inline std::uint16_t float_to_bf16(float f) {
  const std::uint32_t u = std::bit_cast<std::uint32_t>(f);
  const std::uint32_t rounded = (u + 0x7FFFu + ((u >> 16) & 1u)) >> 16;
  const bool nan = (u & 0x7FFFFFFFu) > 0x7F800000u;
  return static_cast<std::uint16_t>(nan ? ((u >> 16) | 0x40u) : rounded);
}

inline float half_to_float(std::uint16_t h) {
  const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
  const std::uint32_t exp = (h >> 10) & 0x1Fu, mant = h & 0x3FFu;
  if (exp == 0) {  // zero or subnormal: mant * 2^-24
    const float v = static_cast<float>(mant) * 5.9604644775390625e-8f;
    return std::bit_cast<float>(std::bit_cast<std::uint32_t>(v) | sign);
  }
  if (exp == 31) return std::bit_cast<float>(sign | 0x7F800000u | (mant << 13));
  return std::bit_cast<float>(sign | ((exp + 112) << 23) | (mant << 13));
}

inline std::uint16_t float_to_half(float f) {
  const std::uint32_t u = std::bit_cast<std::uint32_t>(f);
  const std::uint32_t sign = (u >> 16) & 0x8000u, a = u & 0x7FFFFFFFu;
  if (a >= 0x7F800000u) return static_cast<std::uint16_t>(sign | (a > 0x7F800000u ? 0x7E00u : 0x7C00u));
  if (a >= 0x477FF000u) return static_cast<std::uint16_t>(sign | 0x7C00u);  // rounds to infinity
  if (a < 0x38800000u) {  // subnormal half: round |f| * 2^24 to nearest even
    const float scaled = std::bit_cast<float>(a) * 16777216.0f;
    return static_cast<std::uint16_t>(sign | static_cast<std::uint32_t>(std::nearbyint(scaled)));
  }
  const std::uint32_t odd = (a >> 13) & 1u;
  return static_cast<std::uint16_t>(sign | ((a + 0xC8000FFFu + odd) >> 13));
}

// ---- reduction loops ---------------------------------------------------------------------------------

struct Sum {
  template <class T>
  T operator()(T a, T b) const {
    return a + b;
  }
  // Wrapping, never undefined, for int32.
  std::int32_t operator()(std::int32_t a, std::int32_t b) const {
    return static_cast<std::int32_t>(static_cast<std::uint32_t>(a) + static_cast<std::uint32_t>(b));
  }
};
struct Min {
  template <class T>
  T operator()(T a, T b) const {
    return b < a ? b : a;
  }
};
struct Max {
  template <class T>
  T operator()(T a, T b) const {
    return a < b ? b : a;
  }
};

template <class T, class Op>
void combine(void* dst, const void* src, std::uint64_t n, Op op) {
  T* __restrict d = static_cast<T*>(dst);
  const T* __restrict s = static_cast<const T*>(src);
  for (std::uint64_t i = 0; i < n; ++i) d[i] = op(d[i], s[i]);
}

template <float (*ToFloat)(std::uint16_t), std::uint16_t (*FromFloat)(float), class Op>
void combine16(void* dst, const void* src, std::uint64_t n, Op op) {
  std::uint16_t* __restrict d = static_cast<std::uint16_t*>(dst);
  const std::uint16_t* __restrict s = static_cast<const std::uint16_t*>(src);
  for (std::uint64_t i = 0; i < n; ++i) d[i] = FromFloat(op(ToFloat(d[i]), ToFloat(s[i])));
}

template <class Op>
void combine_any(void* dst, const void* src, std::uint64_t n, DType dtype, Op op) {
  switch (dtype) {
    case DType::Float32: return combine<float>(dst, src, n, op);
    case DType::Float64: return combine<double>(dst, src, n, op);
    case DType::Int32: return combine<std::int32_t>(dst, src, n, op);
    case DType::BFloat16: return combine16<bf16_to_float, float_to_bf16>(dst, src, n, op);
    case DType::Float16: return combine16<half_to_float, float_to_half>(dst, src, n, op);
  }
}

// ---- exactly checkable inputs ------------------------------------------------------------------------

// Every integer in [0, limit] is exact in the type.
std::uint64_t exact_limit(DType t) {
  switch (t) {
    case DType::BFloat16: return 256;
    case DType::Float16: return 2048;
    default: return std::uint64_t{1} << 24;
  }
}

// Inputs of the reducing collectives: element i of rank r is f((r + i) mod M), so any sum over a
// subset of ranks stays within exact_limit, and sums, minima and maxima over all ranks have closed
// forms (the ranks see consecutive residues).
//   nranks <= L: f(x) = x, M = L / nranks + 1 (a sum is at most nranks (M - 1) <= L);
//   nranks >  L: f(x) = (x == 0), M = ceil(nranks / L) (at most ceil(nranks / M) <= L ones).
struct ReducingValues {
  std::uint64_t m = 1;
  bool indicator = false;

  ReducingValues(DType t, int nranks) {
    const std::uint64_t limit = exact_limit(t), p = static_cast<std::uint64_t>(nranks);
    indicator = p > limit;
    m = indicator ? (p + limit - 1) / limit : limit / p + 1;
  }
  std::uint64_t value(std::uint64_t rank, std::uint64_t i) const {
    const std::uint64_t x = (rank + i) % m;
    return indicator ? (x == 0 ? 1 : 0) : x;
  }
  // Sum of f(x mod M) for x in [0, n).
  std::uint64_t prefix(std::uint64_t n) const {
    if (indicator) return (n + m - 1) / m;
    const std::uint64_t t = n % m;
    return (n / m) * (m * (m - 1) / 2) + t * (t == 0 ? 0 : t - 1) / 2;
  }
  // The reduction over ranks 0..p-1 of element i.
  std::uint64_t expected(RedOp op, std::uint64_t p, std::uint64_t i) const {
    const std::uint64_t a = i % m;
    const bool all_residues = p >= m || a + p > m;  // the residues seen wrap around (so include 0 and m-1)
    switch (op) {
      case RedOp::Sum: return prefix(i + p) - prefix(i);
      case RedOp::Min: return indicator ? (p == 1 ? value(0, i) : 0) : (all_residues ? 0 : a);
      case RedOp::Max: return indicator ? (all_residues || a == 0 ? 1 : 0) : (all_residues ? m - 1 : a + p - 1);
    }
    return 0;
  }
};

// Inputs of the other collectives: different on every rank and position, exact in the type.
std::uint64_t moved_value(DType t, std::uint64_t rank, std::uint64_t i) {
  return (rank * 7919 + i) % exact_limit(t);
}

void store(void* data, std::uint64_t i, DType t, std::uint64_t v) {
  switch (t) {
    case DType::Float32: static_cast<float*>(data)[i] = static_cast<float>(v); break;
    case DType::Float64: static_cast<double*>(data)[i] = static_cast<double>(v); break;
    case DType::Int32: static_cast<std::int32_t*>(data)[i] = static_cast<std::int32_t>(v); break;
    case DType::BFloat16: static_cast<std::uint16_t*>(data)[i] = float_to_bf16(static_cast<float>(v)); break;
    case DType::Float16: static_cast<std::uint16_t*>(data)[i] = float_to_half(static_cast<float>(v)); break;
  }
}

double load(const void* data, std::uint64_t i, DType t) {
  switch (t) {
    case DType::Float32: return static_cast<const float*>(data)[i];
    case DType::Float64: return static_cast<const double*>(data)[i];
    case DType::Int32: return static_cast<const std::int32_t*>(data)[i];
    case DType::BFloat16: return bf16_to_float(static_cast<const std::uint16_t*>(data)[i]);
    case DType::Float16: return half_to_float(static_cast<const std::uint16_t*>(data)[i]);
  }
  return 0;
}

}  // namespace

void reduce_into(void* dst, const void* src, std::uint64_t count, DType dtype, RedOp op) {
  switch (op) {
    case RedOp::Sum: return combine_any(dst, src, count, dtype, Sum{});
    case RedOp::Min: return combine_any(dst, src, count, dtype, Min{});
    case RedOp::Max: return combine_any(dst, src, count, dtype, Max{});
  }
}

void fill_input(void* input, std::uint64_t count, DType dtype, Collective c, int rank, int nranks) {
  const std::uint64_t r = static_cast<std::uint64_t>(rank);
  if (reduces(c)) {
    const ReducingValues values(dtype, nranks);
    for (std::uint64_t i = 0; i < count; ++i) store(input, i, dtype, values.value(r, i));
  } else {
    for (std::uint64_t i = 0; i < count; ++i) store(input, i, dtype, moved_value(dtype, r, i));
  }
}

std::uint64_t count_wrong(const void* output, std::uint64_t count, DType dtype, RedOp op, Collective c, int rank,
                          int nranks, int root) {
  const std::uint64_t p = static_cast<std::uint64_t>(nranks), r = static_cast<std::uint64_t>(rank);
  std::uint64_t wrong = 0;
  auto check = [&](std::uint64_t e, std::uint64_t expected) {
    if (load(output, e, dtype) != static_cast<double>(expected)) ++wrong;
  };
  switch (c) {
    case Collective::AllReduce:
    case Collective::Reduce:
    case Collective::ReduceScatter: {
      if (c == Collective::Reduce && rank != root) return 0;
      const ReducingValues values(dtype, nranks);
      // reducescatter: rank r's Output is block r of the inputs.
      const std::uint64_t first = c == Collective::ReduceScatter ? r * count : 0;
      for (std::uint64_t e = 0; e < count; ++e) check(e, values.expected(op, p, first + e));
      break;
    }
    case Collective::AllGather:
    case Collective::AllToAll: {
      // Output block q comes from rank q: its Input block (allgather) or its block r (alltoall).
      const std::uint64_t block = count / p;
      const std::uint64_t first = c == Collective::AllToAll ? r * block : 0;
      for (std::uint64_t e = 0; e < block * p; ++e) check(e, moved_value(dtype, e / block, first + e % block));
      break;
    }
    case Collective::Broadcast:
      for (std::uint64_t e = 0; e < count; ++e) check(e, moved_value(dtype, static_cast<std::uint64_t>(root), e));
      break;
    case Collective::SendRecv:
      for (std::uint64_t e = 0; e < count; ++e) check(e, moved_value(dtype, (r + p - 1) % p, e));
      break;
  }
  return wrong;
}

}  // namespace commsim
