#include "cli/exec_full.h"

#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstring>
#include <iostream>

namespace gpupool::cli {

int ExecFull(const std::string& verb, const std::vector<std::string>& argv) {
  char self[PATH_MAX];
  const ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  std::string dir = n > 0 ? std::string(self, static_cast<size_t>(n)) : "";
  dir = dir.substr(0, dir.rfind('/') == std::string::npos ? 0 : dir.rfind('/'));
  const std::string path = (dir.empty() ? "." : dir) + "/" + kFullBinaryName;
  std::vector<std::string> words = {path, verb};
  words.insert(words.end(), argv.begin(), argv.end());
  std::vector<char*> c_args;
  for (std::string& w : words) c_args.push_back(w.data());
  c_args.push_back(nullptr);
  execv(path.c_str(), c_args.data());
  std::cerr << "gpupool " << verb << ": cannot run " << path << " (" << std::strerror(errno)
            << "); the serve, agent, demo and sim verbs are in " << kFullBinaryName
            << ", installed beside gpupool\n";
  return 1;
}

}  // namespace gpupool::cli
