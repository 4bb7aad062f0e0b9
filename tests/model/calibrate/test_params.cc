// The table of fitted terms: one row per Param, each read back as it was written.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "model/calibrate/calibrate.h"
#include "model/topology/topology.h"

namespace commsim {
namespace {

Topology with_curves() {
  Topology t = load_topology(resolve_topology_path("local-cpu"));
  t.intra.msg.eager_limit_bytes = 4096;
  t.intra.msg.inline_limit_bytes = 256;
  for (auto* curve : {&t.message_scale, &t.network_message_scale, &t.fan_out_scale}) {
    curve->clear();
    for (Bytes b = 1024; curve->size() < 8; b *= 4) curve->push_back({b, 1.0});
  }
  for (auto* curve : {&t.working_set_scale, &t.node_working_set_scale}) {
    curve->clear();
    for (Bytes b = 1024; curve->size() < 8; b *= 4) curve->push_back({b, 1.0});
  }
  t.local_op_scale.clear();
  for (Bytes b = 1024; t.local_op_scale.size() < 8; b *= 4) t.local_op_scale.push_back({b, 1.0});
  return t;
}

TEST(ParamTable, OneRowPerParamWithDistinctNames) {
  ASSERT_EQ(param_table().size(), static_cast<std::size_t>(kParamCount));
  std::set<std::string_view> names;
  for (std::size_t i = 0; i < param_table().size(); ++i) {
    const ParamRow& row = param_table()[i];
    EXPECT_EQ(static_cast<std::size_t>(row.param), i);
    EXPECT_TRUE(names.insert(row.name).second) << row.name;
    EXPECT_FALSE(row.field.empty()) << row.name;
    EXPECT_EQ(to_string(row.param), row.name);
    EXPECT_EQ(field_of(row.param), row.field);
  }
  EXPECT_EQ(to_string(Param::IntraLatency), "intra.latency");
  EXPECT_EQ(field_of(Param::NetBeta), "network.nic_bandwidth");
  EXPECT_EQ(to_string(Param::WorkingSet1), "working_set_scale[1]");
  EXPECT_EQ(to_string(Param::NetMessage1), "network_message_scale[0]");
  EXPECT_EQ(field_of(Param::FanOut6), "fan_out_scale");
}

TEST(ParamTable, EveryTermReadsBackWhatWasWritten) {
  for (const ParamRow& row : param_table()) {
    Topology t = with_curves();
    // A value inside every term's range (shares 0..1, factors up to 10).
    const double value = row.unit == ParamUnit::Time ? 3e-6 : row.unit == ParamUnit::Beta ? 1e-10 : 0.5;
    set_param(t, row.param, value);
    EXPECT_DOUBLE_EQ(get_param(t, row.param), value) << row.name;
  }
}

TEST(ParamTable, UnitsSetFloorsLimitsAndText) {
  EXPECT_EQ(param_floor(Param::IntraLatency), 0.0);
  EXPECT_EQ(param_floor(Param::Gamma), kMinBetaSPerByte);
  EXPECT_EQ(param_floor(Param::Message3), 0.02);
  EXPECT_EQ(param_floor(Param::IntraReceiveShare), 0.0);
  EXPECT_EQ(param_text(Param::IntraLatency, 2.5e-6), "2.5 us");
  EXPECT_EQ(param_text(Param::IntraBeta, 1e-10), "10 GB/s");
  EXPECT_EQ(param_text(Param::NetBeta, 0), "unlimited");
  EXPECT_EQ(param_text(Param::IntraSendShare, 0.25), "0.25");
}

TEST(ParamTable, ClampsAndTermsWithoutAPlace) {
  Topology t = load_topology(resolve_topology_path("local-cpu"));
  set_param(t, Param::IntraExchange, 40.0);  // the file's limit is 10
  EXPECT_EQ(get_param(t, Param::IntraExchange), 10.0);
  set_param(t, Param::IntraSendShare, 1.5);
  EXPECT_EQ(get_param(t, Param::IntraSendShare), 1.0);
  t.intra.msg.eager_limit_bytes = 0;
  const double before = get_param(t, Param::IntraRendezvousLatency);
  set_param(t, Param::IntraRendezvousLatency, 9e-6);  // no eager limit: nothing to set
  EXPECT_EQ(get_param(t, Param::IntraRendezvousLatency), before);
  t.working_set_scale.clear();
  set_param(t, Param::WorkingSet3, 0.5);  // no such point: reads 1
  EXPECT_EQ(get_param(t, Param::WorkingSet3), 1.0);
}

}  // namespace
}  // namespace commsim
