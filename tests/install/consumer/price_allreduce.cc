// Prices a ring allreduce with the installed commsim model:
//   price_allreduce TOPOLOGY.yaml NODES BYTES  ->  "<time in us> <busbw in GB/s>"
#include <cstdio>
#include <cstdlib>
#include <exception>

#include "model/collective.h"
#include "model/cost/cost.h"
#include "model/topology/topology.h"

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: price_allreduce TOPOLOGY.yaml NODES BYTES\n");
    return 2;
  }
  try {
    const commsim::Topology topo = commsim::load_topology(argv[1]);
    commsim::CostQuery q;
    q.collective = commsim::Collective::AllReduce;
    q.algorithm = commsim::Algorithm::Ring;
    q.nodes = std::atoi(argv[2]);
    q.ranks_per_node = topo.ranks_per_node;
    q.bytes = std::strtoull(argv[3], nullptr, 10);
    const commsim::Cost c = commsim::closed_form(topo, q);
    const double busbw = static_cast<double>(q.bytes) / c.time_s *
                         commsim::busbw_factor(q.collective, q.nodes * q.ranks_per_node);
    std::printf("%.2f %.2f\n", c.time_s * 1e6, busbw / 1e9);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "price_allreduce: %s\n", e.what());
    return 1;
  }
  return 0;
}
