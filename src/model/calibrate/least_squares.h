#pragma once
// The least-squares pieces the calibration fits share (internal to model/calibrate).
#include <Eigen/Dense>
#include <vector>

#include "model/calibrate/calibrate.h"

namespace commsim::least_squares {

// The weight of a residual of a sample measured at `measured` seconds: 1 (Absolute) or 1 / t^2
// (Relative, Robust).
inline double weight_of(double measured, FitWeighting w) {
  return w == FitWeighting::Absolute ? 1.0 : 1.0 / (measured * measured);
}

// R^2 on absolute values: 1 - SS_res / SS_tot. 1 when the data are constant and fitted exactly.
double r_squared(const std::vector<double>& measured, const std::vector<double>& fitted);

// Solves A x = b by LU with partial pivoting (A square, from normal equations). Returns false when
// a pivot is at most `tolerance` times `scale` (A singular to that precision); scale <= 0 means
// the largest |diagonal entry| of A.
bool solve(const Eigen::MatrixXd& a, const Eigen::VectorXd& b, Eigen::VectorXd& x, double tolerance, double scale = 0);

}  // namespace commsim::least_squares
