// CPU lists and the words a run's header uses for how its ranks were bound.
#include "runtime/job/cpu_binding.h"

#include <gtest/gtest.h>

#include "model/error.h"

namespace commsim {
namespace {

TEST(CpuList, ParsesRangesAndSingles) {
  EXPECT_EQ(parse_cpu_list("0-3,8,10-11"), (std::vector<int>{0, 1, 2, 3, 8, 10, 11}));
  EXPECT_EQ(parse_cpu_list("5"), (std::vector<int>{5}));
  EXPECT_EQ(parse_cpu_list("3,1,1-2"), (std::vector<int>{1, 2, 3}));  // sorted, each once
  EXPECT_TRUE(parse_cpu_list("").empty());
  for (const char* bad : {"a", "1-", "-1", "3-1", "1,,2", "1,", "0x3", "1 2"}) EXPECT_THROW(parse_cpu_list(bad), Error) << bad;
}

TEST(CpuList, FormatsRunsAsRanges) {
  EXPECT_EQ(format_cpu_list({8, 0, 1, 2, 3, 11, 10}), "0-3,8,10-11");
  EXPECT_EQ(format_cpu_list({4}), "4");
  EXPECT_EQ(format_cpu_list({}), "");
  EXPECT_EQ(format_cpu_list(parse_cpu_list("0-63")), "0-63");
}

TEST(CpuList, ThisProcessRunsOnAtLeastOneOnlineCpu) {
  const std::vector<int> mine = parse_cpu_list(cpus_of_this_process());
  ASSERT_FALSE(mine.empty());
  EXPECT_GE(cpus_online(), 1);
}

std::vector<RankCpus> ranks_on(const std::string& host, const std::vector<std::string>& cpus, int online) {
  std::vector<RankCpus> out;
  for (const std::string& c : cpus) out.push_back({host, c, online});
  return out;
}

TEST(Binding, SaysHowTheRanksAreBound) {
  EXPECT_EQ(summarize_binding(ranks_on("a", {"0", "1", "2", "3"}, 16)).text, "each rank bound to its own CPU");
  EXPECT_EQ(summarize_binding(ranks_on("a", {"0-1", "2-3"}, 16)).text, "each rank bound to its own 2 CPUs");
  // Open MPI's default above two ranks: bound to a package, shared.
  EXPECT_EQ(summarize_binding(ranks_on("a", {"0-7", "8-15", "0-7", "8-15"}, 16)).text,
            "ranks bound to 8 CPUs each, 16 CPUs shared between ranks");
  const BindingSummary loose = summarize_binding(ranks_on("a", {"0-15", "0-15"}, 16));
  EXPECT_NE(loose.text.find("not bound"), std::string::npos) << loose.text;
  EXPECT_NE(loose.text.find("16 CPUs"), std::string::npos) << loose.text;
  EXPECT_TRUE(loose.oversubscribed.empty());
  EXPECT_NE(summarize_binding(ranks_on("a", {"", ""}, 0)).text.find("not known"), std::string::npos);
}

TEST(Binding, NamesAHostWithMoreRanksThanCpus) {
  const BindingSummary s = summarize_binding(ranks_on("vm", {"0-1", "0-1", "0-1", "0-1"}, 2));
  EXPECT_NE(s.text.find("not bound"), std::string::npos) << s.text;
  EXPECT_NE(s.oversubscribed.find("4 ranks on 2 CPUs of host vm"), std::string::npos) << s.oversubscribed;
  // Two ranks bound to the same single CPU: not "its own".
  const BindingSummary same = summarize_binding(ranks_on("a", {"3", "3"}, 8));
  EXPECT_EQ(same.text, "ranks bound to 1 CPU each, 1 CPU shared between ranks");
  EXPECT_NE(same.oversubscribed.find("2 ranks on 1 CPU of host a"), std::string::npos) << same.oversubscribed;
}

TEST(Binding, HostsThatAgreeAreSaidOnce) {
  std::vector<RankCpus> two = ranks_on("a", {"0", "1"}, 8);
  for (const RankCpus& r : ranks_on("b", {"0", "1"}, 8)) two.push_back(r);
  EXPECT_EQ(summarize_binding(two).text, "each rank bound to its own CPU (all 2 hosts)");
  two[3].cpus = "0";
  const std::string differ = summarize_binding(two).text;
  EXPECT_EQ(differ.rfind("a: each rank bound to its own CPU; b: ", 0), 0u) << differ;
}

}  // namespace
}  // namespace commsim
