#include <gtest/gtest.h>

#include <sstream>

#include "cli/args.h"
#include "cli/table.h"

namespace gpupool::cli {
namespace {

TEST(Args, ParsesFlagsAndRejectsUnknownOnes) {
  Result<Args> a = Args::Parse({"--hours", "3", "--policy=bestfit", "x"}, {"hours", "policy"});
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(*a->Int("hours", 8, 1, 10), 3);
  EXPECT_EQ(a->Str("policy", "fgd"), "bestfit");
  EXPECT_EQ(a->positional(), std::vector<std::string>{"x"});
  EXPECT_FALSE(Args::Parse({"--bogus", "1"}, {"hours"}).ok());
  EXPECT_FALSE(Args::Parse({"--hours"}, {"hours"}).ok());
  // -h is --help for a command that knows help, and a positional for one that does not.
  EXPECT_TRUE(Args::Parse({"-h"}, {"help"}, {"help"})->Has("help"));
  EXPECT_EQ(Args::Parse({"-h"}, {"hours"})->positional(), std::vector<std::string>{"-h"});
}

TEST(Args, NumbersAreCheckedForFormAndRange) {
  Result<Args> a = Args::Parse({"--hours", "3x", "--seed", "99"}, {"hours", "seed"});
  ASSERT_TRUE(a.ok());
  EXPECT_FALSE(a->Int("hours", 8, 1, 10).ok());
  EXPECT_FALSE(a->Int("seed", 0, 0, 10).ok());
  EXPECT_EQ(*a->Int("absent", 5, 0, 10), 5);
}

TEST(Args, RepeatedFlagsKeepEveryValue) {
  Result<Args> a = Args::Parse({"--selector", "a=b", "--selector=c", "--tenant", "x", "--tenant", "y"},
                               {"selector", "tenant"});
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->All("selector"), (std::vector<std::string>{"a=b", "c"}));
  EXPECT_EQ(a->Str("tenant", ""), "y");  // a single-valued flag keeps its last value
  EXPECT_TRUE(a->All("absent").empty());
}

TEST(Table, AlignsColumnsAndRightAlignsNumbers) {
  Table t({"name", "n"});
  t.Row({"a", "5"});
  t.Row({"long-name", "123"});
  std::ostringstream out;
  t.Print(out);
  EXPECT_EQ(out.str(), "name       n\na            5\nlong-name  123\n");
}

}  // namespace
}  // namespace gpupool::cli
