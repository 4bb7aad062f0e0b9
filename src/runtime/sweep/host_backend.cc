// The `host` backend: host memory, hand-written schedules through the host executor, and the MPI
// library's collectives as algorithm `mpi`.
#include "runtime/sweep/backend.h"

#ifdef COMMSIM_HAVE_MPI
#include <mpi.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <sstream>

#include "collectives/elements/reduce.h"
#include "collectives/host/aligned_buffer.h"
#include "collectives/host/host_executor.h"
#include "collectives/host/mpi_baselines.h"
#include "collectives/host/mpi_transport.h"
#include "model/error.h"
#include "runtime/job/mpi_carrier.h"
#ifdef COMMSIM_HAVE_UCX
#include "collectives/ucx/ucx_transport.h"
#endif

namespace commsim {
namespace {

// Free memory of this node: MemAvailable, and the cgroup limit when one is set (containers, Slurm).
std::uint64_t node_available_bytes() {
  std::uint64_t avail = 0;
  std::ifstream meminfo("/proc/meminfo");
  std::string key, unit;
  std::uint64_t kib = 0;
  while (meminfo >> key >> kib >> unit) {
    if (key == "MemAvailable:") {
      avail = kib * 1024;
      break;
    }
    meminfo.ignore(256, '\n');
  }
  std::ifstream max_file("/sys/fs/cgroup/memory.max"), cur_file("/sys/fs/cgroup/memory.current");
  std::string max_text;
  std::uint64_t current = 0;
  if (max_file >> max_text && max_text != "max" && cur_file >> current) {
    const std::uint64_t limit = std::stoull(max_text);
    const std::uint64_t left = limit > current ? limit - current : 0;
    avail = avail == 0 ? left : std::min(avail, left);
  }
  return avail;
}

class HostBackend final : public Backend {
 public:
  explicit HostBackend(const BackendContext& ctx) : ctx_(ctx) {
    if (ctx.transport == "ucx") {
#ifdef COMMSIM_HAVE_UCX
      auto ucx = std::make_unique<UcxTransport>(MPI_COMM_WORLD);
      transport_note_ = ucx->description();
      transport_ = std::move(ucx);
#else
      throw Error(
          "transport 'ucx' is not available: this build found no UCX (install UCX's development files, "
          "e.g. libucx-dev, and configure again)");
#endif
    } else if (ctx.transport != "mpi") {
      throw Error("transport '" + ctx.transport + "' is not available for the host backend (valid: mpi, ucx)");
    } else {
      transport_ = std::make_unique<MpiTransport>(MPI_COMM_WORLD);
    }
    mpi_note_ = mpi_carrier(ctx.placement ? ctx.placement->nnodes : 1);
  }

  std::string_view name() const override {
    return "host";
  }
  std::string_view transport() const override {
    return transport_->name();
  }

  std::string unsupported(const PointSetup& s) const override {
    if (s.in_place && s.algorithm != Algorithm::Mpi)
      return "hand-written schedules run out of place (in place: the mpi baseline)";
    if (s.algorithm == Algorithm::Mpi)
      return mpi_baseline_unsupported(s.collective, s.count, s.dtype, s.op, ctx_.nranks);
    if (!is_hand_written(s.algorithm)) return std::string(to_string(s.algorithm)) + " needs the cuda backend";
    return {};
  }

  std::uint64_t bytes_needed(const PointSetup& s) const override {
    const std::uint64_t elem = dtype_size(s.dtype);
    if (s.schedule)
      return (s.schedule->input_count + s.schedule->output_count) * elem +
             HostExecutor::extra_bytes_for(*s.schedule, ctx_.rank);
    const BufferCounts bc = buffer_counts(s.collective, s.count, ctx_.nranks);
    // In place, the output buffer holds the input too (and the input is kept to reload it).
    const std::uint64_t output = s.in_place ? std::max(bc.input, bc.output) : bc.output;
    // The library's reducing collectives keep a temporary buffer of about the message size.
    return (bc.input + output + (reduces(s.collective) ? bc.input : 0)) * elem;
  }

  std::uint64_t bytes_available() const override {
    return node_available_bytes() / static_cast<std::uint64_t>(std::max(ctx_.local_ranks, 1));
  }

  void prepare(const PointSetup& s) override {
    release();
    setup_ = s;
    const std::uint64_t elem = dtype_size(s.dtype);
    if (s.schedule) {
      in_count_ = s.schedule->input_count;
      out_count_ = s.schedule->output_count;
    } else {
      const BufferCounts bc = buffer_counts(s.collective, s.count, ctx_.nranks);
      in_count_ = bc.input;
      out_count_ = bc.output;
    }
    input_ = AlignedBuffer(in_count_ * elem);
    output_ = AlignedBuffer((s.in_place ? std::max(in_count_, out_count_) : out_count_) * elem);
    fill_input(input_.data(), in_count_, s.dtype, s.collective, ctx_.rank, ctx_.nranks);
    if (s.schedule) {
      HostExecutorOptions opt;
      opt.piece_bytes = ctx_.piece_bytes;
      executor_ = std::make_unique<HostExecutor>(*s.schedule, s.dtype, s.op, *transport_, opt);
    } else {
      baseline_ = std::make_unique<MpiBaseline>(s.collective, s.count, s.dtype, s.op, s.root, MPI_COMM_WORLD);
      if (s.in_place) baseline_->load_in_place(input_.data(), output_.data());
    }
  }

  double run_once() override {
    const double t0 = MPI_Wtime();
    run();
    return MPI_Wtime() - t0;
  }

  std::uint64_t check() override {
    const std::uint64_t elem = dtype_size(setup_.dtype);
    // All-ones bytes are NaN in every float type: an element the algorithm fails to write is wrong.
    if (output_.bytes()) std::memset(output_.data(), 0xff, output_.bytes());
    if (setup_.in_place) baseline_->load_in_place(input_.data(), output_.data());
    run();
    if (baseline_ && !setup_.in_place) baseline_->finish_root_output(input_.data(), output_.data());
    if (setup_.inject_error_rank == ctx_.rank && out_count_ > 0) {
      // Flip the lowest bit of the middle element: a different value in every dtype.
      output_.data()[(out_count_ / 2) * elem] ^= std::byte{1};
    }
    return count_wrong(output_.data(), out_count_, setup_.dtype, setup_.op, setup_.collective, ctx_.rank, ctx_.nranks,
                       setup_.root);
  }

  // What carried the point's bytes: MPI's PML/BTLs when they went through MPI, else UCX's transports.
  std::string note() const override {
    return setup_.algorithm == Algorithm::Mpi || transport_->name() == "mpi" ? mpi_note_ : transport_note_;
  }

  void release() override {
    executor_.reset();
    baseline_.reset();
    input_ = AlignedBuffer();
    output_ = AlignedBuffer();
    in_count_ = out_count_ = 0;
  }

 private:
  void run() {
    if (executor_)
      executor_->run(input_.data(), output_.data());
    else if (setup_.in_place)
      baseline_->run_in_place(output_.data());  // the timed iterations reduce what the last one left
    else
      baseline_->run(input_.data(), output_.data());
  }

  BackendContext ctx_;
  std::unique_ptr<Transport> transport_;
  std::string mpi_note_, transport_note_;
  PointSetup setup_;
  AlignedBuffer input_, output_;
  std::uint64_t in_count_ = 0, out_count_ = 0;
  std::unique_ptr<HostExecutor> executor_;
  std::unique_ptr<MpiBaseline> baseline_;
};

}  // namespace

std::unique_ptr<Backend> make_host_backend(const BackendContext& ctx) {
  return std::make_unique<HostBackend>(ctx);
}

}  // namespace commsim

#endif  // COMMSIM_HAVE_MPI
