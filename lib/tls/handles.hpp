#pragma once

// Owners of OpenSSL's C handles: every EVP_PKEY*, X509*, X509_REQ*, BIO*, ... that lib/tls makes
// or reads lives in one of these, so no early return leaks one.

#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/evp.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <memory>

namespace etcdagent::tls {

template <class T, void (*Free)(T*)>
struct OpenSslFree {
  void operator()(T* p) const { Free(p); }
};

using PKeyPtr = std::unique_ptr<EVP_PKEY, OpenSslFree<EVP_PKEY, EVP_PKEY_free>>;
using X509Ptr = std::unique_ptr<X509, OpenSslFree<X509, X509_free>>;
using X509ReqPtr = std::unique_ptr<X509_REQ, OpenSslFree<X509_REQ, X509_REQ_free>>;
using X509NamePtr = std::unique_ptr<X509_NAME, OpenSslFree<X509_NAME, X509_NAME_free>>;
using X509ExtPtr =
    std::unique_ptr<X509_EXTENSION, OpenSslFree<X509_EXTENSION, X509_EXTENSION_free>>;
using X509StorePtr = std::unique_ptr<X509_STORE, OpenSslFree<X509_STORE, X509_STORE_free>>;
using X509StoreCtxPtr =
    std::unique_ptr<X509_STORE_CTX, OpenSslFree<X509_STORE_CTX, X509_STORE_CTX_free>>;
using BioPtr = std::unique_ptr<BIO, OpenSslFree<BIO, BIO_free_all>>;
using BignumPtr = std::unique_ptr<BIGNUM, OpenSslFree<BIGNUM, BN_free>>;
using Asn1IntegerPtr = std::unique_ptr<ASN1_INTEGER, OpenSslFree<ASN1_INTEGER, ASN1_INTEGER_free>>;
using Asn1OctetStringPtr =
    std::unique_ptr<ASN1_OCTET_STRING, OpenSslFree<ASN1_OCTET_STRING, ASN1_OCTET_STRING_free>>;
using Asn1BitStringPtr =
    std::unique_ptr<ASN1_BIT_STRING, OpenSslFree<ASN1_BIT_STRING, ASN1_BIT_STRING_free>>;
using GeneralNamePtr = std::unique_ptr<GENERAL_NAME, OpenSslFree<GENERAL_NAME, GENERAL_NAME_free>>;
using GeneralNamesPtr =
    std::unique_ptr<GENERAL_NAMES, OpenSslFree<GENERAL_NAMES, GENERAL_NAMES_free>>;
using EkuPtr =
    std::unique_ptr<EXTENDED_KEY_USAGE, OpenSslFree<EXTENDED_KEY_USAGE, EXTENDED_KEY_USAGE_free>>;
using BasicConstraintsPtr =
    std::unique_ptr<BASIC_CONSTRAINTS, OpenSslFree<BASIC_CONSTRAINTS, BASIC_CONSTRAINTS_free>>;

// X509_REQ_get_extensions() hands over a stack that owns its extensions.
struct ExtensionStackFree {
  void operator()(STACK_OF(X509_EXTENSION) * s) const {
    sk_X509_EXTENSION_pop_free(s, X509_EXTENSION_free);
  }
};
using ExtensionStackPtr = std::unique_ptr<STACK_OF(X509_EXTENSION), ExtensionStackFree>;

// Memory that OpenSSL allocated (i2d_* output, ASN1_STRING_to_UTF8).
struct OpenSslMemFree {
  void operator()(unsigned char* p) const { OPENSSL_free(p); }
};
using OpenSslBytes = std::unique_ptr<unsigned char, OpenSslMemFree>;

}  // namespace etcdagent::tls
