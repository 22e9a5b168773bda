// Label selectors in kubectl's syntax and --topology, as POST /v1/jobs fields (selector.h).
#include "cli/selector.h"

#include <gtest/gtest.h>

namespace gpupool::cli {
namespace {

Json Parsed(const std::string& text) {
  Result<Json> r = ParseSelector(text);
  EXPECT_TRUE(r.ok()) << text << ": " << (r.ok() ? "" : r.error().message);
  return r.ok() ? *r : Json();
}

TEST(ParseSelector, EachOperator) {
  EXPECT_EQ(Parsed("gpu=h100"), Json::parse(R"([{"key":"gpu","operator":"In","values":["h100"]}])"));
  EXPECT_EQ(Parsed("gpu==h100"), Json::parse(R"([{"key":"gpu","operator":"In","values":["h100"]}])"));
  EXPECT_EQ(Parsed("zone!=b"), Json::parse(R"([{"key":"zone","operator":"NotIn","values":["b"]}])"));
  EXPECT_EQ(Parsed("zone in (a, b)"), Json::parse(R"([{"key":"zone","operator":"In","values":["a","b"]}])"));
  EXPECT_EQ(Parsed("zone notin (c)"), Json::parse(R"([{"key":"zone","operator":"NotIn","values":["c"]}])"));
  EXPECT_EQ(Parsed("ib"), Json::parse(R"([{"key":"ib","operator":"Exists"}])"));
  EXPECT_EQ(Parsed("!spot"), Json::parse(R"([{"key":"spot","operator":"DoesNotExist"}])"));
  // A prefixed key, an empty value (k= is "k has the empty value").
  EXPECT_EQ(Parsed("gpupool.io/driver=550.54"),
            Json::parse(R"([{"key":"gpupool.io/driver","operator":"In","values":["550.54"]}])"));
  EXPECT_EQ(Parsed("tier="), Json::parse(R"([{"key":"tier","operator":"In","values":[""]}])"));
}

TEST(ParseSelector, SeveralInOneTextAndAcrossFlags) {
  // The comma inside the parentheses belongs to the set; the others separate requirements.
  EXPECT_EQ(Parsed("gpu=h100, zone in (a,b),!spot"), Json::parse(R"([
    {"key":"gpu","operator":"In","values":["h100"]},
    {"key":"zone","operator":"In","values":["a","b"]},
    {"key":"spot","operator":"DoesNotExist"}])"));
  Result<Json> two = ParseSelectors({"gpu=h100", "ib"});
  ASSERT_TRUE(two.ok());
  EXPECT_EQ(two->size(), 2u);
  EXPECT_EQ(*ParseSelectors({}), Json::array());
}

TEST(ParseSelector, ErrorsSayWhat) {
  const std::pair<std::string, const char*> bad[] = {
      {"", "empty requirement"},
      {"a=b,", "empty requirement"},
      {"zone in (a,b", "missing ')'"},
      {"zone in (a))", "')' without '('"},
      {"zone in a", "expected a set in parentheses"},
      {"zone in ()", "the set is empty"},
      {"zone in (a,,b)", "an empty value"},
      {"zone in ((a))", "nested"},
      {"zone within (a)", "expected =, ==, !=, in"},
      {"-gpu=x", "bad label key"},
      {"gpu=h100!", "bad label value"},
      {"UPPER.case/x=y", "bad label key"},
      {"!", "bad label key"},
      {"k=" + std::string(64, 'v'), "bad label value"},
  };
  for (const auto& [text, want] : bad) {
    Result<Json> r = ParseSelector(text);
    ASSERT_FALSE(r.ok()) << text;
    EXPECT_NE(r.error().message.find(want), std::string::npos) << text << ": " << r.error().message;
    EXPECT_EQ(r.error().code, ErrorCode::kInvalidArgument);
  }
}

TEST(ParseTopology, LevelAndWhetherRequired) {
  EXPECT_EQ(*ParseTopology("nvlink-domain"), Json::parse(R"({"level":"nvlink-domain","required":true})"));
  EXPECT_EQ(*ParseTopology("block:preferred"), Json::parse(R"({"level":"block","required":false})"));
  EXPECT_EQ(*ParseTopology("node:required"), Json::parse(R"({"level":"node","required":true})"));
  for (const char* bad : {"", "rack", "node:maybe", "node:"}) EXPECT_FALSE(ParseTopology(bad).ok()) << bad;
}

}  // namespace
}  // namespace gpupool::cli
