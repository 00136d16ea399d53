// ember_micro: Google Benchmark over the microkernel tables at every ISA level
// this CPU has (EMBER_ISA lowers the top level). Registration happens here, at
// run time, rather than from static initializers in each file, so the ISA
// detection it reads is never used before it is constructed.
#include "micro_util.h"

int main(int argc, char** argv) {
  ember::bench::register_convert_benchmarks();
  ember::bench::register_unary_benchmarks();
  ember::bench::register_binary_benchmarks();
  ember::bench::register_bandwidth_benchmarks();
  ember::bench::register_tokenizer_benchmarks();
  ember::bench::register_attention_benchmarks();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
