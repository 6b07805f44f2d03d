#include "tls/names.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <algorithm>
#include <array>

#include "tls/openssl_error.hpp"

namespace etcdagent::tls {
namespace {

bool isLabelChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-';
}

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), [](char c) {
    return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
  });
  return out;
}

// For messages: a name from the network may hold anything.
std::string shown(std::string_view name) {
  std::string out;
  for (char c : name.substr(0, 80)) {
    out += (c >= 0x20 && c < 0x7f) ? c : '?';
  }
  if (name.size() > 80) out += "...";
  return "\"" + out + "\"";
}

Result<std::string> canonicalIp(std::string_view name) {
  const std::string s(name);
  std::array<char, INET6_ADDRSTRLEN> text{};
  unsigned char v4[sizeof(in_addr)];
  unsigned char v6[sizeof(in6_addr)];
  if (::inet_pton(AF_INET, s.c_str(), v4) == 1) {
    ::inet_ntop(AF_INET, v4, text.data(), text.size());
    return std::string(text.data());
  }
  if (::inet_pton(AF_INET6, s.c_str(), v6) == 1) {
    ::inet_ntop(AF_INET6, v6, text.data(), text.size());
    return std::string(text.data());
  }
  return fail(Errc::kInvalidArgument, "not an IP address: " + shown(name));
}

}  // namespace

bool isIpAddress(std::string_view name) {
  return canonicalIp(name).has_value();
}

Result<std::string> canonicalName(std::string_view name) {
  if (name.empty()) return fail(Errc::kInvalidArgument, "an empty name cannot be a SAN");
  if (name.size() > kMaxNameLength) {
    return fail(Errc::kInvalidArgument, "the name " + shown(name) + " is " +
                                            std::to_string(name.size()) + " characters long (" +
                                            std::to_string(kMaxNameLength) + " at most)");
  }
  if (auto ip = canonicalIp(name)) return ip;
  std::string dns = lower(name);
  if (dns.back() == '.') dns.pop_back();  // the root's dot: "db1.example.org." is the same name
  std::size_t start = 0;
  while (start <= dns.size()) {
    const std::size_t dot = std::min(dns.find('.', start), dns.size());
    const std::string_view label(dns.data() + start, dot - start);
    const bool ok = !label.empty() && label.size() <= 63 && label.front() != '-' &&
                    label.back() != '-' && std::all_of(label.begin(), label.end(), isLabelChar);
    if (!ok) {
      return fail(Errc::kInvalidArgument,
                  "the name " + shown(name) +
                      " is neither an IP address nor a DNS name (labels of letters, digits and "
                      "'-', 1..63 characters, no wildcards)");
    }
    start = dot + 1;
  }
  return dns;
}

Result<std::vector<std::string>> canonicalNames(const std::vector<std::string>& names) {
  std::vector<std::string> out;
  for (const auto& n : names) {
    auto c = canonicalName(n);
    if (!c) return fail(c.error());
    if (std::find(out.begin(), out.end(), *c) == out.end()) out.push_back(std::move(*c));
  }
  if (out.size() > kMaxSans) {
    return fail(Errc::kInvalidArgument, std::to_string(out.size()) +
                                            " subject alternative names (" +
                                            std::to_string(kMaxSans) + " at most)");
  }
  return out;
}

Result<void> validateCommonName(std::string_view cn) {
  if (cn.empty()) return fail(Errc::kInvalidArgument, "the common name (CN) is empty");
  if (cn.size() > kMaxCommonNameLength) {
    return fail(Errc::kInvalidArgument, "the common name " + shown(cn) + " is " +
                                            std::to_string(cn.size()) + " bytes long (" +
                                            std::to_string(kMaxCommonNameLength) + " at most)");
  }
  if (std::any_of(cn.begin(), cn.end(),
                  [](char c) { return static_cast<unsigned char>(c) < 0x20 || c == 0x7f; })) {
    return fail(Errc::kInvalidArgument,
                "the common name " + shown(cn) + " holds control characters");
  }
  return {};
}

Result<GeneralNamesPtr> toGeneralNames(const std::vector<std::string>& names) {
  GeneralNamesPtr gens(GENERAL_NAMES_new());
  if (!gens) return fail(Errc::kInternal, "out of memory" + opensslReason());
  for (const auto& name : names) {
    GeneralNamePtr gen(GENERAL_NAME_new());
    if (!gen) return fail(Errc::kInternal, "out of memory" + opensslReason());
    if (isIpAddress(name)) {
      Asn1OctetStringPtr ip(a2i_IPADDRESS(name.c_str()));
      if (!ip) return fail(Errc::kInvalidArgument, "not an IP address: " + name + opensslReason());
      GENERAL_NAME_set0_value(gen.get(), GEN_IPADD, ip.release());
    } else {
      ASN1_IA5STRING* dns = ASN1_IA5STRING_new();
      if (!dns || ASN1_STRING_set(dns, name.data(), static_cast<int>(name.size())) != 1) {
        ASN1_IA5STRING_free(dns);
        return fail(Errc::kInternal, "out of memory" + opensslReason());
      }
      GENERAL_NAME_set0_value(gen.get(), GEN_DNS, dns);
    }
    if (sk_GENERAL_NAME_push(gens.get(), gen.get()) == 0) {
      return fail(Errc::kInternal, "out of memory" + opensslReason());
    }
    (void)gen.release();  // the stack owns it now
  }
  return gens;
}

Result<std::vector<std::string>> fromGeneralNames(const GENERAL_NAMES* names,
                                                  OtherSanKinds others) {
  std::vector<std::string> out;
  const int n = sk_GENERAL_NAME_num(names);
  for (int i = 0; i < n; ++i) {
    const GENERAL_NAME* gen = sk_GENERAL_NAME_value(names, i);
    int type = 0;
    const auto* value = static_cast<const ASN1_STRING*>(GENERAL_NAME_get0_value(gen, &type));
    if (type == GEN_DNS) {
      out.emplace_back(reinterpret_cast<const char*>(ASN1_STRING_get0_data(value)),
                       static_cast<std::size_t>(ASN1_STRING_length(value)));
    } else if (type == GEN_IPADD) {
      const int len = ASN1_STRING_length(value);
      const unsigned char* bytes = ASN1_STRING_get0_data(value);
      std::array<char, INET6_ADDRSTRLEN> text{};
      const int family = len == 4 ? AF_INET : len == 16 ? AF_INET6 : 0;
      if (family == 0 || ::inet_ntop(family, bytes, text.data(), text.size()) == nullptr) {
        return fail(Errc::kInvalidArgument,
                    "an IP address SAN of " + std::to_string(len) + " bytes (4 or 16 expected)");
      }
      out.emplace_back(text.data());
    } else if (others == OtherSanKinds::kRefuse) {
      static constexpr std::array<const char*, 9> kKinds = {
          "otherName",      "e-mail", "DNS", "X.400 address", "directory name",
          "EDI party name", "URI",    "IP",  "registered ID"};
      const std::string kind = type >= 0 && type < static_cast<int>(kKinds.size())
                                   ? kKinds[static_cast<std::size_t>(type)]
                                   : "unknown";
      return fail(Errc::kInvalidArgument, "a subject alternative name of kind " + kind +
                                              " (only IP addresses and DNS names are allowed)");
    }
  }
  return out;
}

std::string commonNameOf(const X509_NAME* name) {
  if (name == nullptr) return {};
  const int i = X509_NAME_get_index_by_NID(name, NID_commonName, -1);
  if (i < 0) return {};
  const ASN1_STRING* data = X509_NAME_ENTRY_get_data(X509_NAME_get_entry(name, i));
  unsigned char* utf8 = nullptr;
  const int n = ASN1_STRING_to_UTF8(&utf8, data);
  if (n < 0) {
    (void)takeOpenSslErrors();
    return {};
  }
  OpenSslBytes owned(utf8);
  return {reinterpret_cast<const char*>(utf8), static_cast<std::size_t>(n)};
}

std::string nameText(const X509_NAME* name) {
  BioPtr bio(BIO_new(BIO_s_mem()));
  if (!bio || X509_NAME_print_ex(bio.get(), name, 0, XN_FLAG_RFC2253) < 0) {
    (void)takeOpenSslErrors();
    return {};
  }
  char* data = nullptr;
  const long n = BIO_get_mem_data(bio.get(), &data);
  return {data, static_cast<std::size_t>(n)};
}

}  // namespace etcdagent::tls
