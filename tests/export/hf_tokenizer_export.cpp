// hf_tokenizer_export MODEL OUT: the tokenizer files ppu-export writes for a SentencePiece model
// (export/hf_tokenizer.h), without a checkpoint, so hf_tokenizer_parity_test.py can export
// models trained with any settings. Exit 0 written; 1 refused or unreadable (the reason on stderr).
#include <filesystem>
#include <fstream>
#include <iostream>

#include "export/hf_tokenizer.h"

namespace {

void write(const std::filesystem::path& path, const nlohmann::json& value) {
  std::ofstream out(path);
  out << value.dump(2, ' ', false) << "\n";
  if (!out) throw std::runtime_error(path.string() + ": cannot write");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::cerr << "usage: hf_tokenizer_export MODEL OUT\n";
    return 2;
  }
  try {
    const std::filesystem::path out = argv[2];
    const auto files = ppu::hf_tokenizer_files(argv[1], 1024);
    std::filesystem::create_directories(out);
    std::filesystem::copy_file(argv[1], out / "tokenizer.model", std::filesystem::copy_options::overwrite_existing);
    write(out / "tokenizer.json", files.tokenizer);
    write(out / "tokenizer_config.json", files.tokenizer_config);
    write(out / "special_tokens_map.json", files.special_tokens_map);
  } catch (const std::exception& e) {
    std::cerr << "hf_tokenizer_export: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
