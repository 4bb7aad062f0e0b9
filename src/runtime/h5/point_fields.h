#pragma once
// The one list of result columns. Every place a point's fields are spelled out derives from it:
// the `Point` struct (runtime/sweep/point.h), the HDF5 row and compound type of `/points`
// (results_file.cc), the CSV and JSON columns (output/reporter.cc), and the points table of
// HDF5_SCHEMA.md, which a test compares with this list. Adding a column is one line here (and
// one row in the doc).
//
// COMMSIM_POINT_COLUMNS(X, F) calls
//   X(name, kind, length, initial, csv, json, missing, unit, since)  for a column of `Point`, and
//   F(name, kind)                                                    for a column only the file has.
// The order of the lines is the order of the fields in the HDF5 compound (keep it: the file
// layout must not change).
//   name     the Point member, the HDF5 field, the CSV column and the JSON key
//   kind     a ColumnKind: how the value is stored and printed
//   length   HDF5 fixed string length (numpy S<length>) of a string kind; 0 otherwise
//   initial  the value of a new Point
//   csv      position among the CSV columns (the first kCsvMainColumns are the nccl-tests-like ones)
//   json     position among the keys of a point's JSON object
//   missing  which values mean "none" (CSV leaves them empty; JSON writes null for Negative only)
//   unit     the unit, as the schema doc writes it; "" for none
//   since    0: in every file; 1: added with pipeline_chunk_bytes; 2: added with what NCCL ran;
//            3: added with in_place and timing.
//            Files written before a later column was added lack it; they read as 0 / empty.
#include <fmt/format.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>

#include "model/collective.h"

namespace commsim {

inline constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

enum class ColumnKind {
  Collective,  // model::Collective, stored by name
  Algorithm,   // model::Algorithm, stored by name
  Protocol,    // model::Protocol, stored by name ("" for none)
  Text,        // a short name: fixed-length string in the file; longer values are an error
  CutText,     // as Text, but a longer value is cut to fit (NCCL's names, which may grow)
  Note,        // free text: variable-length UTF-8 string in the file
  I32,
  I64,
  U64,
  F64,  // NaN when missing
};

enum class Missing {
  Never,
  Negative,     // < 0 means "not checked" (CSV: empty; JSON: null)
  NonPositive,  // <= 0 means "none" (CSV: empty; JSON: the number)
};

// clang-format off
#define COMMSIM_POINT_COLUMNS(X, F)                                                                   \
  F(run, I32)                                                                                         \
  X(collective, Collective, 16, Collective::AllReduce, 0, 0, Never, "", 0)                            \
  X(algorithm, Algorithm, 32, Algorithm::Ring, 1, 1, Never, "", 0)                                    \
  X(backend, Text, 16, "model", 2, 2, Never, "", 0)        /* "model" (predict), "host", "cuda" */  \
  X(transport, Text, 16, "", 17, 3, Never, "", 0)          /* "mpi", "ucx", "ipc", "nccl", "" */    \
  X(protocol, Protocol, 8, Protocol::None, 3, 4, Never, "", 0)  /* forced / priced; "" for none */  \
  X(dtype, Text, 16, "float32", 4, 5, Never, "", 0)                                                   \
  X(redop, Text, 8, "sum", 18, 6, Never, "", 0)                                                       \
  X(nodes, I32, 0, 1, 5, 7, Never, "", 0)                                                             \
  X(ranks, I32, 0, 1, 6, 8, Never, "", 0)                                                             \
  X(bytes, U64, 0, 0, 7, 9, Never, "B", 0)                 /* the nccl-tests size */                \
  X(count, U64, 0, 0, 19, 10, Never, "", 0)                /* elements */                           \
  X(root, I32, 0, 0, 20, 11, Never, "", 0)                                                            \
  X(predicted_us, F64, 0, kNaN, 8, 13, Never, "µs", 0)                                                \
  X(predicted_busbw_gbps, F64, 0, kNaN, 9, 14, Never, "GB/s", 0)                                      \
  X(predicted_winner, Text, 32, "", 26, 15, Never, "", 0)  /* the model's pick among those asked */ \
  X(iters, I32, 0, 0, 22, 16, NonPositive, "", 0)                                                     \
  X(measured_min_us, F64, 0, kNaN, 23, 17, Never, "µs", 0)                                            \
  X(measured_median_us, F64, 0, kNaN, 10, 18, Never, "µs", 0)                                         \
  X(measured_mean_us, F64, 0, kNaN, 24, 19, Never, "µs", 0)                                           \
  X(measured_p95_us, F64, 0, kNaN, 11, 20, Never, "µs", 0)                                            \
  X(measured_max_us, F64, 0, kNaN, 25, 21, Never, "µs", 0)                                            \
  X(algbw_gbps, F64, 0, kNaN, 12, 22, Never, "GB/s", 0)    /* bytes / median time, 1e9 B/s */       \
  X(busbw_gbps, F64, 0, kNaN, 13, 23, Never, "GB/s", 0)    /* algbw * busbw factor */               \
  X(rel_error, F64, 0, kNaN, 14, 24, Never, "", 0)         /* (predicted - median) / median */      \
  X(wrong, I64, 0, -1, 15, 25, Negative, "", 0)            /* summed over ranks; -1 not checked */  \
  X(status, Text, 16, "predicted", 16, 26, Never, "", 0)   /* predicted ok wrong timeout error ...*/\
  X(note, Note, 0, "", 27, 27, Never, "", 0)               /* NCCL's pick, an error message */      \
  F(samples_offset, U64)                                                                              \
  F(samples_count, U64)                                                                               \
  X(pipeline_chunk_bytes, U64, 0, 0, 21, 12, Never, "B", 1)  /* 0: not pipelined, or not recorded */\
  X(nccl_algo, CutText, 16, "", 28, 28, Never, "", 2)      /* what NCCL ran, from its TUNING log */ \
  X(nccl_proto, CutText, 32, "", 29, 29, Never, "", 2)                                                \
  X(nccl_channels, I32, 0, 0, 30, 30, NonPositive, "", 2)                                           \
  X(in_place, I32, 0, 0, 31, 31, Never, "", 3)             /* 1: output buffer = input buffer */    \
  X(timing, Text, 16, "", 32, 32, Never, "", 3)            /* "per-iteration", "nccl-tests" */
// clang-format on

// The C++ type of a column's value in `Point` (and, for numbers, in the HDF5 row).
template <ColumnKind K>
struct ColumnValue {
  using type = std::string;
};
template <>
struct ColumnValue<ColumnKind::Collective> {
  using type = Collective;
};
template <>
struct ColumnValue<ColumnKind::Algorithm> {
  using type = Algorithm;
};
template <>
struct ColumnValue<ColumnKind::Protocol> {
  using type = Protocol;
};
template <>
struct ColumnValue<ColumnKind::I32> {
  using type = std::int32_t;
};
template <>
struct ColumnValue<ColumnKind::I64> {
  using type = std::int64_t;
};
template <>
struct ColumnValue<ColumnKind::U64> {
  using type = std::uint64_t;
};
template <>
struct ColumnValue<ColumnKind::F64> {
  using type = double;
};
template <ColumnKind K>
using ColumnValueT = typename ColumnValue<K>::type;

// One column, as data: what the reporters' headers, the schema doc's test and the file readers use.
struct ColumnInfo {
  std::string_view name;
  ColumnKind kind;
  std::size_t length;  // HDF5 fixed string length; 0 when not a fixed string
  int csv;             // position among the CSV columns; -1: not printed
  int json;            // position among a point's JSON keys; -1: not printed
  Missing missing;
  std::string_view unit;
  int since;
  bool in_point;  // false for the columns only the file has (run, samples_offset, samples_count)
};

// clang-format off
#define COMMSIM_COLUMN_INFO(name, kind, length, initial, csv, json, missing, unit, since) \
  ColumnInfo{#name, ColumnKind::kind, length, csv, json, Missing::missing, unit, since, true},
#define COMMSIM_FILE_COLUMN_INFO(name, kind) \
  ColumnInfo{#name, ColumnKind::kind, 0, -1, -1, Missing::Never, "", 0, false},
inline constexpr ColumnInfo kPointColumns[] = {COMMSIM_POINT_COLUMNS(COMMSIM_COLUMN_INFO, COMMSIM_FILE_COLUMN_INFO)};
#undef COMMSIM_COLUMN_INFO
#undef COMMSIM_FILE_COLUMN_INFO
// clang-format on

// The columns printed in one format (CSV or JSON), in that format's order.
template <std::size_t N>
constexpr std::array<std::string_view, N> columns_in_order(int ColumnInfo::*position, int first = 0) {
  std::array<std::string_view, N> names{};
  for (const ColumnInfo& c : kPointColumns)
    if (c.*position >= first && c.*position < first + static_cast<int>(N)) names[c.*position - first] = c.name;
  return names;
}
constexpr std::size_t count_columns(int ColumnInfo::*position) {
  std::size_t n = 0;
  for (const ColumnInfo& c : kPointColumns) n += c.*position >= 0 ? 1 : 0;
  return n;
}
inline constexpr std::size_t kCsvColumnCount = count_columns(&ColumnInfo::csv);
inline constexpr std::size_t kJsonColumnCount = count_columns(&ColumnInfo::json);
// The first CSV columns are those of nccl-tests' table plus the prediction (what `report` prints
// for outliers); the rest follow them.
inline constexpr std::size_t kCsvMainColumns = 17;

// The HDF5 type of a column as the schema doc names it: int32, int64, uint64, float64, S<n>, string.
inline std::string hdf5_type_name(const ColumnInfo& c) {
  switch (c.kind) {
    case ColumnKind::I32: return "int32";
    case ColumnKind::I64: return "int64";
    case ColumnKind::U64: return "uint64";
    case ColumnKind::F64: return "float64";
    case ColumnKind::Note: return "string";
    default: return fmt::format("S{}", c.length);
  }
}

}  // namespace commsim
