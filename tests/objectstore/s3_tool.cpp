// ppu-s3-tool: what the process tests do to an S3 server beside the job (tests/objectstore/
// seaweed.py): make the bucket, list, read, overwrite (a corrupt object) and delete (a missing
// manifest) objects, through the same client the runtime uses. Test-only.
//
// usage: ppu-s3-tool BUCKET mb | ls PREFIX [PAGE_SIZE] | get KEY | put KEY (body on stdin) | rm KEY
// Endpoint, region and credentials from the environment (S3Settings, S3Credentials). Exit 0 on
// success, 1 on a failed request (`get` of a missing key: "no such key" on stderr), 2 on bad usage.
#include <iostream>
#include <iterator>
#include <string>

#include "objstore/s3_client.h"

int main(int argc, char** argv) {
  if (argc < 3) {
    std::cerr << "usage: ppu-s3-tool BUCKET mb | ls PREFIX | get KEY | put KEY | rm KEY\n";
    return 2;
  }
  const std::string bucket = argv[1], cmd = argv[2], arg = argc > 3 ? argv[3] : "";
  try {
    ppu::S3Client s3(ppu::S3Settings::from_environment(), ppu::S3Credentials::from_environment(), bucket);
    if (cmd == "mb") {
      s3.create_bucket();
    } else if (cmd == "ls") {
      const int page = argc > 4 ? std::stoi(argv[4]) : 1000;
      for (const auto& o : s3.list(arg, page)) std::cout << o.key << ' ' << o.size << '\n';
    } else if (cmd == "get") {
      const auto bytes = s3.get(arg);
      if (!bytes) {
        std::cerr << "ppu-s3-tool: no such key " << arg << '\n';
        return 1;
      }
      std::cout << *bytes;
    } else if (cmd == "put") {
      const std::string body((std::istreambuf_iterator<char>(std::cin)), std::istreambuf_iterator<char>());
      s3.put(arg, body);
    } else if (cmd == "rm") {
      s3.remove(arg);
    } else {
      std::cerr << "ppu-s3-tool: unknown command '" << cmd << "'\n";
      return 2;
    }
  } catch (const std::exception& e) {
    std::cerr << "ppu-s3-tool: " << e.what() << '\n';
    return 1;
  }
  return 0;
}
