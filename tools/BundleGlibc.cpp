// lib/libtgc.so's own arc4random (tools/Bundle.cmake). Debian's static LLVM calls glibc's (new in glibc 2.36)
// for sys::Process::GetRandomNumber, which made it the one symbol keeping the bundle from glibc 2.34 and 2.35
// (Ubuntu 22.04); defined here, the link binds to it and the bundle's newest glibc symbol is 2.34's. It reads
// getrandom(2), as glibc's does; LLVM only seeds non-cryptographic choices with it.
#include <cerrno>
#include <cstdint>
#include <ctime>
#include <sys/random.h>

extern "C" uint32_t arc4random() {
  uint32_t value = 0;
  for (;;) {
    if (getrandom(&value, sizeof value, 0) == sizeof value) return value;
    if (errno != EINTR) break;
  }
  // No getrandom (a kernel older than 3.17): the clock is enough for what LLVM uses it for.
  timespec now{};
  clock_gettime(CLOCK_MONOTONIC, &now);
  return static_cast<uint32_t>(now.tv_nsec) ^ static_cast<uint32_t>(now.tv_sec * 2654435761u);
}
