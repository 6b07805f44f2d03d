#include "tls/csr.hpp"

#include <fcntl.h>
#include <openssl/pem.h>
#include <unistd.h>

#include <cerrno>

#include "common/file_util.hpp"
#include "tls/names.hpp"
#include "tls/openssl_error.hpp"

namespace etcdagent::tls {

Result<std::string> createCsr(const Key& key, const CsrRequest& request) {
  if (auto r = validateCommonName(request.common_name); !r) return fail(r.error());
  auto sans = canonicalNames(request.sans);
  if (!sans) return fail(sans.error());

  X509ReqPtr req(X509_REQ_new());
  if (!req) return fail(Errc::kInternal, "out of memory" + opensslReason());
  X509_NAME* subject = X509_REQ_get_subject_name(req.get());
  if (X509_REQ_set_version(req.get(), 0) != 1 ||
      X509_NAME_add_entry_by_NID(subject, NID_commonName, MBSTRING_UTF8,
                                 reinterpret_cast<const unsigned char*>(request.common_name.data()),
                                 static_cast<int>(request.common_name.size()), -1, 0) != 1 ||
      X509_REQ_set_pubkey(req.get(), key.get()) != 1) {
    return fail(Errc::kInternal, "cannot build the CSR" + opensslReason());
  }
  if (!sans->empty()) {
    auto gens = toGeneralNames(*sans);
    if (!gens) return fail(gens.error());
    ExtensionStackPtr exts(sk_X509_EXTENSION_new_null());
    X509ExtPtr ext(X509V3_EXT_i2d(NID_subject_alt_name, 0, gens->get()));
    if (!exts || !ext || sk_X509_EXTENSION_push(exts.get(), ext.get()) == 0) {
      return fail(Errc::kInternal, "cannot build the CSR's SAN extension" + opensslReason());
    }
    (void)ext.release();  // the stack owns it now
    if (X509_REQ_add_extensions(req.get(), exts.get()) != 1) {
      return fail(Errc::kInternal, "cannot add the CSR's SAN extension" + opensslReason());
    }
  }
  if (X509_REQ_sign(req.get(), key.get(), EVP_sha256()) <= 0) {
    return fail(Errc::kInternal, "cannot sign the CSR" + opensslReason());
  }
  BioPtr bio(BIO_new(BIO_s_mem()));
  if (!bio || PEM_write_bio_X509_REQ(bio.get(), req.get()) != 1) {
    return fail(Errc::kInternal, "cannot encode the CSR" + opensslReason());
  }
  char* data = nullptr;
  const long n = BIO_get_mem_data(bio.get(), &data);
  return std::string(data, static_cast<std::size_t>(n));
}

Result<Csr> Csr::parse(std::string_view pem) {
  if (pem.size() > kMaxCsrSize) {
    return fail(Errc::kInvalidArgument, "the CSR is " + std::to_string(pem.size()) +
                                            " bytes: more than the " + std::to_string(kMaxCsrSize) +
                                            " allowed");
  }
  BioPtr bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  if (!bio) return fail(Errc::kInternal, "out of memory" + opensslReason());
  X509ReqPtr req(PEM_read_bio_X509_REQ(bio.get(), nullptr, nullptr, nullptr));
  if (!req) {
    return fail(
        Errc::kInvalidArgument,
        "not a PEM CSR (expected \"-----BEGIN CERTIFICATE REQUEST-----\")" + opensslReason());
  }
  EVP_PKEY* key = X509_REQ_get0_pubkey(req.get());
  if (key == nullptr) return fail(Errc::kInvalidArgument, "the CSR carries no public key");
  if (X509_REQ_verify(req.get(), key) != 1) {
    return fail(Errc::kInvalidArgument,
                "the CSR's signature does not verify with the key it carries: it was altered "
                "or not made by the holder of that key" +
                    opensslReason());
  }
  Csr csr(std::move(req), std::string(pem));
  csr.common_name_ = commonNameOf(X509_REQ_get_subject_name(csr.req_.get()));
  if (auto r = validateCommonName(csr.common_name_); !r) {
    return fail(r.error().context("CSR subject"));
  }
  ExtensionStackPtr exts(X509_REQ_get_extensions(csr.req_.get()));
  if (exts) {
    const int n = sk_X509_EXTENSION_num(exts.get());
    for (int i = 0; i < n; ++i) {
      X509_EXTENSION* ext = sk_X509_EXTENSION_value(exts.get(), i);
      if (OBJ_obj2nid(X509_EXTENSION_get_object(ext)) != NID_subject_alt_name) continue;
      GeneralNamesPtr gens(static_cast<GENERAL_NAMES*>(X509V3_EXT_d2i(ext)));
      if (!gens) return fail(Errc::kInvalidArgument, "the CSR's subjectAltName is malformed");
      if (static_cast<std::size_t>(sk_GENERAL_NAME_num(gens.get())) > kMaxSans) {
        return fail(Errc::kInvalidArgument,
                    "the CSR asks for " + std::to_string(sk_GENERAL_NAME_num(gens.get())) +
                        " subject alternative names (" + std::to_string(kMaxSans) + " at most)");
      }
      auto names = fromGeneralNames(gens.get());
      if (!names) return fail(names.error().context("CSR"));
      auto canonical = canonicalNames(*names);
      if (!canonical) return fail(canonical.error().context("CSR"));
      for (auto& name : *canonical) csr.sans_.push_back(std::move(name));
    }
  }
  (void)takeOpenSslErrors();
  if (csr.sans_.size() > kMaxSans) {
    return fail(Errc::kInvalidArgument, "the CSR asks for " + std::to_string(csr.sans_.size()) +
                                            " subject alternative names (" +
                                            std::to_string(kMaxSans) + " at most)");
  }
  return csr;
}

Result<Csr> Csr::load(const std::string& path) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) {
    return fail(errno == ENOENT ? Errc::kNotFound : Errc::kIo,
                "cannot open " + path + ": " + errnoText(errno));
  }
  // One byte more than a CSR may have tells a file that is too large from one that fits.
  std::string text(kMaxCsrSize + 1, '\0');
  std::size_t got = 0;
  while (got < text.size()) {
    const ssize_t n = ::read(fd.get(), text.data() + got, text.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return fail(Errc::kIo, "cannot read " + path + ": " + errnoText(errno));
    if (n == 0) break;
    got += static_cast<std::size_t>(n);
  }
  if (got > kMaxCsrSize) {
    return fail(Errc::kInvalidArgument,
                path + " is larger than " + std::to_string(kMaxCsrSize) + " bytes: not a CSR");
  }
  text.resize(got);
  auto csr = parse(text);
  if (!csr) return fail(csr.error().context(path));
  return csr;
}

std::string Csr::publicKeyDer() const {
  return tls::publicKeyDer(publicKey());
}

}  // namespace etcdagent::tls
