// start_bench RUNS COMMAND ARGS...: how much CPU a command costs before it does anything, for
// the CLI's start time (docs/benchmarks.md, "CLI start"). Runs COMMAND RUNS times one after the
// other (posix_spawn, its output to /dev/null) and prints the median, 10th and 90th percentile
// of the user+sys CPU time the kernel accounts to it (wait4), in milliseconds, and its exit code.
#include <fcntl.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

extern char** environ;

int main(int argc, char** argv) {
  const int runs = argc > 2 ? std::atoi(argv[1]) : 0;
  if (runs < 1) {
    std::fprintf(stderr, "usage: start_bench RUNS COMMAND ARGS...\n");
    return 2;
  }
  posix_spawn_file_actions_t io;
  posix_spawn_file_actions_init(&io);
  posix_spawn_file_actions_addopen(&io, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&io, 2, "/dev/null", O_WRONLY, 0);
  std::vector<double> ms;
  int status = 0;
  for (int i = 0; i < runs; ++i) {
    pid_t pid;
    if (posix_spawn(&pid, argv[2], &io, nullptr, argv + 2, environ) != 0) {
      std::perror(argv[2]);
      return 1;
    }
    rusage ru{};
    wait4(pid, &status, 0, &ru);
    ms.push_back((ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e3 + (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e3);
  }
  std::sort(ms.begin(), ms.end());
  std::printf("%s: %d runs, user+sys CPU median %.2f ms (p10 %.2f, p90 %.2f), exit %d\n", argv[2], runs,
              ms[ms.size() / 2], ms[ms.size() / 10], ms[ms.size() * 9 / 10], WEXITSTATUS(status));
  return 0;
}
