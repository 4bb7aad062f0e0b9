// reduce_into, fill_input and count_wrong: the expected values count_wrong derives in closed form
// must equal a plain reduction of the inputs fill_input writes, in every dtype.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "collectives/elements/reduce.h"

namespace commsim {
namespace {

std::vector<std::uint8_t> filled(std::uint64_t count, DType t, Collective c, int rank, int p) {
  std::vector<std::uint8_t> v(count * dtype_size(t));
  fill_input(v.data(), count, t, c, rank, p);
  return v;
}

template <class T>
std::vector<T> reduced(std::vector<T> d, const std::vector<T>& s, DType t, RedOp op) {
  reduce_into(d.data(), s.data(), d.size(), t, op);
  return d;
}

TEST(Reduce, SumMinMaxInEveryDType) {
  using F = std::vector<float>;
  EXPECT_EQ(reduced(F{3, 5, -1}, F{5, 3, 2}, DType::Float32, RedOp::Sum), (F{8, 8, 1}));
  EXPECT_EQ(reduced(F{3, 5, -1}, F{5, 3, 2}, DType::Float32, RedOp::Min), (F{3, 3, -1}));
  EXPECT_EQ(reduced(F{3, 5, -1}, F{5, 3, 2}, DType::Float32, RedOp::Max), (F{5, 5, 2}));
  using D = std::vector<double>;
  EXPECT_EQ(reduced(D{3, 5, -1}, D{5, 3, 2}, DType::Float64, RedOp::Sum), (D{8, 8, 1}));
  EXPECT_EQ(reduced(D{3, 5, -1}, D{5, 3, 2}, DType::Float64, RedOp::Min), (D{3, 3, -1}));
  using I = std::vector<std::int32_t>;
  EXPECT_EQ(reduced(I{3, 5, -1}, I{5, 3, 2}, DType::Int32, RedOp::Sum), (I{8, 8, 1}));
  EXPECT_EQ(reduced(I{3, 5, -1}, I{5, 3, 2}, DType::Int32, RedOp::Max), (I{5, 5, 2}));
  // IEEE encodings: bfloat16 3 = 0x4040, 5 = 0x40A0, 8 = 0x4100, -1 = 0xBF80, 2 = 0x4000, 1 = 0x3F80.
  using H = std::vector<std::uint16_t>;
  EXPECT_EQ(reduced(H{0x4040, 0x40A0, 0xBF80}, H{0x40A0, 0x4040, 0x4000}, DType::BFloat16, RedOp::Sum),
            (H{0x4100, 0x4100, 0x3F80}));
  EXPECT_EQ(reduced(H{0x4040, 0x40A0, 0xBF80}, H{0x40A0, 0x4040, 0x4000}, DType::BFloat16, RedOp::Min),
            (H{0x4040, 0x4040, 0xBF80}));
  // float16 3 = 0x4200, 5 = 0x4500, 8 = 0x4800, -1 = 0xBC00, 2 = 0x4000, 1 = 0x3C00.
  EXPECT_EQ(reduced(H{0x4200, 0x4500, 0xBC00}, H{0x4500, 0x4200, 0x4000}, DType::Float16, RedOp::Sum),
            (H{0x4800, 0x4800, 0x3C00}));
  EXPECT_EQ(reduced(H{0x4200, 0x4500, 0xBC00}, H{0x4500, 0x4200, 0x4000}, DType::Float16, RedOp::Max),
            (H{0x4500, 0x4500, 0x4000}));
}

TEST(Reduce, SixteenBitSumsRoundToNearestEven) {
  using H = std::vector<std::uint16_t>;
  // bfloat16 has 8 significant bits: 256 + 1 ties to 256 (0x4380), 258 (0x4381) + 1 ties to 260 (0x4382).
  EXPECT_EQ(reduced(H{0x4380, 0x4381}, H{0x3F80, 0x3F80}, DType::BFloat16, RedOp::Sum), (H{0x4380, 0x4382}));
  // float16 has 11: 2048 (0x6800) + 1 ties to 2048, 2050 (0x6801) + 1 ties to 2052 (0x6802).
  EXPECT_EQ(reduced(H{0x6800, 0x6801}, H{0x3C00, 0x3C00}, DType::Float16, RedOp::Sum), (H{0x6800, 0x6802}));
  // Subnormal float16: 2^-24 (0x0001) + 2^-24 = 2^-23 (0x0002).
  EXPECT_EQ(reduced(H{0x0001}, H{0x0001}, DType::Float16, RedOp::Sum), (H{0x0002}));
}

// The expected results count_wrong computes in closed form equal a direct reduction of the inputs.
void expect_closed_form_matches(DType t, Collective c, int p, std::uint64_t count, RedOp op) {
  std::vector<std::uint8_t> acc = filled(count, t, c, 0, p);
  for (int r = 1; r < p; ++r) {
    const std::vector<std::uint8_t> in = filled(count, t, c, r, p);
    reduce_into(acc.data(), in.data(), count, t, op);
  }
  if (c == Collective::ReduceScatter) {
    // Rank j's output is block j of the reduced inputs.
    const std::uint64_t block = count / p;
    for (int j = 0; j < p; ++j)
      EXPECT_EQ(0u, count_wrong(acc.data() + j * block * dtype_size(t), block, t, op, c, j, p, 0))
          << to_string(t) << " p=" << p << " rank " << j;
  } else {
    EXPECT_EQ(0u, count_wrong(acc.data(), count, t, op, c, 0, p, 0))
        << to_string(t) << " p=" << p << " " << to_string(op);
  }
}

TEST(Reduce, ClosedFormExpectationsMatchDirectReduction) {
  for (DType t : {DType::Float32, DType::Float64, DType::Int32, DType::BFloat16, DType::Float16})
    for (int p : {1, 2, 3, 7, 64, 255, 256, 257, 300, 1024})
      for (RedOp op : {RedOp::Sum, RedOp::Min, RedOp::Max}) {
        expect_closed_form_matches(t, Collective::AllReduce, p, 777, op);
        expect_closed_form_matches(t, Collective::ReduceScatter, p, p * 3, op);
      }
}

TEST(Reduce, SumsStayExactAndDistinguishRanks) {
  // A sum missing one rank's contribution is caught for most elements.
  const int p = 8;
  const std::uint64_t n = 100;
  std::vector<std::uint8_t> acc = filled(n, DType::BFloat16, Collective::AllReduce, 0, p);
  for (int r = 1; r < p - 1; ++r) {
    const auto in = filled(n, DType::BFloat16, Collective::AllReduce, r, p);
    reduce_into(acc.data(), in.data(), n, DType::BFloat16, RedOp::Sum);
  }
  EXPECT_GT(count_wrong(acc.data(), n, DType::BFloat16, RedOp::Sum, Collective::AllReduce, 0, p, 0), n / 2);
}

TEST(Reduce, CountWrongDetectsOneCorruptedElement) {
  const int p = 5;
  for (DType t : {DType::Float32, DType::Float64, DType::Int32, DType::BFloat16, DType::Float16})
    for (Collective c : kAllCollectives) {
      // Build a correct output for rank 1 directly from the definitions, then corrupt one element.
      const std::uint64_t out_count = 20;  // a multiple of p
      std::vector<std::uint8_t> out(out_count * dtype_size(t));
      const int rank = 1, root = 1;
      if (reduces(c)) {
        std::uint64_t in_count = c == Collective::ReduceScatter ? out_count * p : out_count;
        std::vector<std::uint8_t> acc = filled(in_count, t, c, 0, p);
        for (int r = 1; r < p; ++r)
          reduce_into(acc.data(), filled(in_count, t, c, r, p).data(), in_count, t, RedOp::Max);
        const std::uint64_t first = c == Collective::ReduceScatter ? rank * out_count : 0;
        std::memcpy(out.data(), acc.data() + first * dtype_size(t), out.size());
      } else if (c == Collective::Broadcast) {
        out = filled(out_count, t, c, root, p);
      } else if (c == Collective::SendRecv) {
        out = filled(out_count, t, c, rank - 1, p);
      } else {
        const std::uint64_t block = out_count / p;
        for (int q = 0; q < p; ++q) {
          const std::uint64_t in_count = c == Collective::AllGather ? block : out_count;
          const auto in = filled(in_count, t, c, q, p);
          const std::uint64_t from = c == Collective::AllGather ? 0 : rank * block;
          std::memcpy(out.data() + q * block * dtype_size(t), in.data() + from * dtype_size(t), block * dtype_size(t));
        }
      }
      ASSERT_EQ(0u, count_wrong(out.data(), out_count, t, RedOp::Max, c, rank, p, root))
          << to_string(c) << " " << to_string(t);
      out[7 * dtype_size(t) + dtype_size(t) - 1] ^= 0x40;  // flip a bit of element 7's top byte
      EXPECT_EQ(1u, count_wrong(out.data(), out_count, t, RedOp::Max, c, rank, p, root))
          << to_string(c) << " " << to_string(t);
    }
}

TEST(Reduce, ReduceChecksOnlyTheRoot) {
  std::vector<float> garbage(10, -1.0f);
  EXPECT_EQ(0u, count_wrong(garbage.data(), 10, DType::Float32, RedOp::Sum, Collective::Reduce, 2, 4, 1));
  EXPECT_EQ(10u, count_wrong(garbage.data(), 10, DType::Float32, RedOp::Sum, Collective::Reduce, 1, 4, 1));
}

}  // namespace
}  // namespace commsim
