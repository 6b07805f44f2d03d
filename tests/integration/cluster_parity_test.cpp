// member / endpoint / move-leader through etcdctl and etcd-fleet against the same real etcd (one
// member and three members): same output, same exit codes. Only what legitimately differs between
// two runs is masked: timings, raft indexes, db sizes, and the IDs of members each tool adds.

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <regex>
#include <sstream>

#include "tests/support/etcd_cluster.hpp"

namespace etcdagent::testing {
namespace {

std::string joined(const std::vector<std::string>& args) {
  std::string out;
  for (const auto& s : args) out += s + " ";
  return out;
}

std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

std::string lastLine(const std::string& text) {
  auto all = lines(text);
  return all.empty() ? std::string() : all.back();
}

// Health timings: "took = 2.1ms", "took":"2.1ms", "Took" : 2.1ms, and the TOOK table cell.
std::string maskTook(std::string text) {
  static const std::regex simple("took = [0-9.]+[a-zµ]+");
  static const std::regex json("\"took\":\"[^\"]*\"");
  static const std::regex fields("\"Took\" : [^\n]*");
  text = std::regex_replace(text, simple, "took = T");
  text = std::regex_replace(text, json, "\"took\":\"T\"");
  return std::regex_replace(text, fields, "\"Took\" : T");
}

// The cells of a tablewriter table (borders dropped, cells trimmed), with the listed columns
// replaced by "N": widths of masked columns differ between runs, the rest must not.
std::vector<std::vector<std::string>> tableCells(const std::string& text,
                                                 const std::vector<std::size_t>& masked = {}) {
  std::vector<std::vector<std::string>> rows;
  bool header = true;
  for (const auto& line : lines(text)) {
    if (line.starts_with("+")) continue;
    std::vector<std::string> cells;
    std::istringstream in(line.substr(1));
    for (std::string cell; std::getline(in, cell, '|');) {
      auto b = cell.find_first_not_of(' ');
      auto e = cell.find_last_not_of(' ');
      cell = b == std::string::npos ? std::string() : cell.substr(b, e - b + 1);
      if (!header && std::find(masked.begin(), masked.end(), cells.size()) != masked.end())
        cell = "N";
      cells.push_back(cell);
    }
    header = false;
    rows.push_back(cells);
  }
  return rows;
}

// Simple output "a, b, c" with the listed columns replaced by "N".
std::string maskColumns(const std::string& text, const std::vector<std::size_t>& masked) {
  std::string out;
  for (const auto& line : lines(text)) {
    std::vector<std::string> cols;
    std::size_t start = 0;
    for (;;) {
      auto comma = line.find(", ", start);
      cols.push_back(line.substr(start, comma == std::string::npos ? comma : comma - start));
      if (comma == std::string::npos) break;
      start = comma + 2;
    }
    for (auto i : masked)
      if (i < cols.size()) cols[i] = "N";
    for (std::size_t i = 0; i < cols.size(); ++i) out += (i ? ", " : "") + cols[i];
    out += "\n";
  }
  return out;
}

// etcdctl's stderr without the client library's JSON log lines.
std::string withoutLogs(const std::string& text) {
  std::string out;
  for (const auto& l : lines(text))
    if (!l.starts_with("{\"level\":")) out += l + "\n";
  return out;
}

std::string sortedLines(const std::string& text) {
  auto all = lines(text);
  std::sort(all.begin(), all.end());
  std::string out;
  for (const auto& l : all) out += l + "\n";
  return out;
}

// The top-level objects of a JSON array, sorted (health lists endpoints in completion order).
std::vector<std::string> sortedJsonObjects(const std::string& text) {
  std::vector<std::string> out;
  int depth = 0;
  std::size_t start = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '{' && depth++ == 0) start = i;
    if (text[i] == '}' && --depth == 0) out.push_back(text.substr(start, i - start + 1));
  }
  std::sort(out.begin(), out.end());
  return out;
}

// Status columns that change on their own: db size, raft term, raft index, applied index.
const std::vector<std::size_t> kStatusVolatile = {3, 6, 7, 8};
const std::vector<std::string> kStatusJsonVolatile = {
    "revision", "raft_term", "dbSize", "raftIndex", "raftTerm", "raftAppliedIndex", "dbSizeInUse"};
// Per-endpoint fields output, with the same values masked.
std::string maskStatusFields(std::string text) {
  static const std::regex re("\"(Revision|RaftTerm|DBSize|RaftIndex|RaftAppliedIndex)\" : [0-9]+");
  return std::regex_replace(text, re, "\"$1\" : N");
}

std::string leaderId(const std::string& endpoints) {
  auto r = etcdctl(endpoints, {"endpoint", "status", "-w", "json"});
  static const std::regex re("\"leader\":([0-9]+)");
  std::smatch m;
  if (!std::regex_search(r.out, m, re)) return {};
  char buf[32];
  std::snprintf(buf, sizeof buf, "%llx", std::stoull(m[1].str()));
  return buf;
}

std::vector<std::string> memberIds(const std::string& endpoints) {
  std::vector<std::string> ids;
  for (const auto& line : lines(etcdctl(endpoints, {"member", "list"}).out))
    ids.push_back(line.substr(0, line.find(',')));
  return ids;
}

std::string replaceAll(std::string text, const std::string& from, const std::string& to) {
  for (std::size_t pos = 0; (pos = text.find(from, pos)) != std::string::npos; pos += to.size())
    text.replace(pos, from.size(), to);
  return text;
}

// ETCD_INITIAL_CLUSTER lists members in ID order; IDs of added members are random.
std::string normalizeInitialCluster(const std::string& text) {
  static const std::regex re("ETCD_INITIAL_CLUSTER=\"([^\"]*)\"");
  std::smatch m;
  if (!std::regex_search(text, m, re)) return text;
  std::vector<std::string> entries;
  std::istringstream in(m[1].str());
  for (std::string e; std::getline(in, e, ',');) entries.push_back(e);
  std::sort(entries.begin(), entries.end());
  std::string joinedEntries;
  for (const auto& e : entries) joinedEntries += (joinedEntries.empty() ? "" : ",") + e;
  return m.prefix().str() + "ETCD_INITIAL_CLUSTER=\"" + joinedEntries + "\"" + m.suffix().str();
}

// The objects of the "members" array sorted (JSON of MemberAdd/MemberList responses).
std::string sortMembersJson(const std::string& text) {
  const std::string key = "\"members\":[";
  auto start = text.find(key);
  if (start == std::string::npos) return text;
  start += key.size();
  std::vector<std::string> objects;
  int depth = 0;
  std::size_t objStart = start;
  std::size_t end = start;
  for (; end < text.size(); ++end) {
    const char c = text[end];
    if (depth == 0 && c == ']') break;
    if (c == '{' && depth++ == 0) objStart = end;
    if (c == '}' && --depth == 0) objects.push_back(text.substr(objStart, end - objStart + 1));
  }
  std::sort(objects.begin(), objects.end());
  std::string body;
  for (const auto& o : objects) body += (body.empty() ? "" : ",") + o;
  return text.substr(0, start) + body + text.substr(end);
}

// "Member <%16x ID> ...": IDs with a leading zero digit are padded with a space.
std::string maskMemberLine(const std::string& text) {
  static const std::regex re("Member +");
  return maskHexIds(std::regex_replace(text, re, "Member "));
}

std::string unstartedId(const std::string& endpoints) {
  for (const auto& line : lines(etcdctl(endpoints, {"member", "list"}).out))
    if (line.find(", unstarted, ") != std::string::npos) return line.substr(0, line.find(','));
  return {};
}

// One cluster per suite (the suites run one after another, so they share the pointer).
class ClusterParityBase : public ::testing::Test {
 protected:
  static void startCluster(int size) {
    cluster_ = new EtcdCluster(EtcdCluster::Options{.size = size});
  }
  static void TearDownTestSuite() {
    delete cluster_;
    cluster_ = nullptr;
  }
  static std::string endpoints() { return cluster_->endpoints(); }
  static EtcdCluster* cluster() { return cluster_; }

  // Same arguments through both tools: equal exit codes and equal stdout after `mask`.
  static void expectSame(
      const std::vector<std::string>& args,
      const std::function<std::string(const std::string&)>& mask = [](const std::string& s) {
        return s;
      }) {
    auto a = etcdctl(endpoints(), args);
    auto b = fleet(endpoints(), args);
    EXPECT_EQ(a.exit_code, b.exit_code)
        << joined(args) << "\netcdctl stderr: " << a.err << "\netcd-fleet stderr: " << b.err;
    EXPECT_EQ(mask(a.out), mask(b.out)) << joined(args) << "\netcd-fleet stderr: " << b.err;
  }

  // Argument errors: equal exit codes and the same "Error: ..." line on stderr.
  static void expectSameError(const std::vector<std::string>& args) {
    auto a = etcdctl(endpoints(), args);
    auto b = fleet(endpoints(), args);
    EXPECT_EQ(a.exit_code, b.exit_code) << joined(args) << "\n" << a.err << "\n" << b.err;
    EXPECT_EQ(lastLine(a.err), lastLine(b.err)) << joined(args);
    EXPECT_EQ(a.out, b.out) << joined(args);
  }

  static EtcdCluster* cluster_;
};
EtcdCluster* ClusterParityBase::cluster_ = nullptr;

class ClusterParityOneMember : public ClusterParityBase {
 protected:
  static void SetUpTestSuite() { startCluster(1); }
};

class ClusterParityThreeMembers : public ClusterParityBase {
 protected:
  static void SetUpTestSuite() { startCluster(3); }
};

// ------------------------------------------------------------------------------ one member

TEST_F(ClusterParityOneMember, MemberListInEveryFormat) {
  expectSame({"member", "list"});
  expectSame({"member", "list", "-w", "table"});
  expectSame({"member", "list", "-w", "json"});
  expectSame({"member", "list", "-w", "fields"});
  expectSame({"member", "list", "--hex", "-w", "json"});
}

TEST_F(ClusterParityOneMember, EndpointStatusInEveryFormat) {
  expectSame({"endpoint", "status"},
             [](const std::string& s) { return maskColumns(s, kStatusVolatile); });
  auto a = etcdctl(endpoints(), {"endpoint", "status", "-w", "table"});
  auto b = fleet(endpoints(), {"endpoint", "status", "-w", "table"});
  EXPECT_EQ(a.exit_code, b.exit_code);
  EXPECT_EQ(tableCells(a.out, kStatusVolatile), tableCells(b.out, kStatusVolatile)) << b.out;
  expectSame({"endpoint", "status", "-w", "json"},
             [](const std::string& s) { return maskJsonNumbers(s, kStatusJsonVolatile); });
  expectSame({"endpoint", "status", "-w", "fields"}, maskStatusFields);
  expectSame({"endpoint", "status", "--cluster"},
             [](const std::string& s) { return maskColumns(s, kStatusVolatile); });
}

TEST_F(ClusterParityOneMember, EndpointHealthInEveryFormat) {
  // etcdctl 3.4 prints the simple health lines on stderr.
  for (const char* cluster : {"--cluster=false", "--cluster"}) {
    auto a = etcdctl(endpoints(), {"endpoint", "health", cluster});
    auto b = fleet(endpoints(), {"endpoint", "health", cluster});
    EXPECT_EQ(a.exit_code, b.exit_code);
    EXPECT_EQ(a.out, b.out);
    EXPECT_EQ(maskTook(withoutLogs(a.err)), maskTook(b.err));
    EXPECT_NE(b.err.find(" is healthy: successfully committed proposal: took = "),
              std::string::npos);
  }
  expectSame({"endpoint", "health", "-w", "json"}, maskTook);
  expectSame({"endpoint", "health", "-w", "fields"}, maskTook);
  auto a = etcdctl(endpoints(), {"endpoint", "health", "-w", "table"});
  auto b = fleet(endpoints(), {"endpoint", "health", "-w", "table"});
  EXPECT_EQ(a.exit_code, b.exit_code);
  EXPECT_EQ(tableCells(a.out, {2}), tableCells(b.out, {2})) << b.out;
}

TEST_F(ClusterParityOneMember, HashKv) {
  ASSERT_EQ(etcdctl(endpoints(), {"put", "hash-key", "v"}).exit_code, 0);
  expectSame({"endpoint", "hashkv"});
  expectSame({"endpoint", "hashkv", "-w", "table"});
  expectSame({"endpoint", "hashkv", "-w", "json"});
  expectSame({"endpoint", "hashkv", "-w", "fields"});
  expectSame({"endpoint", "hashkv", "--rev", "1"});
  expectSame({"endpoint", "hashkv", "--cluster", "-w", "json"});
  // A future revision: nothing on stdout (an empty list in json/table), exit 1.
  expectSame({"endpoint", "hashkv", "--rev", "100000"});
  expectSame({"endpoint", "hashkv", "--rev", "100000", "-w", "json"});
  expectSame({"endpoint", "hashkv", "--rev", "100000", "-w", "table"});
}

TEST_F(ClusterParityOneMember, AddLearnerListRemoveList) {
  // Each tool adds its own learner: etcd derives a member ID from the peer URLs and the current
  // second, so re-adding the same URL within a second collides with the removed member's ID.
  const std::string peerA = "http://127.0.0.1:" + std::to_string(freePort());
  const std::string peerB = "http://127.0.0.1:" + std::to_string(freePort());
  auto before = etcdctl(endpoints(), {"member", "list"});
  auto a = etcdctl(endpoints(), {"member", "add", "learner1", "--learner", "--peer-urls=" + peerA});
  ASSERT_EQ(a.exit_code, 0) << a.err;
  const std::string aId = unstartedId(endpoints());
  ASSERT_FALSE(aId.empty());
  auto aRemove = etcdctl(endpoints(), {"member", "remove", aId});
  ASSERT_EQ(aRemove.exit_code, 0) << aRemove.err;

  auto b = fleet(endpoints(), {"member", "add", "learner1", "--learner", "--peer-urls=" + peerB});
  ASSERT_EQ(b.exit_code, 0) << b.err;
  EXPECT_EQ(normalizeInitialCluster(maskMemberLine(a.out)),
            normalizeInitialCluster(maskMemberLine(replaceAll(b.out, peerB, peerA))));
  // The new member appears under its new name, with the existing one.
  const std::string m1 = "m1=" + cluster()->member(0).peer_url;
  const std::string l1 = "learner1=" + peerB;
  EXPECT_TRUE(b.out.find("ETCD_INITIAL_CLUSTER=\"" + m1 + "," + l1 + "\"") != std::string::npos ||
              b.out.find("ETCD_INITIAL_CLUSTER=\"" + l1 + "," + m1 + "\"") != std::string::npos)
      << b.out;

  // Both tools list the new, unstarted learner.
  expectSame({"member", "list"});
  expectSame({"member", "list", "-w", "table"});
  expectSame({"member", "list", "-w", "json"});
  expectSame({"member", "list", "-w", "fields"});
  auto list = etcdctl(endpoints(), {"member", "list"}).out;
  ASSERT_NE(list.find(", unstarted, , " + peerB + ", , true"), std::string::npos) << list;
  const std::string id = unstartedId(endpoints());

  // Promoting a learner that never started fails in etcd, the same way for both tools.
  auto pa = etcdctl(endpoints(), {"member", "promote", id});
  auto pb = fleet(endpoints(), {"member", "promote", id});
  EXPECT_EQ(pa.exit_code, 1);
  EXPECT_EQ(pa.exit_code, pb.exit_code);
  EXPECT_NE(pb.err.find("can only promote a learner member which is in sync with leader"),
            std::string::npos)
      << pb.err;

  // Updating its peer URLs (to the same) works for both.
  expectSame({"member", "update", id, "--peer-urls=" + peerB});

  auto rb = fleet(endpoints(), {"member", "remove", id});
  EXPECT_EQ(rb.exit_code, 0) << rb.err;
  EXPECT_EQ(maskMemberLine(aRemove.out), maskMemberLine(rb.out));
  EXPECT_EQ(etcdctl(endpoints(), {"member", "list"}).out, before.out);
  expectSame({"member", "list"});
}

TEST_F(ClusterParityOneMember, MemberAddAndRemoveAsJson) {
  const std::string peerA = "http://127.0.0.1:" + std::to_string(freePort());
  const std::string peerB = "http://127.0.0.1:" + std::to_string(freePort());
  const std::vector<std::string> ids = {"ID", "member_id", "raft_term"};
  auto a = etcdctl(endpoints(),
                   {"member", "add", "l2", "--learner", "-w", "json", "--peer-urls", peerA});
  ASSERT_EQ(a.exit_code, 0) << a.err;
  auto ra = etcdctl(endpoints(), {"member", "remove", unstartedId(endpoints()), "-w", "json"});
  ASSERT_EQ(ra.exit_code, 0);

  auto b =
      fleet(endpoints(), {"member", "add", "l2", "--learner", "-w", "json", "--peer-urls", peerB});
  ASSERT_EQ(b.exit_code, 0) << b.err;
  // Members come sorted by ID, and the new IDs are random: compare them as a set.
  EXPECT_EQ(sortMembersJson(maskJsonNumbers(a.out, ids)),
            sortMembersJson(maskJsonNumbers(replaceAll(b.out, peerB, peerA), ids)));
  auto rb = fleet(endpoints(), {"member", "remove", unstartedId(endpoints()), "-w", "json"});
  ASSERT_EQ(rb.exit_code, 0) << rb.err;
  EXPECT_EQ(maskJsonNumbers(ra.out, ids), maskJsonNumbers(rb.out, ids));
}

TEST_F(ClusterParityOneMember, UnsupportedFormatChangesNothing) {
  // etcdctl would add the member and only then fail to print it; etcd-fleet refuses first.
  auto before = etcdctl(endpoints(), {"member", "list"}).out;
  auto r = fleet(endpoints(), {"member", "add", "t", "--learner", "-w", "table",
                               "--peer-urls=http://127.0.0.1:" + std::to_string(freePort())});
  EXPECT_EQ(r.exit_code, 4);
  EXPECT_EQ(lastLine(r.err), "Error: table not supported as output format");
  EXPECT_EQ(etcdctl(endpoints(), {"member", "list"}).out, before);
  auto m = fleet(endpoints(), {"move-leader", memberIds(endpoints())[0], "-w", "fields"});
  EXPECT_EQ(m.exit_code, 4);
}

TEST_F(ClusterParityOneMember, ArgumentErrorsMatchEtcdctl) {
  expectSameError({"member", "add"});
  expectSameError({"member", "add", "a", "b"});
  expectSameError({"member", "add", "a", "http://127.0.0.1:1"});
  expectSameError({"member", "add", "a"});
  expectSameError({"member", "add", "a", "--peer-urls=127.0.0.1:2380"});
  expectSameError({"member", "add", "a", "--peer-urls=localhost:2380"});
  expectSameError({"member", "add", "a", "--peer-urls=http://127.0.0.1"});
  expectSameError({"member", "add", "a", "--peer-urls=http://127.0.0.1:1/p"});
  expectSameError({"member", "add", "a", "--peer-urls=http://127.0.0.1:1,"});
  expectSameError({"member", "remove"});
  expectSameError({"member", "remove", "zz"});
  expectSameError({"member", "remove", "1", "2"});
  expectSameError({"member", "update"});
  expectSameError({"member", "update", "zz", "--peer-urls=http://127.0.0.1:1"});
  expectSameError({"member", "update", "1"});
  expectSameError({"member", "update", "1", "--peer-urls=foo"});
  expectSameError({"member", "promote"});
  expectSameError({"member", "promote", "10000000000000000"});
  expectSameError({"move-leader"});
  expectSameError({"move-leader", "zz"});
  expectSameError({"move-leader", "1", "2"});
  // Errors from etcd: same exit code, etcd's words in our message.
  for (const auto& cmd : std::vector<std::vector<std::string>>{
           {"member", "remove", "123"},
           {"member", "promote", "123"},
           {"member", "update", "123", "--peer-urls=http://127.0.0.1:1"}}) {
    auto a = etcdctl(endpoints(), cmd);
    auto b = fleet(endpoints(), cmd);
    EXPECT_EQ(a.exit_code, b.exit_code) << joined(cmd);
    EXPECT_NE(b.err.find("etcdserver: member not found"), std::string::npos) << b.err;
  }
}

TEST_F(ClusterParityOneMember, UnreachableEndpointIsNamed) {
  const std::string dead = "127.0.0.1:" + std::to_string(freePort());
  for (const auto& cmd : std::vector<std::vector<std::string>>{
           {"endpoint", "health"}, {"endpoint", "status"}, {"endpoint", "hashkv"}}) {
    auto a = etcdctl(dead, cmd);
    auto b = fleet(dead, cmd);
    EXPECT_EQ(a.exit_code, b.exit_code) << joined(cmd) << a.err << b.err;
    EXPECT_EQ(a.out, b.out) << joined(cmd);
    EXPECT_NE(b.err.find(dead), std::string::npos) << b.err;
  }
  auto h = fleet(dead, {"endpoint", "health"});
  EXPECT_NE(h.err.find(dead + " is unhealthy: failed to commit proposal: "), std::string::npos);
  EXPECT_EQ(lastLine(h.err), "Error: unhealthy cluster");
  auto s = fleet(dead, {"endpoint", "status"});
  EXPECT_NE(s.err.find("Failed to get the status of endpoint " + dead), std::string::npos);

  // One live and one dead endpoint: the live one is still reported, the command still fails.
  const std::string both = endpoints() + "," + dead;
  auto a = etcdctl(both, {"endpoint", "health", "-w", "json"});
  auto b = fleet(both, {"endpoint", "health", "-w", "json"});
  EXPECT_EQ(a.exit_code, b.exit_code);
  auto aj = sortedJsonObjects(maskTook(a.out));
  auto bj = sortedJsonObjects(maskTook(b.out));
  ASSERT_EQ(aj.size(), 2u);
  ASSERT_EQ(bj.size(), 2u);
  auto healthy = [](const std::vector<std::string>& objects) {
    for (const auto& o : objects)
      if (o.find("\"health\":true") != std::string::npos) return o;
    return std::string();
  };
  EXPECT_FALSE(healthy(aj).empty());
  EXPECT_EQ(healthy(aj), healthy(bj));
  const auto deadJson = std::string("{\"endpoint\":\"") + dead + "\",\"health\":false";
  EXPECT_TRUE(bj[0].starts_with(deadJson) || bj[1].starts_with(deadJson)) << b.out;
  auto sa = etcdctl(both, {"endpoint", "status"});
  auto sb = fleet(both, {"endpoint", "status"});
  EXPECT_EQ(sa.exit_code, sb.exit_code);
  EXPECT_EQ(maskColumns(sa.out, kStatusVolatile), maskColumns(sb.out, kStatusVolatile));
}

// ---------------------------------------------------------------------------- three members

TEST_F(ClusterParityThreeMembers, MemberListAndStatus) {
  expectSame({"member", "list"});
  expectSame({"member", "list", "-w", "table"});
  // The header names the member that answered; with several endpoints that is each tool's pick.
  expectSame({"member", "list", "-w", "json"},
             [](const std::string& s) { return maskJsonNumbers(s, {"member_id"}); });
  expectSame({"member", "list", "-w", "fields"}, [](const std::string& s) {
    static const std::regex re("\"MemberID\" : [0-9]+");
    return std::regex_replace(s, re, "\"MemberID\" : N");
  });
  for (const char* cluster : {"--cluster=false", "--cluster"}) {
    expectSame({"endpoint", "status", cluster},
               [](const std::string& s) { return maskColumns(s, kStatusVolatile); });
    expectSame({"endpoint", "status", cluster, "-w", "json"},
               [](const std::string& s) { return maskJsonNumbers(s, kStatusJsonVolatile); });
    auto a = etcdctl(endpoints(), {"endpoint", "status", cluster, "-w", "table"});
    auto b = fleet(endpoints(), {"endpoint", "status", cluster, "-w", "table"});
    EXPECT_EQ(tableCells(a.out, kStatusVolatile), tableCells(b.out, kStatusVolatile)) << b.out;
  }
  // Asking a single member with --cluster reaches all three.
  auto one = fleet(cluster()->endpoint(1), {"endpoint", "status", "--cluster"});
  EXPECT_EQ(one.exit_code, 0);
  EXPECT_EQ(lines(one.out).size(), 3u) << one.out;
}

TEST_F(ClusterParityThreeMembers, HealthAndHashKv) {
  // Endpoints are checked in parallel and listed as they answer: compare in sorted order.
  for (const char* cluster : {"--cluster=false", "--cluster"}) {
    auto sa = etcdctl(endpoints(), {"endpoint", "health", cluster});
    auto sb = fleet(endpoints(), {"endpoint", "health", cluster});
    EXPECT_EQ(sa.exit_code, sb.exit_code);
    EXPECT_EQ(sortedLines(maskTook(withoutLogs(sa.err))), sortedLines(maskTook(sb.err)));
    EXPECT_EQ(lines(sb.err).size(), 3u) << sb.err;
    auto a = etcdctl(endpoints(), {"endpoint", "health", cluster, "-w", "json"});
    auto b = fleet(endpoints(), {"endpoint", "health", cluster, "-w", "json"});
    EXPECT_EQ(a.exit_code, b.exit_code);
    EXPECT_EQ(sortedJsonObjects(maskTook(a.out)), sortedJsonObjects(maskTook(b.out)));
    auto ta =
        tableCells(etcdctl(endpoints(), {"endpoint", "health", cluster, "-w", "table"}).out, {2});
    auto tb =
        tableCells(fleet(endpoints(), {"endpoint", "health", cluster, "-w", "table"}).out, {2});
    ASSERT_FALSE(ta.empty());
    std::sort(ta.begin() + 1, ta.end());
    std::sort(tb.begin() + 1, tb.end());
    EXPECT_EQ(ta, tb);
  }
  ASSERT_EQ(etcdctl(endpoints(), {"put", "k", "v"}).exit_code, 0);
  expectSame({"endpoint", "hashkv", "--cluster"});
  expectSame({"endpoint", "hashkv", "-w", "table"});
  expectSame({"endpoint", "hashkv", "-w", "json"});
}

TEST_F(ClusterParityThreeMembers, MoveLeaderTransfersLeadership) {
  auto ids = memberIds(endpoints());
  ASSERT_EQ(ids.size(), 3u);
  for (int round = 0; round < 2; ++round) {
    const std::string leader = leaderId(endpoints());
    ASSERT_FALSE(leader.empty());
    std::string target;
    for (const auto& id : ids)
      if (id != leader) target = id;
    // etcdctl in the first round, etcd-fleet in the second: same wording, leadership moved.
    auto r = round == 0 ? etcdctl(endpoints(), {"move-leader", target})
                        : fleet(endpoints(), {"move-leader", target});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out, "Leadership transferred from " + leader + " to " + target + "\n");
    EXPECT_EQ(leaderId(endpoints()), target);
  }
  // Through a single non-leader endpoint there is no leader to ask: both fail the same way.
  const std::string leader = leaderId(endpoints());
  std::string follower;
  for (std::size_t i = 0; i < cluster()->size(); ++i) {
    auto s = etcdctl(cluster()->endpoint(i), {"endpoint", "status"});
    if (s.out.find(", " + leader + ", ") == std::string::npos) follower = cluster()->endpoint(i);
  }
  ASSERT_FALSE(follower.empty());
  auto a = etcdctl(follower, {"move-leader", leader});
  auto b = fleet(follower, {"move-leader", leader});
  EXPECT_EQ(a.exit_code, b.exit_code);
  EXPECT_EQ(lastLine(a.err), lastLine(b.err));
  // -w json prints the (empty) response.
  std::string target;
  for (const auto& id : ids)
    if (id != leader) target = id;
  auto j = fleet(endpoints(), {"move-leader", target, "-w", "json"});
  EXPECT_EQ(j.exit_code, 0) << j.err;
  EXPECT_EQ(j.out, "{}\n");
  EXPECT_EQ(leaderId(endpoints()), target);
}

}  // namespace
}  // namespace etcdagent::testing
