#pragma once
// Calibration: fits the model's alpha (latency), beta (seconds per byte) and gamma (seconds per byte
// reduced) to measurements, per tier (inside a node, across the network). Pure functions over
// numbers; the commands `commsim calibrate` and `commsim probe` read and write the files.
//
// Two kinds of input:
//  - point-to-point probes: (bytes, time) of one message on one tier, fitted as t = alpha + bytes*beta
//    by least squares (fit_line), with a held-out check (held_out_check);
//  - collective measurements: (collective, algorithm, nodes, ranks per node, bytes, time), fitted by
//    adjusting the topology's parameters so the predictions match (fit_gamma, refine_parameters):
//    the closed forms of model/cost/cost.h by default, or any SamplePredictor (`commsim calibrate`
//    prices the schedules that ran). Gauss-Newton with one-sided differences: most terms enter
//    linearly, so few steps are needed; the working-set factors and pipelining depths do not;
//  - NCCL's own collectives with their algorithm and protocol forced: NCCL's constants (the
//    `nccl:` section) per algorithm x protocol, by weighted least squares (fit_nccl).
//
// Where each piece lives: least_squares.cc (line fits, held-out checks), params.h (the fitted
// terms, one row each), refine.cc (the collective fit), probe_fits.cc (the probe's own fits),
// nccl_fit.cc (NCCL's constants); procedure.h runs them all in the order `commsim calibrate` does.
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "model/calibrate/params.h"
#include "model/collective.h"
#include "model/topology/topology.h"
#include "model/units.h"

namespace commsim {

// One timed message (or one timed operation) of `bytes` bytes.
struct TimedSize {
  Bytes bytes = 0;
  Seconds time_s = 0;
};

// How the residuals are weighted.
//  Absolute: ordinary least squares on seconds; large messages dominate.
//  Relative: residuals divided by the measured time (weights 1/t^2), so every size counts alike;
//            this minimises the relative error the report measures, and is the default.
//  Robust:   relative residuals, and a collective fit (refine_parameters) reweights them so that it
//            minimises the sum of |relative error| (iteratively reweighted least squares): a few
//            points far off the model (a noisy size, an algorithm the model gets wrong) do not pull
//            every other point away. Line fits treat it as Relative.
enum class FitWeighting : std::uint8_t { Absolute, Relative, Robust };

// t = alpha_s + bytes * beta_s_per_byte, with its quality on the points it was fitted on.
struct LineFit {
  Seconds alpha_s = 0;
  double beta_s_per_byte = 0;  // 1 / bandwidth
  double r2 = 0;               // coefficient of determination on absolute times (1 = perfect)
  std::size_t samples = 0;
  std::vector<double> residual_s;      // measured - fitted, per input sample (input order)
  double median_abs_rel_residual = 0;  // median |measured - fitted| / measured
  double max_abs_rel_residual = 0;
  bool alpha_clamped = false;  // the unconstrained fit gave alpha < 0; refitted with alpha = 0
  bool beta_clamped = false;   // the unconstrained fit gave beta <= 0 (sizes too small to see bandwidth)

  Seconds predict_s(Bytes bytes) const { return alpha_s + static_cast<double>(bytes) * beta_s_per_byte; }
  BytesPerSecond bw_Bps() const { return 1.0 / beta_s_per_byte; }
};

// Fits t = alpha + bytes*beta. Needs at least two distinct sizes and positive times; throws Error
// otherwise (the message names `what`, e.g. "intra-node ping-pong"). alpha >= 0 and beta > 0 are
// enforced (a clamped coefficient is flagged); beta is never below kMinBetaSPerByte.
inline constexpr double kMinBetaSPerByte = 1e-15;  // 1 PB/s: the fastest bandwidth a fit may claim
LineFit fit_line(const std::vector<TimedSize>& samples, FitWeighting weighting = FitWeighting::Relative,
                 const std::string& what = "samples");

// Held-out check: fit on every other distinct size (the 1st, 3rd, 5th, ... smallest) and measure
// the error of that fit on the sizes left out.
struct HeldOutCheck {
  LineFit fit;                      // fitted on the even-indexed sizes
  std::size_t held_out = 0;         // samples predicted
  double median_abs_rel_error = 0;  // |predicted - measured| / measured on the held-out samples
  double max_abs_rel_error = 0;
  Bytes worst_bytes = 0;  // size of the worst held-out sample
};
// Needs at least 4 distinct sizes; throws Error otherwise.
HeldOutCheck held_out_check(const std::vector<TimedSize>& samples, FitWeighting weighting = FitWeighting::Relative,
                            const std::string& what = "samples");

// One measured collective (the nccl-tests size convention of model/cost/cost.h).
struct CollectiveSample {
  Collective collective = Collective::AllReduce;
  Algorithm algorithm = Algorithm::Ring;  // hand-written (NCCL's collectives: NcclSample, fit_nccl)
  int nodes = 1;
  int ranks_per_node = 1;
  Bytes bytes = 0;
  Seconds time_s = 0;   // measured (median)
  std::size_t key = 0;  // the caller's own index, passed back to a SamplePredictor
};

// How a collective fit predicts one sample on a topology (seconds; NaN when it cannot). The
// default, predict_closed_form, uses the closed forms of model/cost/cost.h; `commsim calibrate` prices
// the schedules that ran (model/price.h), so that the fit matches what `run` predicts.
using SamplePredictor = std::function<double(const Topology&, const CollectiveSample&)>;
double predict_closed_form(const Topology& topo, const CollectiveSample& s);

// The terms a collective fit adjusts (Param, param_table, get_param, set_param): model/calibrate/params.h.

// Gives `topo` a working-set curve for fitting, unless it has one: points at 256 KiB, 1 MiB, 4 MiB,
// ... (x4) up to the largest working set among `samples` (beyond the last point its factor
// holds), every factor 1.
// Returns the parameters of the points after the first (WorkingSet1, ...).
std::vector<Param> add_working_set_points(Topology& topo, const std::vector<CollectiveSample>& samples);
// The same for the node's working-set curve (Topology::node_working_set_scale), only when `topo`
// has an intra_node.node_bandwidth: points at 1 MiB, 4 MiB, ... (x4) up to the largest of a
// sample's working set times its ranks per node (seven points at most), every factor 1. Returns
// NodeWorkingSet1, ...; none without a node bandwidth.
std::vector<Param> add_node_working_set_points(Topology& topo, const std::vector<CollectiveSample>& samples);
// Why the node's working-set curve is not fitted to `samples` on `topo`, or "" when it is: the
// topology has no intra_node.node_bandwidth, or a node's ranks outnumber its `logical_cpus` (0:
// unknown). Such ranks take turns on the cores, which sets their shared rate, not the caches.
std::string why_no_node_curve(const Topology& topo, const std::vector<CollectiveSample>& samples, int logical_cpus);
// The same for the local-operation curve: points at 64 KiB, 256 KiB, ... (x4) up to the largest
// message size among `samples` (six at most). Returns LocalOp1, ...
std::vector<Param> add_local_op_points(Topology& topo, const std::vector<CollectiveSample>& samples);
// The same for the message-size curve: points at 1 KiB, 4 KiB, ... (x4) up to half the largest
// message size among `samples` (recursive doubling's largest message; eight at most).
// Returns Message1, ...
std::vector<Param> add_message_points(Topology& topo, const std::vector<CollectiveSample>& samples);
// The network's measured rate curve (Topology::network_message_scale) for the fit: resampled on
// 4 KiB, 16 KiB, ... (x4) below its last point, at most 6 of them, each starting at the measured
// factor there, and the last point kept. Returns NetMessage1, ... for the points before the last
// (the last is the large-message rate that network.nic_bandwidth stands for); none without a curve.
std::vector<Param> add_network_message_points(Topology& topo);
// The one-to-many curve (Topology::fan_out_scale) for the fit: unless `topo` has one, points at
// 4 KiB, 16 KiB, ... (x4) up to 16 MiB, every factor 1. Returns FanOut1, ... for the points before
// the last (at 16 MiB and beyond such a message moves as any other of its size), six at most.
std::vector<Param> add_fan_out_points(Topology& topo);

// A term the fit refused: the samples do not pin it down (too few points for the terms, or its
// effect on the predictions is nearly that of other terms). It keeps its start value.
struct RefusedTerm {
  Param param;
  std::string why;  // "its effect is that of intra.latency and call_overhead (1.2% of it independent)"
};

// A fit needs this many points per term it fits, and a term's column of the (relative, scaled)
// Jacobian must keep this share of its length once the columns of the terms kept before it are
// projected out; below it the term is collinear with them: its fitted value would follow the
// noise, amplified 1 / share times.
inline constexpr std::size_t kPointsPerTerm = 3;
inline constexpr double kCollinearTolerance = 0.05;

struct ParamFit {
  Topology topology;                  // the input with the fitted parameters replaced
  std::vector<Param> fitted;          // parameters the data determined (others left as they were)
  std::vector<Param> held;            // parameters asked for that no sample depends on
  std::vector<RefusedTerm> refused;   // parameters the samples depend on but do not pin down
  std::map<Param, ParamRange> range;  // every parameter asked for: the range it was kept in (fit_range)
  double condition_number = 0;        // of the fitted terms' scaled Jacobian at the start (0: none fitted)
  std::size_t samples = 0;            // samples used
  std::size_t skipped = 0;            // samples the prediction could not price (not hand-written, ...)
  int iterations = 0;
  double median_abs_rel_error_before = 0;  // of the prediction on the input topology
  double median_abs_rel_error_after = 0;   // of the prediction on the fitted topology
  double r2 = 0;                           // on absolute times, after
  std::vector<double> rel_error;           // (predicted - measured) / measured after, per used sample
};

// Fits only gamma (the reduction rate) to the reducing collectives among `samples`, given the
// topology's alpha and beta: t - (alpha and beta terms) = gamma * (bytes reduced on the critical
// path). Non-reducing samples are ignored. Throws Error when no reducing sample has a reduction term.
ParamFit fit_gamma(const Topology& topo, const std::vector<CollectiveSample>& samples,
                   FitWeighting weighting = FitWeighting::Relative,
                   const SamplePredictor& predict = predict_closed_form);

// Fits the chosen parameters to all samples by weighted least squares on `predict` (the closed
// forms by default), each kept within its physical range (fit_range of `topo`: a projected
// Levenberg-Marquardt, every step clamped into the ranges). A parameter no sample depends on is
// left unchanged and listed in `held`; one the samples do not pin down (judged once, at the start:
// more terms than samples / kPointsPerTerm, or a column within kCollinearTolerance of the others')
// is left unchanged and listed in `refused` with the reason. Up to `threads` threads compute the fit's derivatives at
// once (`predict` must then be safe to call from several threads); the result does not depend on
// their number.
ParamFit refine_parameters(const Topology& topo, const std::vector<CollectiveSample>& samples,
                           const std::vector<Param>& params, FitWeighting weighting = FitWeighting::Relative,
                           const SamplePredictor& predict = predict_closed_form, int threads = 1);

// The held-out check of a collective fit: `train` holds the samples at every other distinct size
// (the first, third, ...) and at the largest, `test` those at the sizes between, so the check
// interpolates between sizes the fit saw and never extrapolates past them.
struct HeldOutSplit {
  std::vector<CollectiveSample> train, test;
};
HeldOutSplit split_held_out(const std::vector<CollectiveSample>& samples);

// ---- NCCL's own collectives -----------------------------------------------------------------
// NCCL's model (model/cost/cost.h, Algorithm::NcclRing / NcclTree with a protocol) fitted to runs with
// NCCL's algorithm and protocol forced (nccl-ring / nccl-tree x LL / LL128 / Simple). Per
// (algorithm, protocol), on the runs inside one node:
//   t - call_overhead = base_latency + hops x intra_hop_latency + bus_bytes / bus_bandwidth
// where hops and bus_bytes are those closed_form() prices for the sample (its coefficients are
// read off closed_form itself, so the fit and the prediction cannot disagree): weighted least
// squares on relative residuals (weights 1/t^2). The hop latency is fitted only when the runs
// have more than one hop count (several rank counts, or collectives with different step counts);
// otherwise the topology's is kept. A coefficient the unconstrained fit makes negative is clamped
// to 0 and the rest refitted (a bandwidth term that cannot be seen leaves bus_bandwidth unset,
// meaning the intra-node bandwidth x bw_fraction). Runs across nodes are not fitted (NCCL's
// network terms stay as they are).
struct NcclSample {
  Collective collective = Collective::AllReduce;
  Algorithm algorithm = Algorithm::NcclRing;  // NcclRing or NcclTree
  Protocol protocol = Protocol::Simple;       // LL, LL128 or Simple (forced)
  int nodes = 1;
  int ranks_per_node = 1;
  Bytes bytes = 0;
  Seconds time_s = 0;  // measured (median)
};

struct NcclTermFit {
  Algorithm algorithm = Algorithm::NcclRing;
  Protocol protocol = Protocol::Simple;
  bool done = false;
  std::string why_not;  // when !done: what the runs lack
  std::size_t samples = 0;
  Seconds base_latency_s = 0;
  Seconds intra_hop_latency_s = 0;
  BytesPerSecond bus_bw_Bps = 0;  // 0: not seen (bw_clamped)
  bool hop_fitted = false;        // false: the topology's hop latency was kept
  bool base_clamped = false, hop_clamped = false, bw_clamped = false;
  double r2 = 0;  // on absolute times
  double median_abs_rel_residual = 0, max_abs_rel_residual = 0;
  double median_abs_rel_error_before = 0;  // of the input topology's prediction on the same samples
  // Held-out check: fitted on every other distinct size and the largest (split_held_out), the
  // error on the sizes between; needs 4 distinct sizes.
  bool held_out_done = false;
  std::size_t held_out = 0;
  double held_out_median_abs_rel_error = 0, held_out_max_abs_rel_error = 0;
  std::vector<Collective> collectives;  // those the samples hold
  std::vector<int> ranks;               // rank counts
  Bytes min_bytes = 0, max_bytes = 0;
};

struct NcclFit {
  Topology topology;               // the input with the fitted NCCL constants (nccl.present set)
  std::vector<NcclTermFit> terms;  // one per (algorithm, protocol) with samples, ring before tree, LL first
  std::size_t multi_node = 0;      // samples across nodes, left out
};

// Throws Error when no sample is a forced NCCL run inside one node with more than one rank.
NcclFit fit_nccl(const Topology& topo, const std::vector<NcclSample>& samples);

// A tier's per-message terms fitted to one series of (bytes, time) (the probe's ring shift), for
// message libraries whose small and large messages follow different protocols (MPI's inline,
// eager and rendezvous):
//   t = (bytes <= inline_limit ? inline_latency : bytes <= eager_limit ? latency
//                                               : rendezvous_latency) + bytes * beta.
// beta is fitted on the sizes of at least `beta_from_bytes` alone (where the bandwidth term
// dominates, so a cache effect at the small sizes does not bend it), relative residuals. A step
// is where the residual latency (time - bytes * beta, median per size, sizes below
// beta_from_bytes) grows, by ratio, from one measured size to the next: a protocol switch is a
// step, a per-byte cost that beta misses a drift. The largest jump is the candidate switch, the
// largest jump at least two sizes away from it (two sizes on each side) the candidate second step;
// the latencies are fitted with beta fixed on the sizes below beta_from_bytes. A step is kept only
// when it explains the data clearly better: the eager/rendezvous switch (switched = true) when the
// rendezvous latency is at least 1.5 times the eager one and the squared relative residuals drop
// by at least half against one latency; the second step too (inlined = true; the lower of the two
// steps is the inline limit) when each level is at least 1.3 times the one below (the top one 1.5
// times) and the residuals drop by half again. Needs at least two sizes of at least
// beta_from_bytes and two below; throws Error otherwise.
struct ProtocolFit {
  Seconds latency_s = 0;  // eager (or only) latency
  double beta_s_per_byte = 0;
  bool switched = false;             // an eager/rendezvous switch was found
  Bytes eager_limit_bytes = 0;       // largest measured size on the eager side (when switched)
  Seconds rendezvous_latency_s = 0;  // when switched
  // A second step below the eager limit (inlined = true): messages up to inline_limit_bytes pay
  // inline_latency_s, and latency_s is that of the sizes above it.
  bool inlined = false;
  Bytes inline_limit_bytes = 0;
  Seconds inline_latency_s = 0;
  double median_abs_rel_residual = 0;  // of the chosen model
  // Where the steps would be, had they been kept: the largest jump of the residual latency (the
  // eager limit) and, below it, the second (the inline limit); 0 where there is none. A collective
  // fit can then decide the latencies on each side (`calibrate --refine all`).
  Bytes candidate_eager_bytes = 0;
  Bytes candidate_inline_bytes = 0;
  // When inlined: another step below the eager limit that the probe shows too (a message library
  // can have two, Open MPI's shared memory a fast path and an inline send), with its own latencies
  // (each level at least 1.3 times the one below); 0 where there is none. The model has one inline
  // step: a collective fit decides which one the collectives follow (`calibrate --refine all`).
  Bytes other_inline_bytes = 0;
  Seconds other_inline_latency_s = 0, other_latency_s = 0, other_rendezvous_latency_s = 0;
  BytesPerSecond bw_Bps() const { return 1.0 / beta_s_per_byte; }
};
ProtocolFit fit_protocol(const std::vector<TimedSize>& samples, Bytes beta_from_bytes = 65536,
                         const std::string& what = "samples");

// intra_node.node_bandwidth from two measurements of the same tier: the per-rank bandwidth of one
// pair streaming alone and of all `ranks_per_node` ranks of a node moving data at once (the ring
// shift). When all ranks together get clearly less each (below 80% of the pair's), the node's
// aggregate is ranks_per_node * that rate; otherwise 0 (unlimited).
BytesPerSecond fit_node_bandwidth(BytesPerSecond pair_bw_Bps, BytesPerSecond all_ranks_bw_Bps, int ranks_per_node);

// message_overhead from a stream of `window` back-to-back messages from one rank to another whose
// time per message is `per_message` (the probe's stream rows): posting w messages costs
// latency + (w - 1) * overhead + w * bytes * beta, so per message (latency + (w - 1) o) / w + bytes
// * beta; fitted on the sizes above min_bytes and up to max_bytes with the tier's latency and beta
// given. Never negative; 0 when no size qualifies.
Seconds fit_message_overhead(const std::vector<TimedSize>& per_message, int window, Seconds latency_s,
                             double beta_s_per_byte, Bytes max_bytes, Bytes min_bytes = 0);

// written_scale (Topology::written_scale) from the probe's ring shift inside a node, of data the
// ranks have not touched (`clean`) and of data each rank has just written (`written`), as (bytes,
// median time) per size; a size measured more than once counts with the median of its times.
//
// written_ratios: for every size of at least kWrittenScaleMinBytes measured both ways, ascending,
// (t_clean - latency) / (t_written - latency), the rate of just-written data as a factor of the
// untouched data's rate; a size where either time is not above the latency is left out.
//
// fit_written_scale: the curve from those ratios: scale = min(1, ratio), and a scale above
// kWrittenScaleNoise counts as 1 (the effect only slows a message down; smaller differences are
// within the probe's noise), as does a slow size whose neighbours in the list are not slow (a
// cache effect spans a range of sizes; one slow sample is noise). A size below
// kWrittenScaleFloor (more than 5 times slower, where the machines measured show at most 2.7) is a
// disturbed measurement and left out. One point per size; the 1s before the first and after the last
// slower size are dropped except the one next to it, so the curve returns to 1 at both ends.
// Empty when no size is slower (the topology then has no curve).
inline constexpr Bytes kWrittenScaleMinBytes = 4096;
inline constexpr double kWrittenScaleNoise = 0.9;
inline constexpr double kWrittenScaleFloor = 0.2;
std::vector<MessageScale> written_ratios(const std::vector<TimedSize>& clean, const std::vector<TimedSize>& written,
                                         Seconds latency_s);
std::vector<MessageScale> fit_written_scale(const std::vector<TimedSize>& clean, const std::vector<TimedSize>& written,
                                            Seconds latency_s);

// The network's rate by message size (Topology::network_message_scale), from a ring shift across
// the network (the median time of each size):
//  - latency_s: the median time of the sizes up to kNetworkLatencyMaxBytes;
//  - beta: the median of (t - latency) / bytes over the sizes of at least kNetworkRateMinBytes
//    (the large-message rate, network.nic_bandwidth);
//  - curve: at every size whose bytes * beta is at least half the latency (below, the time is
//    the latency), the factor (bytes * beta) / (t - latency), clamped to [0.1, 10]: above 1 a
//    message of that size moves faster than a large one (it fits the transport's buffers), below
//    1 slower (a protocol switch's handshake).
// done is false without at least two sizes on each side; curve is empty when every factor lies
// within kNetworkCurveNoise of 1 (the line t = latency + bytes * beta explains the sizes).
struct NetworkRateFit {
  bool done = false;
  Seconds latency_s = 0;
  double beta_s_per_byte = 0;
  std::vector<MessageScale> curve;
  std::vector<MessageScale> factors;  // the factor at every size it was taken at (also when curve is empty)
};
inline constexpr Bytes kNetworkLatencyMaxBytes = 1024;
inline constexpr Bytes kNetworkRateMinBytes = 1024 * 1024;
inline constexpr double kNetworkCurveNoise = 0.1;
NetworkRateFit fit_network_rate(const std::vector<TimedSize>& samples);

// Median (the mean of the middle two for an even count; 0 for an empty list).
double median(std::vector<double> values);
// Median of |x| (0 for an empty list).
double median_abs(std::vector<double> values);

}  // namespace commsim
