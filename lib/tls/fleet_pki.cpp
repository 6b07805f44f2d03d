#include "tls/fleet_pki.hpp"

#include <openssl/err.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>

#include "common/file_switch.hpp"
#include "common/file_util.hpp"
#include "tls/csr.hpp"
#include "tls/file_write.hpp"
#include "tls/sign.hpp"

namespace etcdagent::tls {
namespace {

bool exists(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0;
}

Result<void> privateDirectory(const std::string& dir) {
  if (auto r = createPrivateDirectories(dir); !r) return r;
  // An existing directory may be looser; the CA key must not sit in a world-readable one.
  if (::chmod(dir.c_str(), kPkiDirMode) != 0) {
    return fail(Errc::kIo, "cannot make " + dir + " private (chmod 0700): " + errnoText(errno));
  }
  return {};
}

struct ClientIdentity {
  Key key;
  Certificate cert;
};

// etcd-fleet's client identity under `ca`: a fresh key, CN etcd-fleet, clientAuth.
Result<ClientIdentity> issueFleetClientIdentity(const Ca& ca,
                                                std::chrono::system_clock::time_point now) {
  auto key = Key::generate();
  if (!key) return fail(key.error());
  auto csr_pem = createCsr(*key, {.common_name = std::string(kFleetClientCommonName)});
  if (!csr_pem) return fail(csr_pem.error());
  auto csr = Csr::parse(*csr_pem);
  if (!csr) return fail(csr.error());
  auto cert = signCsr(ca, *csr,
                      {.profile = Profile::kClient,
                       .common_name = std::string(kFleetClientCommonName),
                       .now = now});
  if (!cert) return fail(cert.error());
  return ClientIdentity{std::move(*key), std::move(*cert)};
}

std::string pemOf(const std::vector<Certificate>& certs) {
  std::string out;
  for (const auto& c : certs) out += c.pem();
  return out;
}

std::string fileName(const std::string& path) {
  return std::filesystem::path(path).filename().string();
}

// ca.pending/ and ca.switching/ in the pki directory: the next signing CA.
FileSwitch caSwitch(const FleetPkiPaths& paths) {
  return {paths.dir, "ca"};
}

// fleet-cert.pending/ and fleet-cert.switching/ in the pki directory.
FileSwitch fleetCertSwitch(const FleetPkiPaths& paths) {
  return {paths.dir, "fleet-cert"};
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
          .tokens = dir + "/tokens.json",
          .root_password = dir + "/root.password"};
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
  auto fleet = issueFleetClientIdentity(*ca, now);
  if (!fleet) return fail(fleet.error());

  // The key first: the CA exists once ca.key does, and a second init racing this one loses at
  // the link(2) of ca.key instead of overwriting anything.
  RemoveOnFailure cleanup;
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
  if (auto r = writeKeyFile(paths.fleet_key, fleet->key, Overwrite::kYes); !r)
    return fail(r.error());
  cleanup.add(paths.fleet_key);
  if (auto r = writeCertificateFile(paths.fleet_cert, fleet->cert, kCertFileMode, Overwrite::kYes);
      !r)
    return fail(r.error());
  cleanup.dismiss();
  std::vector<Certificate> trust{ca->cert};
  return FleetPki{std::move(paths), std::move(*ca), std::move(fleet->cert), std::move(fleet->key),
                  std::move(trust)};
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
  // The pairs a renewal or a CA switch committed before it was interrupted: in place before
  // they are read.
  if (auto finished = fleetCertSwitch(paths).finish(); !finished) return fail(finished.error());
  if (auto finished = caSwitch(paths).finish(); !finished) return fail(finished.error());
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
  auto text = readFile(paths.ca_cert);
  if (!text) return fail(text.error());
  auto trust = certificatesFromPem(*text);
  if (!trust) return fail(trust.error().context(paths.ca_cert));
  return FleetPki{std::move(paths), std::move(*ca), std::move(*cert), std::move(*key),
                  std::move(*trust)};
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

std::string fleetCertRenewalReason(const FleetPki& pki, std::chrono::system_clock::time_point now) {
  if (auto ok = verifyCertificate(pki.ca.cert, pki.fleet_cert, Purpose::kClient, now); !ok) {
    return ok.error().message;
  }
  auto info = inspectCertificate(pki.fleet_cert);
  if (!info) return info.error().message;
  if (info->not_after - now < kFleetCertRenewBefore) {
    return pki.paths.fleet_cert + " expires on " + formatTime(info->not_after) + ", within 30 days";
  }
  return "";
}

Result<FleetPki> renewFleetClientCertificate(const FleetPki& pki,
                                             std::chrono::system_clock::time_point now) {
  auto fresh = issueFleetClientIdentity(pki.ca, now);
  if (!fresh) return fail(fresh.error());
  const FileSwitch files = fleetCertSwitch(pki.paths);
  if (auto r = files.freshStage(); !r) return fail(r.error());
  if (auto r = writeKeyFile(files.staged(fileName(pki.paths.fleet_key)), fresh->key); !r) {
    return fail(r.error());
  }
  if (auto r = writeCertificateFile(files.staged(fileName(pki.paths.fleet_cert)), fresh->cert,
                                    kCertFileMode, Overwrite::kNo);
      !r) {
    return fail(r.error());
  }
  if (auto r = files.commit(); !r) return fail(r.error());
  return FleetPki{pki.paths, pki.ca, std::move(fresh->cert), std::move(fresh->key), pki.trust};
}

std::string FleetPki::trustPem() const {
  return pemOf(trust);
}

Result<Certificate> beginCaRotation(const FleetPki& pki,
                                    std::chrono::system_clock::time_point now) {
  auto next = createCa({.now = now});
  if (!next) return fail(next.error());
  const FileSwitch files = caSwitch(pki.paths);
  if (auto r = files.freshStage(); !r) return fail(r.error());
  if (auto r = writeKeyFile(files.staged(fileName(pki.paths.ca_key)), next->key); !r) {
    return fail(r.error());
  }
  if (auto r = writeSecureFile(files.staged(fileName(pki.paths.ca_cert)),
                               pemOf({next->cert, pki.ca.cert}), kCertFileMode, Overwrite::kNo,
                               "CA certificate");
      !r) {
    return fail(r.error());
  }
  if (auto r = writeFileAtomic(pki.paths.ca_cert, pemOf({pki.ca.cert, next->cert}), kCertFileMode);
      !r) {
    return fail(r.error());
  }
  return next->cert;
}

Result<void> switchToNextCa(const FleetPkiPaths& paths) {
  const FileSwitch files = caSwitch(paths);
  if (!files.hasStage()) {
    return fail(Errc::kFailedPrecondition,
                "no next CA is staged in " + files.stageDir() +
                    ": the CA rotation lost its new CA; if no rotation is in progress, remove " +
                    paths.dir + "/rotation.json and start again with etcd-fleet ca rotate");
  }
  return files.commit();
}

Result<void> dropOtherCas(const FleetPki& pki) {
  return writeFileAtomic(pki.paths.ca_cert, pki.ca.cert.pem(), kCertFileMode);
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
