// put / get / del through etcdctl and etcd-fleet against the same real etcd: same output, same
// exit codes. Only IDs and revisions may differ, and they are masked.

#include <gtest/gtest.h>

#include <regex>

#include "tests/support/etcd_cluster.hpp"

namespace etcdagent::testing {
namespace {

const std::vector<std::string> kIdFields = {"cluster_id", "member_id",       "revision",
                                            "raft_term",  "create_revision", "mod_revision"};

class KvParity : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { cluster_ = new EtcdCluster(EtcdCluster::Options{.size = 1}); }
  static void TearDownTestSuite() {
    delete cluster_;
    cluster_ = nullptr;
  }

  // Runs the same arguments through both tools; expects equal exit codes and equal (masked) stdout.
  static void expectSame(const std::vector<std::string>& args, const RunOptions& options = {}) {
    auto a = etcdctl(cluster_->endpoints(), args, options);
    auto b = fleet(cluster_->endpoints(), args, options);
    std::string joined;
    for (const auto& s : args) joined += s + " ";
    EXPECT_EQ(a.exit_code, b.exit_code)
        << joined << "\netcdctl stderr: " << a.err << "\netcd-fleet stderr: " << b.err;
    EXPECT_EQ(maskJsonNumbers(a.out, kIdFields), maskJsonNumbers(b.out, kIdFields)) << joined;
  }

  // For mutations each tool acts on its own keys: "{}" in args becomes "a" for etcdctl and "b"
  // for etcd-fleet, and etcd-fleet's output is compared with "b" keys renamed back.
  static void expectSameMutation(const std::vector<std::string>& args) {
    auto with = [&](const std::string& tag) {
      std::vector<std::string> out;
      for (auto s : args) {
        if (auto pos = s.find("{}"); pos != std::string::npos) s.replace(pos, 2, tag);
        out.push_back(s);
      }
      return out;
    };
    auto a = etcdctl(cluster_->endpoints(), with("a"));
    auto b = fleet(cluster_->endpoints(), with("b"));
    EXPECT_EQ(a.exit_code, b.exit_code) << a.err << b.err;
    std::string bout = b.out;
    for (std::size_t pos = 0; (pos = bout.find("key-b", pos)) != std::string::npos;)
      bout.replace(pos, 5, "key-a");
    // JSON carries keys base64-encoded: compare those only by presence.
    static const std::regex key_re("\"key\":\"[^\"]*\"");
    auto mask = [&](const std::string& text) {
      return std::regex_replace(maskJsonNumbers(text, kIdFields), key_re, "\"key\":K");
    };
    EXPECT_EQ(mask(a.out), mask(bout));
  }

  static EtcdCluster* cluster_;
};
EtcdCluster* KvParity::cluster_ = nullptr;

TEST_F(KvParity, PutPrintsOkLikeEtcdctl) {
  expectSameMutation({"put", "key-{}", "bar"});
  expectSameMutation({"put", "key-{}", "bar", "-w", "json"});
  expectSameMutation({"put", "key-{}", "baz", "--prev-kv"});
  expectSameMutation({"put", "key-{}", "qux", "--prev-kv", "-w", "json"});
  expectSameMutation({"put", "key-{}", "--ignore-value"});
}

TEST_F(KvParity, GetSimpleJsonFieldsAndHex) {
  ASSERT_EQ(etcdctl(cluster_->endpoints(), {"put", "foo1", "bar1"}).exit_code, 0);
  ASSERT_EQ(etcdctl(cluster_->endpoints(), {"put", "foo2", "bar2"}).exit_code, 0);
  ASSERT_EQ(etcdctl(cluster_->endpoints(), {"put", "foo3", "a<b&\"c\"\n"}).exit_code, 0);
  expectSame({"get", "foo1"});
  expectSame({"get", "foo1", "-w", "json"});
  expectSame({"get", "foo1", "-w", "fields"});
  expectSame({"get", "foo1", "--hex"});
  expectSame({"get", "foo3", "-w", "json"});
  expectSame({"get", "foo3", "-w", "fields"});
  expectSame({"get", "foo", "--prefix"});
  expectSame({"get", "foo", "--prefix", "-w", "json"});
  expectSame({"get", "foo", "--prefix", "--keys-only"});
  expectSame({"get", "foo", "--prefix", "--print-value-only"});
  expectSame({"get", "foo", "--prefix", "--limit", "2"});
  expectSame({"get", "foo", "--prefix", "--sort-by", "VALUE", "--order", "DESCEND"});
  expectSame({"get", "foo1", "foo3"});
  expectSame({"get", "foo2", "--from-key"});
  expectSame({"get", "foo1", "--consistency", "s"});
  expectSame({"get", "no-such-key"});
  expectSame({"get", "no-such-key", "-w", "json"});
}

TEST_F(KvParity, GetAtOldRevision) {
  auto put = etcdctl(cluster_->endpoints(), {"put", "revkey", "v1", "-w", "json"});
  ASSERT_EQ(put.exit_code, 0);
  auto pos = put.out.find("\"revision\":");
  ASSERT_NE(pos, std::string::npos);
  std::string rev = std::to_string(std::stoll(put.out.substr(pos + 11)));
  ASSERT_EQ(etcdctl(cluster_->endpoints(), {"put", "revkey", "v2"}).exit_code, 0);
  expectSame({"get", "revkey", "--rev", rev});
}

TEST_F(KvParity, DelAndDelPrefix) {
  for (const char* tool : {"a", "b"}) {
    for (int i = 0; i < 3; ++i) {
      std::string key = std::string("key-") + tool + "/" + std::to_string(i);
      ASSERT_EQ(etcdctl(cluster_->endpoints(), {"put", key, "v"}).exit_code, 0);
    }
  }
  expectSameMutation({"del", "key-{}/0"});
  expectSameMutation({"del", "key-{}/", "--prefix", "--prev-kv"});
  expectSameMutation({"del", "key-{}/none", "-w", "json"});
}

TEST_F(KvParity, BadArgumentsFailTheSameWay) {
  expectSame({"get"});
  expectSame({"get", "a", "--prefix", "--from-key"});
  expectSame({"get", "a", "--consistency", "q"});
  expectSame({"get", "a", "--order", "sideways"});
  expectSame({"put"});
  expectSameMutation({"put", "key-{}", "v", "extra-words", "are-ignored"});
  expectSame({"put", "k", "v", "--lease", "zz"});
  expectSame({"del"});
  expectSame({"get", "a", "-w", "table"});
}

TEST_F(KvParity, UnknownFlagPrintsUsageAndFails) {
  auto r = fleet(cluster_->endpoints(), {"get", "--bogus", "a"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("unknown flag: --bogus"), std::string::npos) << r.err;
  EXPECT_NE(r.out.find("USAGE:"), std::string::npos) << r.out;
}

TEST_F(KvParity, ValueFromStdin) {
  auto r = fleet(cluster_->endpoints(), {"put", "stdin-key"}, {.input = "from stdin"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto g = etcdctl(cluster_->endpoints(), {"get", "stdin-key", "--print-value-only"});
  EXPECT_EQ(g.out, "from stdin\n");
}

}  // namespace
}  // namespace etcdagent::testing
