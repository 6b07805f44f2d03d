#include "tls/fleet_pki.hpp"

#include <openssl/err.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <vector>

#include "common/file_util.hpp"
#include "tls/csr.hpp"
#include "tls/sign.hpp"

namespace etcdagent::tls {
namespace {

bool exists(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0;
}

// Removes the files it was told about unless dismissed: a failed init leaves no half PKI.
class Cleanup {
 public:
  void add(std::string path) { paths_.push_back(std::move(path)); }
  void dismiss() { paths_.clear(); }
  Cleanup() = default;
  Cleanup(const Cleanup&) = delete;
  Cleanup& operator=(const Cleanup&) = delete;
  ~Cleanup() {
    for (const auto& p : paths_) ::unlink(p.c_str());
  }

 private:
  std::vector<std::string> paths_;
};

Result<void> privateDirectory(const std::string& dir) {
  if (auto r = createPrivateDirectories(dir); !r) return r;
  // An existing directory may be looser; the CA key must not sit in a world-readable one.
  if (::chmod(dir.c_str(), kPkiDirMode) != 0) {
    return fail(Errc::kIo, "cannot make " + dir + " private (chmod 0700): " + errnoText(errno));
  }
  return {};
}

}  // namespace

FleetPkiPaths fleetPkiPaths(const std::string& inventory_path) {
  std::string base = std::filesystem::path(inventory_path).parent_path().string();
  if (base.empty()) base = ".";
  const std::string dir = base + "/pki";
  return {.dir = dir,
          .ca_key = dir + "/ca.key",
          .ca_cert = dir + "/ca.crt",
          .fleet_key = dir + "/fleet.key",
          .fleet_cert = dir + "/fleet.crt",
          .tokens = dir + "/tokens.json"};
}

Result<FleetPki> initFleetPki(const std::string& inventory_path,
                              std::chrono::system_clock::time_point now) {
  FleetPkiPaths paths = fleetPkiPaths(inventory_path);
  for (const auto* p : {&paths.ca_key, &paths.ca_cert}) {
    if (exists(*p)) {
      return fail(Errc::kAlreadyExists,
                  "a CA already exists at " + paths.dir + " (" + *p +
                      "): `etcd-fleet ca show` describes it; a new CA would orphan every "
                      "certificate it issued");
    }
  }
  if (auto r = privateDirectory(paths.dir); !r) return fail(r.error());

  auto ca = createCa({.now = now});
  if (!ca) return fail(ca.error());
  auto fleet_key = Key::generate();
  if (!fleet_key) return fail(fleet_key.error());
  auto csr_pem = createCsr(*fleet_key, {.common_name = std::string(kFleetClientCommonName)});
  if (!csr_pem) return fail(csr_pem.error());
  auto csr = Csr::parse(*csr_pem);
  if (!csr) return fail(csr.error());
  auto fleet_cert = signCsr(*ca, *csr,
                            {.profile = Profile::kClient,
                             .common_name = std::string(kFleetClientCommonName),
                             .now = now});
  if (!fleet_cert) return fail(fleet_cert.error());

  // The key first: the CA exists once ca.key does, and a second init racing this one loses at
  // the link(2) of ca.key instead of overwriting anything.
  Cleanup cleanup;
  if (auto r = writeKeyFile(paths.ca_key, ca->key, Overwrite::kNo); !r) {
    if (r.error().code == Errc::kAlreadyExists) {
      return fail(Errc::kAlreadyExists,
                  "a CA already exists at " + paths.dir + " (" + paths.ca_key + ")");
    }
    return fail(r.error());
  }
  cleanup.add(paths.ca_key);
  if (auto r = writeCertificateFile(paths.ca_cert, ca->cert, kCertFileMode, Overwrite::kNo); !r)
    return fail(r.error());
  cleanup.add(paths.ca_cert);
  // A fleet.key/fleet.crt without a CA is a leftover of an older CA: the new CA replaces them.
  if (auto r = writeKeyFile(paths.fleet_key, *fleet_key, Overwrite::kYes); !r)
    return fail(r.error());
  cleanup.add(paths.fleet_key);
  if (auto r = writeCertificateFile(paths.fleet_cert, *fleet_cert, kCertFileMode, Overwrite::kYes);
      !r)
    return fail(r.error());
  cleanup.dismiss();
  return FleetPki{std::move(paths), std::move(*ca), std::move(*fleet_cert), std::move(*fleet_key)};
}

Result<std::string> fleetCaHash(const std::string& inventory_path) {
  const FleetPkiPaths paths = fleetPkiPaths(inventory_path);
  if (!exists(paths.ca_cert)) {
    return fail(Errc::kFailedPrecondition, "no fleet CA yet: run `etcd-fleet ca init` first (" +
                                               paths.ca_cert + " does not exist)");
  }
  auto cert = Certificate::load(paths.ca_cert);
  if (!cert) return fail(cert.error());
  return spkiSha256Hex(*cert);
}

Result<FleetPki> loadFleetPki(const std::string& inventory_path) {
  FleetPkiPaths paths = fleetPkiPaths(inventory_path);
  if (!exists(paths.ca_cert) && !exists(paths.ca_key)) {
    return fail(Errc::kNotFound, "no fleet CA at " + paths.dir +
                                     ": create one with `etcd-fleet ca init` (or pass --fleet "
                                     "FILE of the fleet whose CA you mean)");
  }
  auto ca = loadCa(paths.ca_cert, paths.ca_key);
  if (!ca) return fail(ca.error());
  auto cert = Certificate::load(paths.fleet_cert);
  if (!cert) return fail(cert.error());
  auto key = Key::load(paths.fleet_key);
  if (!key) return fail(key.error());
  if (X509_check_private_key(cert->get(), key->get()) != 1) {
    ERR_clear_error();
    return fail(Errc::kInvalidArgument, paths.fleet_key + " is not the key of " + paths.fleet_cert +
                                            ": restore the pair from a backup");
  }
  return FleetPki{std::move(paths), std::move(*ca), std::move(*cert), std::move(*key)};
}

Result<FleetPkiStatus> fleetPkiStatus(const std::string& inventory_path,
                                      std::chrono::system_clock::time_point now) {
  auto pki = loadFleetPki(inventory_path);
  if (!pki) return fail(pki.error());
  auto ca = inspectCertificate(pki->ca.cert);
  if (!ca) return fail(ca.error().context(pki->paths.ca_cert));
  auto fleet = inspectCertificate(pki->fleet_cert);
  if (!fleet) return fail(fleet.error().context(pki->paths.fleet_cert));
  FleetPkiStatus status{.paths = pki->paths, .ca = std::move(*ca), .fleet = std::move(*fleet)};
  if (auto r = verifyCertificate(pki->ca.cert, pki->fleet_cert, Purpose::kClient, now); !r) {
    status.fleet_problem = r.error();
  }
  return status;
}

std::string fleetCertProblem(const FleetPki& pki, std::chrono::system_clock::time_point now) {
  auto ok = verifyCertificate(pki.ca.cert, pki.fleet_cert, Purpose::kClient, now);
  return ok ? "" : pki.paths.fleet_cert + ": " + ok.error().message;
}

std::string fleetCertProblem(const FleetPkiPaths& paths,
                             std::chrono::system_clock::time_point now) {
  auto ca = Certificate::load(paths.ca_cert);
  auto fleet = Certificate::load(paths.fleet_cert);
  if (!ca || !fleet) return "";
  auto ok = verifyCertificate(*ca, *fleet, Purpose::kClient, now);
  return ok ? "" : paths.fleet_cert + ": " + ok.error().message;
}

}  // namespace etcdagent::tls
