#include "tls/client_certs.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <filesystem>
#include <utility>
#include <vector>

#include "common/duration.hpp"
#include "common/file_util.hpp"
#include "common/strings.hpp"
#include "tls/csr.hpp"
#include "tls/expiry.hpp"
#include "tls/file_write.hpp"
#include "tls/names.hpp"

namespace etcdagent::tls {
namespace {

// More than any CA of ours lives (10 years); a bound that keeps `now + validity` far from the
// clock's range.
constexpr long long kMaxValidityDays = 36500;

constexpr std::string_view kNameCharacters =
    "letters, digits, '.', '_', '-' and '@' (the name is the etcd user name and the base of "
    "NAME.key and NAME.crt)";

bool nameCharacter(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '.' || c == '_' || c == '-' ||
         c == '@';
}

std::string characterText(char c) {
  const auto u = static_cast<unsigned char>(c);
  if (u < 0x20 || u >= 0x7f) {
    constexpr std::string_view kHex = "0123456789abcdef";
    return std::string("the byte \\x") + kHex[u >> 4] + kHex[u & 0xf];
  }
  if (c == ' ') return "a space";
  return std::string("'") + c + "'";
}

bool pathExists(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0;
}

// The names of the keyUsage bits, in bit order (RFC 5280 4.2.1.3).
constexpr std::array<std::string_view, 9> kKeyUsageBits = {
    "digitalSignature", "nonRepudiation", "keyEncipherment", "dataEncipherment", "keyAgreement",
    "keyCertSign",      "cRLSign",        "encipherOnly",    "decipherOnly"};
// What a TLS client's key does: sign the handshake (EC, RSA) or encipher/agree on its secret.
constexpr std::array<int, 3> kClientKeyUsageBits = {0, 2, 4};

std::string objectName(const ASN1_OBJECT* obj) {
  const int nid = OBJ_obj2nid(obj);
  std::array<char, 128> oid{};
  OBJ_obj2txt(oid.data(), static_cast<int>(oid.size()), obj, 1);
  if (nid == NID_undef) return std::string(oid.data());
  return std::string(OBJ_nid2sn(nid)) + " (" + oid.data() + ")";
}

Result<void> checkSubject(const Csr& csr) {
  const X509_NAME* subject = X509_REQ_get_subject_name(csr.get());
  std::vector<std::string> others;
  int common_names = 0;
  for (int i = 0; i < X509_NAME_entry_count(subject); ++i) {
    const X509_NAME_ENTRY* entry = X509_NAME_get_entry(subject, i);
    const ASN1_OBJECT* obj = X509_NAME_ENTRY_get_object(entry);
    if (OBJ_obj2nid(obj) == NID_commonName) {
      ++common_names;
      continue;
    }
    const ASN1_STRING* value = X509_NAME_ENTRY_get_data(entry);
    const int nid = OBJ_obj2nid(obj);
    std::array<char, 128> oid{};
    OBJ_obj2txt(oid.data(), static_cast<int>(oid.size()), obj, 1);
    others.push_back(std::string(nid == NID_undef ? oid.data() : OBJ_nid2sn(nid)) + "=" +
                     quoteForMessage(std::string_view(
                         reinterpret_cast<const char*>(ASN1_STRING_get0_data(value)),
                         static_cast<std::size_t>(ASN1_STRING_length(value)))));
  }
  if (common_names > 1) {
    return fail(Errc::kInvalidArgument,
                "the CSR's subject has " + std::to_string(common_names) +
                    " common names (CN): a client certificate has one, the etcd user name");
  }
  if (!others.empty()) {
    return fail(Errc::kInvalidArgument,
                "the CSR's subject has " + join(others, ", ") +
                    " besides its CN: a client certificate of this fleet carries only the CN "
                    "(the etcd user name); make the CSR with -subj /CN=" +
                    csr.commonName());
  }
  return {};
}

Result<void> checkExtension(X509_EXTENSION* ext) {
  const ASN1_OBJECT* obj = X509_EXTENSION_get_object(ext);
  switch (OBJ_obj2nid(obj)) {
    case NID_subject_alt_name:        // Csr::parse read them: checked from csr.sans()
    case NID_subject_key_identifier:  // harmless: the certificate gets its own
      return {};
    case NID_basic_constraints: {
      BasicConstraintsPtr bc(static_cast<BASIC_CONSTRAINTS*>(X509V3_EXT_d2i(ext)));
      if (!bc) return fail(Errc::kInvalidArgument, "the CSR's basicConstraints is malformed");
      if (bc->ca != 0) {
        return fail(Errc::kInvalidArgument,
                    "the CSR asks to be a CA (basicConstraints CA:TRUE): a client certificate "
                    "never is; make the CSR without that extension");
      }
      return {};
    }
    case NID_key_usage: {
      Asn1BitStringPtr bits(static_cast<ASN1_BIT_STRING*>(X509V3_EXT_d2i(ext)));
      if (!bits) return fail(Errc::kInvalidArgument, "the CSR's keyUsage is malformed");
      std::vector<std::string> refused;
      for (int bit = 0; bit < static_cast<int>(kKeyUsageBits.size()); ++bit) {
        if (ASN1_BIT_STRING_get_bit(bits.get(), bit) != 0 &&
            std::find(kClientKeyUsageBits.begin(), kClientKeyUsageBits.end(), bit) ==
                kClientKeyUsageBits.end()) {
          refused.emplace_back(kKeyUsageBits[static_cast<std::size_t>(bit)]);
        }
      }
      if (!refused.empty()) {
        return fail(Errc::kInvalidArgument,
                    "the CSR asks for the key usage " + join(refused, ", ") +
                        ": a client certificate has digitalSignature (and keyEncipherment for "
                        "RSA keys) only; make the CSR without it");
      }
      return {};
    }
    case NID_ext_key_usage: {
      EkuPtr eku(static_cast<EXTENDED_KEY_USAGE*>(X509V3_EXT_d2i(ext)));
      if (!eku) return fail(Errc::kInvalidArgument, "the CSR's extendedKeyUsage is malformed");
      std::vector<std::string> refused;
      for (int i = 0; i < sk_ASN1_OBJECT_num(eku.get()); ++i) {
        const ASN1_OBJECT* usage = sk_ASN1_OBJECT_value(eku.get(), i);
        if (OBJ_obj2nid(usage) != NID_client_auth) refused.push_back(objectName(usage));
      }
      if (!refused.empty()) {
        return fail(Errc::kInvalidArgument,
                    "the CSR asks for the extended key usage " + join(refused, ", ") +
                        ": a client certificate has clientAuth only; make the CSR without it");
      }
      return {};
    }
    default:
      return fail(Errc::kInvalidArgument,
                  "the CSR asks for the extension " + objectName(obj) +
                      ", which a client certificate of this fleet does not carry (it has CN, "
                      "clientAuth and nothing else); make the CSR without it");
  }
}

bool cutToCa(const Ca& ca, const ClientCertOptions& options) {
  auto ca_end = notAfter(ca.cert);
  return ca_end && options.now + options.validity > *ca_end;
}

}  // namespace

Result<void> validateClientName(std::string_view name) {
  if (name.empty()) {
    return fail(Errc::kInvalidArgument,
                "a client name is required: the certificate's CN, and the etcd user name once "
                "auth is on");
  }
  if (name.size() > kMaxCommonNameLength) {
    return fail(Errc::kInvalidArgument,
                "the name " + quoteForMessage(name) + " is " + std::to_string(name.size()) +
                    " characters long: at most " + std::to_string(kMaxCommonNameLength) +
                    " (X.509's limit for a common name)");
  }
  for (std::size_t i = 0; i < name.size(); ++i) {
    if (nameCharacter(name[i])) continue;
    std::string why;
    if (name[i] == ':') {
      why = "etcdctl's `user add NAME:PASSWORD` would split the name there; ";
    } else if (name[i] == '/') {
      why = "NAME.key and NAME.crt are files in one directory; ";
    }
    return fail(Errc::kInvalidArgument,
                "the name " + quoteForMessage(name) + " has " + characterText(name[i]) +
                    " at position " + std::to_string(i + 1) + ": " + why +
                    "a client name is made of " + std::string(kNameCharacters));
  }
  if (name.front() == '.' || name.front() == '-') {
    return fail(Errc::kInvalidArgument, "the name " + quoteForMessage(name) + " starts with '" +
                                            name.front() + "': " +
                                            (name.front() == '.' ? "NAME.key would be a hidden file"
                                                                 : "it would read as an option") +
                                            "; start it with a letter or digit");
  }
  if (name == kFleetClientCommonName) {
    return fail(Errc::kInvalidArgument,
                "\"" + std::string(kFleetClientCommonName) +
                    "\" is etcd-fleet's own identity (pki/fleet.crt), the only certificate "
                    "agents let change their members: give the application a name of its own");
  }
  return {};
}

Result<std::chrono::seconds> parseCertificateValidity(std::string_view text) {
  const auto invalid = [&](const std::string& why) {
    return fail(Errc::kInvalidArgument, "invalid validity " + quoteForMessage(text) + ": " + why);
  };
  if (text.size() > 1 && text.back() == 'd') {
    const std::string_view digits = text.substr(0, text.size() - 1);
    if (std::all_of(digits.begin(), digits.end(),
                    [](char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; })) {
      if (digits.size() > 6 || std::stoll(std::string(digits)) > kMaxValidityDays) {
        return invalid("at most " + std::to_string(kMaxValidityDays) + "d");
      }
      const long long days = std::stoll(std::string(digits));
      if (days == 0) return invalid("it must be more than 0");
      return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::days(days));
    }
  }
  auto d = parseDuration(text);
  if (!d) return invalid("give whole days (90d) or a duration (720h, 1h30m)");
  const auto seconds = std::chrono::duration_cast<std::chrono::seconds>(*d);
  if (seconds <= std::chrono::seconds(0)) return invalid("it must be at least 1s");
  return seconds;
}

ClientCertFiles clientCertFiles(const std::string& dir, std::string_view name) {
  const std::string base = dir.empty() ? "." : dir;
  const std::string stem = base + (base.ends_with('/') ? "" : "/") + std::string(name);
  return {.key = stem + ".key",
          .cert = stem + ".crt",
          .ca = base + (base.ends_with('/') ? "" : "/") + "ca.crt"};
}

Result<IssuedClientCert> issueClientCertificate(const FleetPki& pki, const std::string& name,
                                                const std::string& dir,
                                                const ClientCertOptions& options) {
  if (auto valid = validateClientName(name); !valid) return fail(valid.error());
  IssuedClientCert out{.files = clientCertFiles(dir, name)};
  const ClientCertFiles& files = out.files;

  // Every file that is in the way, named at once, before anything is made.
  std::vector<std::string> in_the_way;
  for (const auto* path : {&files.key, &files.cert}) {
    if (pathExists(*path)) in_the_way.push_back(*path);
  }
  if (pathExists(files.ca)) {
    // The same CA certificate is what this call would write: several applications' certificates
    // share one directory and its ca.crt.
    auto there = Certificate::load(files.ca);
    if (there && there->der() == pki.ca.cert.der()) {
      out.ca_was_there = true;
    } else {
      in_the_way.push_back(files.ca + " (not this fleet's CA certificate)");
    }
  }
  if (!in_the_way.empty()) {
    return fail(Errc::kAlreadyExists,
                "refusing to overwrite " + join(in_the_way, ", ") +
                    ": remove them to issue a new certificate for " + name +
                    " there, or give --out another directory (for a key the application holds "
                    "already, sign its CSR: etcd-fleet certs sign FILE.csr)");
  }
  if (auto made = createPrivateDirectories(dir.empty() ? "." : dir); !made) {
    return fail(made.error());
  }

  auto key = Key::generate();
  if (!key) return fail(key.error());
  auto csr_pem = createCsr(*key, {.common_name = name});
  if (!csr_pem) return fail(csr_pem.error());
  auto csr = Csr::parse(*csr_pem);
  if (!csr) return fail(csr.error());
  auto signed_cert = signClientCsr(pki, *csr, options);
  if (!signed_cert) return fail(signed_cert.error());
  out.cert = std::move(signed_cert->info);
  out.cut_to_ca = signed_cert->cut_to_ca;

  // The key first: of two runs racing for one name, the second loses at its link(2).
  RemoveOnFailure cleanup;
  if (auto r = writeKeyFile(files.key, *key, Overwrite::kNo); !r) return fail(r.error());
  cleanup.add(files.key);
  if (auto r = writeCertificateFile(files.cert, signed_cert->cert, kCertFileMode, Overwrite::kNo);
      !r) {
    return fail(r.error());
  }
  cleanup.add(files.cert);
  if (!out.ca_was_there) {
    if (auto r = writeCertificateFile(files.ca, pki.ca.cert, kCertFileMode, Overwrite::kNo); !r) {
      return fail(r.error());
    }
  }
  cleanup.dismiss();
  return out;
}

Result<void> checkClientCsr(const Csr& csr) {
  if (auto valid = validateClientName(csr.commonName()); !valid) {
    return fail(valid.error().context("the CSR's common name"));
  }
  if (auto subject = checkSubject(csr); !subject) return subject;
  if (!csr.sans().empty()) {
    return fail(Errc::kInvalidArgument,
                "the CSR asks for the subject alternative names " + join(csr.sans(), ", ") +
                    ": a client certificate carries none (its identity is its CN, " +
                    csr.commonName() + "); make the CSR without them");
  }
  ExtensionStackPtr exts(X509_REQ_get_extensions(csr.get()));
  if (exts) {
    for (int i = 0; i < sk_X509_EXTENSION_num(exts.get()); ++i) {
      if (auto ok = checkExtension(sk_X509_EXTENSION_value(exts.get(), i)); !ok) return ok;
    }
  }
  return {};
}

Result<SignedClientCert> signClientCsr(const FleetPki& pki, const Csr& csr,
                                       const ClientCertOptions& options) {
  if (auto ok = checkClientCsr(csr); !ok) return fail(ok.error());
  auto cert = signCsr(pki.ca, csr,
                      {.profile = Profile::kClient,
                       .common_name = csr.commonName(),
                       .validity = options.validity,
                       .now = options.now});
  if (!cert) return fail(cert.error());
  auto info = inspectCertificate(*cert);
  if (!info) return fail(info.error());
  return SignedClientCert{
      .cert = std::move(*cert), .info = std::move(*info), .cut_to_ca = cutToCa(pki.ca, options)};
}

std::string certificatePathFor(const std::string& csr_path) {
  const std::filesystem::path path(csr_path);
  if (path.extension() == ".csr") return std::filesystem::path(path).replace_extension(".crt");
  return csr_path + ".crt";
}

Result<void> certificateTargetFree(const std::string& path) {
  if (!pathExists(path)) return {};
  return fail(Errc::kAlreadyExists,
              "refusing to overwrite " + path + ": remove it, or give --out another file");
}

Result<void> writeClientCertificate(const std::string& path, const Certificate& cert) {
  if (auto free = certificateTargetFree(path); !free) return free;
  return writeCertificateFile(path, cert, kCertFileMode, Overwrite::kNo);
}

}  // namespace etcdagent::tls
