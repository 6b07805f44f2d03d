#include "common/random_text.hpp"

#include <gtest/gtest.h>

#include <array>
#include <set>

namespace etcdagent {
namespace {

TEST(RandomLowerAlnum, GivesTheLengthAskedFromTheAlphabetOnly) {
  for (std::size_t n : {0U, 1U, 32U, 300U}) {
    auto text = randomLowerAlnum(n);
    ASSERT_TRUE(text) << text.error().message;
    EXPECT_EQ(text->size(), n);
    EXPECT_EQ(text->find_first_not_of(kLowerAlnum), std::string::npos) << *text;
  }
}

TEST(RandomLowerAlnum, UsesEveryCharacterAndNeverRepeatsASecret) {
  // 64 draws of 32 characters: 2048 characters miss one of the 36 with probability ~36 *
  // (35/36)^2048, far below 1e-20; two equal secrets of 165 bits do not happen.
  std::set<std::string> secrets;
  std::array<int, 36> seen{};
  for (int i = 0; i < 64; ++i) {
    auto text = randomLowerAlnum(32);
    ASSERT_TRUE(text);
    secrets.insert(*text);
    for (char c : *text) ++seen[kLowerAlnum.find(c)];
  }
  EXPECT_EQ(secrets.size(), 64U);
  for (std::size_t i = 0; i < seen.size(); ++i) EXPECT_GT(seen[i], 0) << kLowerAlnum[i];
}

}  // namespace
}  // namespace etcdagent
