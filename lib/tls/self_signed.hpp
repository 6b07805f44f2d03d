#pragma once

// The certificate an agent serves while it waits for enrollment: self-signed for its own API
// key, since it has no CA yet. Nobody trusts it; etcd-fleet binds it to the enrollment through
// the proof, which covers its public key (docs/security.md, "The enrollment protocol").

#include <chrono>
#include <string>
#include <vector>

#include "common/error.hpp"
#include "tls/certificate.hpp"
#include "tls/key.hpp"

namespace etcdagent::tls {

// Long enough for any enrollment, short enough that a forgotten one is not forever.
inline constexpr std::chrono::seconds kEnrollmentCertValidity = std::chrono::days(30);

// A self-signed certificate for `key`: CN `common_name`, SANs `sans` (IPs and DNS names),
// basicConstraints critical,CA:FALSE, EKU serverAuth, valid from now (backdated a little).
Result<Certificate> selfSignedServerCertificate(
    const Key& key, const std::string& common_name, const std::vector<std::string>& sans,
    std::chrono::system_clock::time_point now = std::chrono::system_clock::now(),
    std::chrono::seconds validity = kEnrollmentCertValidity);

}  // namespace etcdagent::tls
