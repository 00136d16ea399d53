#pragma once
#include <cstddef>

namespace ember::runtime {

// What the executor has planned, for tests, `ember info` and benchmarks.
struct ExecutorStats {
  size_t plans_built = 0;   // plans made so far (one per new input-shape signature)
  size_t plans_cached = 0;
  size_t plans_rebuilt = 0;  // of plans_built: rebuilt in the storage of the least recently used plan
  size_t planning_ns = 0;    // time spent building plans, all of them together
  // Of the most recently used plan:
  size_t arena_bytes = 0;   // one arena holds every intermediate
  size_t steps = 0;         // nodes run per run (plan-time-evaluated nodes excluded)
  size_t dynamic_steps = 0; // nodes whose shapes are only known while running
  // Weights kernels hold in their own layouts (OpKernel::packed_bytes), and
  // the initializer bytes dropped because every reader had prepacked them.
  size_t packed_bytes = 0;
  size_t released_bytes = 0;
  // Arena bytes held by idle run states, all plans together (runs share them).
  size_t idle_arena_capacity = 0;
};

}  // namespace ember::runtime
