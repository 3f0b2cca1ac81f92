// A child process for integration tests. Arguments are actions run in order:
//   exit N              exit with status N
//   sleep MS            sleep MS milliseconds
//   ignore-term         ignore SIGTERM from now on
//   spawn-grandchild    fork a child that sleeps 600 s in this process group; print its pid
//   emit-bytes N        write N bytes ('x', a newline every 100) to stdout
//   print-env K         print the value of K (or <unset>)
//   print-cwd           print the working directory
//   out TEXT / err TEXT print TEXT and a newline on stdout / stderr
//   out-partial TEXT    print TEXT without a newline
//   print-fds           print the open fd numbers, space separated
//   print-pgid          print the process group id
//   print-sigstate      print "blocked=HEX ignored=HEX" from /proc/self/status
//   read-stdin          print the number of bytes read from stdin until EOF
//   kill-self SIG       raise signal SIG
#include <signal.h>
#include <sys/types.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <fstream>
#include <string>
#include <vector>

namespace {

void write_all(int fd, const char* p, size_t n) {
  while (n > 0) {
    ssize_t w = ::write(fd, p, n);
    if (w <= 0) std::_Exit(3);
    p += w;
    n -= static_cast<size_t>(w);
  }
}

void emit_bytes(unsigned long long n) {
  std::string block(64000, 'x');  // a multiple of the 100-byte line length
  for (size_t i = 99; i < block.size(); i += 100) block[i] = '\n';
  while (n > 0) {
    const size_t chunk = n < block.size() ? static_cast<size_t>(n) : block.size();
    write_all(1, block.data(), chunk);
    n -= chunk;
  }
}

void print_fds() {
  std::string line;
  DIR* d = ::opendir("/proc/self/fd");
  const int own = ::dirfd(d);
  while (dirent* e = ::readdir(d)) {
    if (e->d_name[0] == '.' || std::atoi(e->d_name) == own) continue;
    line += std::string(e->d_name) + " ";
  }
  ::closedir(d);
  std::printf("%s\n", line.c_str());
}

void print_sigstate() {
  std::ifstream in("/proc/self/status");
  std::string line, blocked, ignored;
  while (std::getline(in, line)) {
    if (line.rfind("SigBlk:", 0) == 0) blocked = line.substr(8);
    if (line.rfind("SigIgn:", 0) == 0) ignored = line.substr(8);
  }
  std::printf("blocked=%s ignored=%s\n", blocked.c_str(), ignored.c_str());
}

}  // namespace

int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IONBF, 0);
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const char* next = i + 1 < argc ? argv[i + 1] : "";
    if (a == "exit") return std::atoi(argv[++i]);
    else if (a == "sleep") { ::usleep(static_cast<useconds_t>(std::atol(next)) * 1000); ++i; }
    else if (a == "ignore-term") ::signal(SIGTERM, SIG_IGN);
    else if (a == "spawn-grandchild") {
      const pid_t pid = ::fork();
      if (pid == 0) {
        ::signal(SIGTERM, SIG_IGN);
        ::sleep(600);
        std::_Exit(0);
      }
      std::printf("grandchild %d\n", pid);
    }
    else if (a == "emit-bytes") { emit_bytes(std::strtoull(next, nullptr, 10)); ++i; }
    else if (a == "print-env") { const char* v = std::getenv(next); std::printf("%s\n", v ? v : "<unset>"); ++i; }
    else if (a == "print-cwd") { char buf[4096]; std::printf("%s\n", ::getcwd(buf, sizeof buf)); }
    else if (a == "out") { std::printf("%s\n", next); ++i; }
    else if (a == "out-partial") { std::printf("%s", next); ++i; }
    else if (a == "err") { std::fprintf(stderr, "%s\n", next); ++i; }
    else if (a == "print-fds") print_fds();
    else if (a == "print-pgid") std::printf("%d\n", static_cast<int>(::getpgrp()));
    else if (a == "print-sigstate") print_sigstate();
    else if (a == "read-stdin") {
      char buf[4096]; long total = 0; ssize_t n;
      while ((n = ::read(0, buf, sizeof buf)) > 0) total += n;
      std::printf("%ld\n", total);
    }
    else if (a == "kill-self") { ::raise(std::atoi(next)); ++i; }
    else { std::fprintf(stderr, "test_child: unknown action '%s'\n", a.c_str()); return 2; }
  }
  return 0;
}
