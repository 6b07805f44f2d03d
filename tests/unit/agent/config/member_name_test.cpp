#include "agent/config/member_name.hpp"

#include <gtest/gtest.h>

namespace etcdagent::agent {
namespace {

TEST(MemberName, PathSafeEtcdNamesPass) {
  for (const char* n : {"m1", "db-1.prod_x", "9", "A"}) EXPECT_FALSE(memberNameProblem(n)) << n;
  EXPECT_FALSE(memberNameProblem(std::string(63, 'a')));
}

TEST(MemberName, DotsSlashesAndLongNamesAreRefused) {
  for (const char* n : {"", ".", "..", "../x", "a/b", "-a", "_a", "a b", "a\nb"}) {
    EXPECT_TRUE(memberNameProblem(n)) << n;
  }
  EXPECT_NE(memberNameProblem(std::string(64, 'a'))->find("got 64 characters"), std::string::npos);
  EXPECT_NE(memberNameProblem("restore")->find("reserved"), std::string::npos);
  EXPECT_NE(memberNameProblem("discovery")->find("reserved"), std::string::npos);
}

}  // namespace
}  // namespace etcdagent::agent
