#pragma once

// Subject alternative names as lib/tls takes and gives them: plain strings, an IP address
// ("127.0.0.1", "::1") or a DNS name ("db1.example.org"). One canonical spelling each (IPs as
// inet_ntop prints them, DNS names lower-case), so an allowed list compares by string.

#include <string>
#include <string_view>
#include <vector>

#include "common/error.hpp"
#include "tls/handles.hpp"

namespace etcdagent::tls {

// Limits on what a peer may ask for (a CSR arrives over the network).
inline constexpr std::size_t kMaxCsrSize = 16 * 1024;  // PEM bytes
inline constexpr std::size_t kMaxSans = 16;
inline constexpr std::size_t kMaxNameLength = 253;       // a DNS name's limit (RFC 1035)
inline constexpr std::size_t kMaxCommonNameLength = 64;  // X.509's ub-common-name

// An IPv4 or IPv6 literal.
bool isIpAddress(std::string_view name);

// The canonical spelling of a SAN; an empty, over-long or malformed name (a DNS label of
// characters other than letters, digits and '-', wildcards, empty labels) is kInvalidArgument
// naming it.
Result<std::string> canonicalName(std::string_view name);

// canonicalName() of each, duplicates dropped (first one kept); more than kMaxSans is an error.
Result<std::vector<std::string>> canonicalNames(const std::vector<std::string>& names);

// A common name: printable, no control characters, at most kMaxCommonNameLength bytes.
Result<void> validateCommonName(std::string_view cn);

// The GENERAL_NAMES of a subjectAltName extension for canonical names.
Result<GeneralNamesPtr> toGeneralNames(const std::vector<std::string>& names);
// What fromGeneralNames does with a SAN kind other than IP and DNS (e-mail, URI, ...): a request
// asking for one is refused; a certificate from elsewhere that has one is still readable.
enum class OtherSanKinds { kRefuse, kSkip };

// The IP and DNS names of a subjectAltName extension; with OtherSanKinds::kRefuse another kind is
// kInvalidArgument naming it.
Result<std::vector<std::string>> fromGeneralNames(const GENERAL_NAMES* names,
                                                  OtherSanKinds others = OtherSanKinds::kRefuse);

// The subject's (or issuer's) common name, "" when it has none.
std::string commonNameOf(const X509_NAME* name);
// The whole name, one line, RFC 2253 order ("CN=etcd-fleet CA 1a2b3c4d").
std::string nameText(const X509_NAME* name);

}  // namespace etcdagent::tls
