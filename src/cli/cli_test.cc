#include <gtest/gtest.h>

#include <sstream>

#include "cli/args.h"
#include "cli/completion.h"
#include "cli/table.h"
#include "cli/verbs.h"

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

TEST(FlagsIn, EveryLongFlagOfAUsageOnce) {
  EXPECT_EQ(FlagsIn("usage: gpupool x --tenant T [--state S] [--tenant-id=N] -- COMMAND (see '--')\n"),
            (std::vector<std::string>{"--help", "--state", "--tenant", "--tenant-id"}));
}

TEST(Complete, VerbsKindsFlagsAndValues) {
  using V = std::vector<std::string>;
  EXPECT_EQ(Complete({"gpupool", "ge"}, 1), V{"get"});
  EXPECT_EQ(Complete({"gpupool", "cor"}, 1), V{"cordon"});
  EXPECT_EQ(Complete({"gpupool", "create", "t"}, 2), (V{"tenant", "token"}));
  EXPECT_EQ(Complete({"gpupool", "--token", "T", "-o", "y"}, 4), V{"yaml"});  // before the verb
  EXPECT_EQ(Complete({"gpupool", "--token", ""}, 2), V{});                     // a token: no guesses
  EXPECT_EQ(Complete({"gpupool", "-o", "json", "de"}, 3), (V{"delete", "demo", "describe"}));
  EXPECT_EQ(Complete({"gpupool", "get", "jobs", "--li"}, 3), V{"--limit"});
  EXPECT_EQ(Complete({"gpupool", "get", "jobs", "--state", "r"}, 4), V{"running"});
  EXPECT_EQ(Complete({"gpupool", "submit", "--", "--"}, 3), V{});  // the job's own words
  EXPECT_EQ(Complete({"gpupool", "nosuch", "--"}, 2), V{});
  EXPECT_EQ(Complete({"gpupool", "get", "jobs", "x"}, 3), V{});   // only the first word is a kind
  EXPECT_EQ(Complete({"gpupool"}, 1), Complete({"gpupool", ""}, 1));
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
