#include <gtest/gtest.h>

#include <filesystem>

#include "common/file_util.hpp"
#include "tests/mocks/temp_dir.hpp"
#include "tls/certificate.hpp"
#include "tls/fleet_pki.hpp"

namespace etcdagent::tls {
namespace {

// A P-256 CA made with
//   openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout ca.key
//     -out ca.crt -days 3650 -subj "/CN=etcd-fleet CA test"     (one line)
// and its fingerprint, as kubeadm computes one, with
//   openssl x509 -in ca.crt -pubkey -noout | openssl pkey -pubin -outform der | openssl dgst
//   -sha256
constexpr std::string_view kCaPem = R"(-----BEGIN CERTIFICATE-----
MIIBkDCCATWgAwIBAgIUUtPY4v8mdeFIQnEKksT6g7LsDF0wCgYIKoZIzj0EAwIw
HTEbMBkGA1UEAwwSZXRjZC1mbGVldCBDQSB0ZXN0MB4XDTI2MTIwMjA0MzI1NVoX
DTM2MTEyOTA0MzI1NVowHTEbMBkGA1UEAwwSZXRjZC1mbGVldCBDQSB0ZXN0MFkw
EwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEei2iKBoDDKzD3xCmpEYSRlcwbBOJz5Wd
nntYprk8OXZkjKAzzqrm52SZgnuczV2fQpq0X3vK1rWNZPLtc8b+eaNTMFEwHQYD
VR0OBBYEFM9i8q1GEJefvrGMmwTuah51yBFeMB8GA1UdIwQYMBaAFM9i8q1GEJef
vrGMmwTuah51yBFeMA8GA1UdEwEB/wQFMAMBAf8wCgYIKoZIzj0EAwIDSQAwRgIh
AL2Tvs5+8yrV/7zgjMdI7zIy9aKlh33/Rz0APCUTz04GAiEA96k9tgsV0BY/+/5l
Jtr3larguWh29++19HmGKUQuK8o=
-----END CERTIFICATE-----
)";
constexpr std::string_view kCaHash =
    "183e3a481149cd1be3de6126d48daf3e509045025ed8ff96fe22dceba86f46b2";

TEST(FleetCaHash, IsTheSha256OfTheSubjectPublicKeyInfo) {
  auto cert = Certificate::fromPem(kCaPem);
  ASSERT_TRUE(cert) << cert.error().message;
  EXPECT_EQ(spkiSha256Hex(*cert), kCaHash);
}

TEST(FleetCaHash, OfTheFleetNeedsItsCaFirst) {
  etcdagent::testing::UnitTempDir dir;
  const std::string inventory = dir.path() + "/fleet.toml";
  auto missing = fleetCaHash(inventory);
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code, Errc::kFailedPrecondition);
  EXPECT_NE(missing.error().message.find("no fleet CA yet: run `etcd-fleet ca init` first"),
            std::string::npos);
  ASSERT_TRUE(createPrivateDirectories(dir.path() + "/pki"));
  ASSERT_TRUE(writeFileAtomic(dir.path() + "/pki/ca.crt", kCaPem, 0644));
  auto hash = fleetCaHash(inventory);
  ASSERT_TRUE(hash) << hash.error().message;
  EXPECT_EQ(*hash, kCaHash);
}

}  // namespace
}  // namespace etcdagent::tls
