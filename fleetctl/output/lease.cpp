#include "fleetctl/output/lease.hpp"

#include <cstdio>
#include <limits>

#include "common/encoding.hpp"
#include "fleetctl/output/json.hpp"
#include "fleetctl/output/kv.hpp"

namespace etcdagent::fleet {
namespace {

// The promoted fields of clientv3's embedded *pb.ResponseHeader (all `omitempty`).
void headerJson(JsonObject& j, const etcdserverpb::ResponseHeader& h) {
  if (h.cluster_id() != 0) j.unum("cluster_id", h.cluster_id());
  if (h.member_id() != 0) j.unum("member_id", h.member_id());
  if (h.revision() != 0) j.num("revision", h.revision());
  if (h.raft_term() != 0) j.unum("raft_term", h.raft_term());
}

}  // namespace

Result<std::int64_t> parseGoInt64(std::string_view text, int base) {
  auto error = [&](const char* what) {
    return fail(Errc::kInvalidArgument,
                "strconv.ParseInt: parsing " + goQuote(text) + ": " + std::string(what));
  };
  std::string_view s = text;
  bool negative = false;
  if (!s.empty() && (s.front() == '+' || s.front() == '-')) {
    negative = s.front() == '-';
    s.remove_prefix(1);
  }
  if (s.empty()) return error("invalid syntax");
  // As Go's ParseUint: a bad digit is a syntax error, an overflow is reported where it happens.
  constexpr std::uint64_t kMax = std::numeric_limits<std::uint64_t>::max();
  const auto ubase = static_cast<std::uint64_t>(base);
  const std::uint64_t cutoff = kMax / ubase + 1;
  std::uint64_t n = 0;
  for (char c : s) {
    const char lower = static_cast<char>(c | 0x20);
    std::uint64_t d = 0;
    if (c >= '0' && c <= '9') {
      d = static_cast<std::uint64_t>(c - '0');
    } else if (lower >= 'a' && lower <= 'z') {
      d = static_cast<std::uint64_t>(lower - 'a') + 10;
    } else {
      return error("invalid syntax");
    }
    if (d >= ubase) return error("invalid syntax");
    if (n >= cutoff) return error("value out of range");
    n *= ubase;
    const std::uint64_t n1 = n + d;
    if (n1 < n) return error("value out of range");
    n = n1;
  }
  constexpr std::uint64_t kLimit = std::uint64_t{1} << 63;
  if (!negative && n >= kLimit) return error("value out of range");
  if (negative && n > kLimit) return error("value out of range");
  if (negative) return static_cast<std::int64_t>(~n + 1);  // two's complement, -2^63 included
  return static_cast<std::int64_t>(n);
}

Result<std::int64_t> parseLeaseIdArg(std::string_view text) {
  auto id = parseGoInt64(text, 16);
  if (!id) {
    return fail(Errc::kInvalidArgument,
                "bad lease ID arg (" + id.error().message + "), expecting ID in Hex");
  }
  return id;
}

Result<std::int64_t> parseLeaseTtlArg(std::string_view text) {
  auto ttl = parseGoInt64(text, 10);
  if (!ttl) return fail(Errc::kInvalidArgument, "bad TTL (" + ttl.error().message + ")");
  return ttl;
}

std::string goStringList(const google::protobuf::RepeatedPtrField<std::string>& items) {
  std::string out = "[";
  for (int i = 0; i < items.size(); ++i) {
    if (i > 0) out += " ";
    out += items[i];
  }
  return out + "]";
}

namespace {

void grantSimple(const Output& o, const etcdserverpb::LeaseGrantResponse& r) {
  o.out << "lease " << leaseIdHex(r.id()) << " granted with TTL(" << r.ttl() << "s)\n";
}

void grantJson(const Output& o, const etcdserverpb::LeaseGrantResponse& r) {
  JsonObject j;
  headerJson(j, r.header());
  // clientv3.LeaseGrantResponse has an `Error string` without omitempty.
  j.num("ID", r.id()).num("TTL", r.ttl()).str("Error", r.error());
  o.out << j.str() << "\n";
}

void grantFields(const Output& o, const etcdserverpb::LeaseGrantResponse& r) {
  printHeaderFields(o.out, r.header());
  o.out << "\"ID\" : " << r.id() << "\n";
  o.out << "\"TTL\" : " << r.ttl() << "\n";
}

void revokeSimple(const Output& o, std::int64_t id, const etcdserverpb::LeaseRevokeResponse&) {
  o.out << "lease " << leaseIdHex(id) << " revoked\n";
}

void revokeJson(const Output& o, std::int64_t, const etcdserverpb::LeaseRevokeResponse& r) {
  o.out << toGoJson(r) << "\n";
}

void revokeFields(const Output& o, std::int64_t, const etcdserverpb::LeaseRevokeResponse& r) {
  printHeaderFields(o.out, r.header());
}

void keepAliveSimple(const Output& o, const etcdserverpb::LeaseKeepAliveResponse& r) {
  o.out << "lease " << leaseIdHex(r.id()) << " keepalived with TTL(" << r.ttl() << ")\n";
}

void keepAliveJson(const Output& o, const etcdserverpb::LeaseKeepAliveResponse& r) {
  JsonObject j;
  headerJson(j, r.header());
  j.num("ID", r.id()).num("TTL", r.ttl());
  o.out << j.str() << "\n";
}

void keepAliveFields(const Output& o, const etcdserverpb::LeaseKeepAliveResponse& r) {
  printHeaderFields(o.out, r.header());
  o.out << "\"ID\" : " << r.id() << "\n";
  o.out << "\"TTL\" : " << r.ttl() << "\n";
}

void timeToLiveSimple(const Output& o, const etcdserverpb::LeaseTimeToLiveResponse& r, bool keys) {
  if (r.grantedttl() == 0 && r.ttl() == -1) {
    o.out << "lease " << leaseIdHex(r.id()) << " already expired\n";
    return;
  }
  o.out << "lease " << leaseIdHex(r.id()) << " granted with TTL(" << r.grantedttl()
        << "s), remaining(" << r.ttl() << "s)";
  // Keys are printed raw, even with --hex (etcdctl converts them with string()).
  if (keys) o.out << ", attached keys(" << goStringList(r.keys()) << ")";
  o.out << "\n";
}

void timeToLiveJson(const Output& o, const etcdserverpb::LeaseTimeToLiveResponse& r, bool) {
  JsonObject j;
  headerJson(j, r.header());
  j.num("id", r.id()).num("ttl", r.ttl()).num("granted-ttl", r.grantedttl());
  if (r.keys().empty()) {
    j.raw("keys", "null");  // a nil [][]byte
  } else {
    std::string list = "[";
    for (int i = 0; i < r.keys_size(); ++i) {
      if (i > 0) list += ",";
      list += "\"" + base64Encode(r.keys(i)) + "\"";
    }
    j.raw("keys", list + "]");
  }
  o.out << j.str() << "\n";
}

void timeToLiveFields(const Output& o, const etcdserverpb::LeaseTimeToLiveResponse& r, bool) {
  printHeaderFields(o.out, r.header());
  o.out << "\"ID\" : " << r.id() << "\n";
  o.out << "\"TTL\" : " << r.ttl() << "\n";
  o.out << "\"GrantedTTL\" : " << r.grantedttl() << "\n";
  for (const auto& k : r.keys()) o.out << "\"Key\" : " << goQuote(k) << "\n";
}

void listSimple(const Output& o, const etcdserverpb::LeaseLeasesResponse& r) {
  o.out << "found " << r.leases_size() << " leases\n";
  for (const auto& l : r.leases()) o.out << leaseIdHex(l.id()) << "\n";
}

void listJson(const Output& o, const etcdserverpb::LeaseLeasesResponse& r) {
  JsonObject j;
  headerJson(j, r.header());
  // clientv3 makes the slice with make(): an empty list is [], never null.
  std::string list = "[";
  for (int i = 0; i < r.leases_size(); ++i) {
    if (i > 0) list += ",";
    list += JsonObject().num("id", r.leases(i).id()).str();
  }
  j.raw("leases", list + "]");
  o.out << j.str() << "\n";
}

void listFields(const Output& o, const etcdserverpb::LeaseLeasesResponse& r) {
  printHeaderFields(o.out, r.header());
  for (const auto& l : r.leases()) o.out << "\"ID\" : " << l.id() << "\n";
}

}  // namespace

constinit const Printer<const etcdserverpb::LeaseGrantResponse&> printLeaseGrant{{
    .simple = grantSimple,
    .json = grantJson,
    .fields = grantFields,
}};

constinit const Printer<std::int64_t, const etcdserverpb::LeaseRevokeResponse&> printLeaseRevoke{{
    .simple = revokeSimple,
    .json = revokeJson,
    .fields = revokeFields,
}};

constinit const Printer<const etcdserverpb::LeaseKeepAliveResponse&> printLeaseKeepAlive{{
    .simple = keepAliveSimple,
    .json = keepAliveJson,
    .fields = keepAliveFields,
}};

constinit const Printer<const etcdserverpb::LeaseTimeToLiveResponse&, bool> printLeaseTimeToLive{{
    .simple = timeToLiveSimple,
    .json = timeToLiveJson,
    .fields = timeToLiveFields,
}};

constinit const Printer<const etcdserverpb::LeaseLeasesResponse&> printLeaseList{{
    .simple = listSimple,
    .json = listJson,
    .fields = listFields,
}};

namespace {

void expiredSimple(const Output& o, std::int64_t id) {
  o.out << "lease " << leaseIdHex(id) << " expired or revoked.\n";
}

}  // namespace

constinit const Printer<std::int64_t> printLeaseExpired{{
    .simple = expiredSimple,
    .json = printNothing<std::int64_t>,
    .fields = printNothing<std::int64_t>,
}};

}  // namespace etcdagent::fleet
