#pragma once

// Client certificates for applications under the fleet CA: `etcd-fleet certs issue NAME` (the key
// is made here, on the operator's machine) and `etcd-fleet certs sign FILE.csr` (the key stays
// with the application). A client certificate says who the application is and nothing else: CN =
// its name, which is its etcd user name once auth is on, EKU clientAuth, no SANs, never a CA.
// What a name may be, what a CSR may ask for and which files are written are decided here; the
// commands only print (docs/security.md, "Certificates for applications").

#include <chrono>
#include <string>
#include <string_view>

#include "common/error.hpp"
#include "tls/fleet_pki.hpp"
#include "tls/inspect.hpp"
#include "tls/sign.hpp"

namespace etcdagent::tls {

// A client name: 1 to kMaxCommonNameLength characters of letters, digits, '.', '_', '-' and '@',
// not starting with '.' or '-'. It is the certificate's CN (the etcd user name when auth is on:
// etcdctl's `user add NAME:PASSWORD` splits at ':'), and the base of NAME.key and NAME.crt (no
// '/', no hidden file, no option). kFleetClientCommonName is refused: agents let only that name
// change their members. kInvalidArgument saying which rule the name breaks.
Result<void> validateClientName(std::string_view name);

// --validity: whole days ("90d") or a Go duration ("720h", "1h30m"), more than 0.
Result<std::chrono::seconds> parseCertificateValidity(std::string_view text);

struct ClientCertOptions {
  std::chrono::seconds validity = kLeafValidity;  // cut to the CA's own not-after
  TimePoint now = std::chrono::system_clock::now();
};

// What `certs issue NAME --out DIR` writes: DIR/NAME.key, DIR/NAME.crt, DIR/ca.crt.
struct ClientCertFiles {
  std::string key;
  std::string cert;
  std::string ca;
};
ClientCertFiles clientCertFiles(const std::string& dir, std::string_view name);

struct IssuedClientCert {
  ClientCertFiles files;
  CertificateInfo cert;
  bool ca_was_there = false;  // DIR/ca.crt held this fleet's CA already and was kept
  bool cut_to_ca = false;     // the validity asked for would outlive the CA: it ends with the CA
};

// A fresh EC P-256 key and a client certificate for it (CN `name`), signed by the fleet CA, written
// to `dir` (created 0700 when missing): NAME.key (0600), NAME.crt and ca.crt (0644). Nothing is
// replaced: a NAME.key or NAME.crt that exists, or a ca.crt of another CA, is kAlreadyExists
// naming each file and what to do, before anything is written; on any failure the files this call
// wrote are removed.
Result<IssuedClientCert> issueClientCertificate(const FleetPki& pki, const std::string& name,
                                                const std::string& dir,
                                                const ClientCertOptions& options = {});

// The refusals of a CSR for a client certificate: a CN that validateClientName refuses, a
// subject with more than the CN ("O=..."), subject alternative names, basicConstraints CA:TRUE,
// a keyUsage beyond digitalSignature, keyEncipherment and keyAgreement, an extendedKeyUsage other
// than clientAuth, or any other extension (a certificate would silently lack it). kInvalidArgument
// naming what the CSR asks for.
Result<void> checkClientCsr(const Csr& csr);

struct SignedClientCert {
  Certificate cert;
  CertificateInfo info;
  bool cut_to_ca = false;
};

// checkClientCsr, then signCsr under Profile::kClient with the CSR's CN.
Result<SignedClientCert> signClientCsr(const FleetPki& pki, const Csr& csr,
                                       const ClientCertOptions& options = {});

// Where `certs sign FILE.csr` writes by default: FILE.crt (FILE without ".csr", else FILE +
// ".crt").
std::string certificatePathFor(const std::string& csr_path);

// kAlreadyExists saying how to proceed when something (a file, a link, a directory) is at `path`:
// checked before a CSR is signed, so that a refusal leaves nothing to undo.
Result<void> certificateTargetFree(const std::string& path);

// Writes a signed client certificate (0644) to `path`, never replacing a file
// (certificateTargetFree's error).
Result<void> writeClientCertificate(const std::string& path, const Certificate& cert);

}  // namespace etcdagent::tls
