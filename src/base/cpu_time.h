#pragma once
// CPU time, for budgets that a loaded machine should not trip: a grammar
// step's (genai/constraint.cpp) and a chat template render's (genai/jinja).
#include <chrono>

#include <pthread.h>
#include <time.h>

namespace ember {

// The calling thread's CPU clock, which another thread may read while this
// one runs (CLOCK_MONOTONIC where the system has none).
inline clockid_t this_thread_cpu_clock() {
  clockid_t clock;
  return pthread_getcpuclockid(pthread_self(), &clock) == 0 ? clock : CLOCK_MONOTONIC;
}

// `clock`'s reading; the calling thread's CPU time by default.
inline std::chrono::nanoseconds clock_time(clockid_t clock = CLOCK_THREAD_CPUTIME_ID) {
  timespec now = {};
  clock_gettime(clock, &now);
  return std::chrono::seconds(now.tv_sec) + std::chrono::nanoseconds(now.tv_nsec);
}

}  // namespace ember
