// The main() of a fuzz entry point outside the fuzz build: runs LLVMFuzzerTestOneInput once on
// every file under the directories (or files) given, as libFuzzer does on a corpus, so the kept
// corpus is a regression test of the tests' build. Exit 0 when every input ran; a crash is the
// test's failure, as it would be the fuzzer's.

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <system_error>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);

namespace {

bool readFile(const std::filesystem::path& p, std::string& out) {
  std::ifstream in(p, std::ios::binary);
  if (!in) return false;
  out.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  return !in.bad();
}

std::vector<std::filesystem::path> inputsUnder(const std::filesystem::path& p,
                                               std::error_code& ec) {
  std::vector<std::filesystem::path> out;
  if (!std::filesystem::is_directory(p, ec)) {
    if (!ec) out.push_back(p);
    return out;
  }
  for (const auto& e : std::filesystem::recursive_directory_iterator(p, ec)) {
    if (e.is_regular_file()) out.push_back(e.path());
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s CORPUS_DIR_OR_FILE...\n", argv[0]);
    return 2;
  }
  std::size_t ran = 0;
  for (int i = 1; i < argc; ++i) {
    std::error_code ec;
    auto inputs = inputsUnder(argv[i], ec);
    if (ec || inputs.empty()) {
      std::fprintf(stderr, "%s: no inputs (%s)\n", argv[i],
                   ec ? ec.message().c_str() : "empty corpus");
      return 1;
    }
    for (const auto& p : inputs) {
      std::string bytes;
      if (!readFile(p, bytes)) {
        std::fprintf(stderr, "%s: cannot read\n", p.c_str());
        return 1;
      }
      std::fprintf(stderr, "running %s (%zu bytes)\n", p.c_str(), bytes.size());
      LLVMFuzzerTestOneInput(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size());
      ++ran;
    }
  }
  std::fprintf(stderr, "%zu inputs ran\n", ran);
  return 0;
}
