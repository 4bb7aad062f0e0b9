#pragma once
// One row of results: a (collective, algorithm, backend, protocol, dtype, nodes, ranks, bytes)
// point with its prediction and, when measured, its measurement. The same row type is printed by
// every command (table, CSV, JSON) and stored in the HDF5 `points` table.
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "model/collective.h"
#include "model/units.h"
#include "runtime/h5/point_fields.h"

namespace commsim {

// The columns (their names, types, initial values and what they mean) are listed once, in
// runtime/h5/point_fields.h.
struct Point {
#define COMMSIM_POINT_MEMBER(name, kind, length, initial, csv, json, missing, unit, since) \
  ColumnValueT<ColumnKind::kind> name = initial;
#define COMMSIM_FILE_ONLY(name, kind)
  COMMSIM_POINT_COLUMNS(COMMSIM_POINT_MEMBER, COMMSIM_FILE_ONLY)
#undef COMMSIM_POINT_MEMBER
#undef COMMSIM_FILE_ONLY

  std::vector<double> samples_us;  // per-iteration times (max over ranks), us

  bool measured() const {
    return !std::isnan(measured_median_us);
  }
};

// Fills algbw, busbw and rel_error from the median and prediction (nccl-tests definitions).
void derive_bandwidths(Point& p);

}  // namespace commsim
