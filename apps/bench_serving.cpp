// The serving benchmark. At each concurrency level C, a fresh engine serves
// `requests` requests of random tokens whose prompt and output lengths are
// drawn uniformly from fixed ranges (seeded; EOS ignored so every request
// generates its drawn length). Arrivals are Poisson at --rate, at most C in
// flight; without a rate, a new request arrives whenever one finishes (C
// always in flight). One warm-up request runs first. Reported per level, as
// vLLM's benchmark_serving does:
//   output tok/s     generated tokens / wall time of the level;
//   decode tok/s     tokens of the steps that ran no prompt tokens / their time
//                    (batched decode alone: each weight read once per step);
//   steady tok/s     the same after the level, with C requests of one length
//                    (a 256-token prompt, or what the context allows, then 48
//                    tokens) decoding together;
//   TTFT p50/p99     add() to the first token;
//   ITL p50/p99      between consecutive tokens of a request;
//   KV peak          the most blocks held at once x block bytes, against the
//                    bytes of the tokens held at that moment, and the unused
//                    positions of those blocks per running sequence (in blocks);
//   prefix hit       prompt tokens served from the prefix cache / admitted;
//   thread pool      parallel_for jobs, those that ran alone, and the workers
//                    that joined against those wanted (threading::pool_stats).
// --shared-prefix N then times two requests, one after the other, whose
// prompts share an N-token system prompt: the second's TTFT against the first's.
// Last, one stream's decode step on the paged cache against Generator's
// contiguous cache in the same process, as a ratio of p50 step times: each
// round runs Generator, the engine, Generator again (the two Generator runs
// swap places every round), and Generator against itself is the null control.
#include "bench_serving.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <thread>

#include "base/cpu_features.h"
#include "base/isa.h"
#include "threading/thread_pool.h"

namespace ember::cli {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_between(Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double>(b - a).count(); }

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const double at = p / 100 * static_cast<double>(v.size() - 1);
  const auto lo = static_cast<size_t>(at);
  const size_t hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (v[hi] - v[lo]) * (at - static_cast<double>(lo));
}

struct Planned {
  double arrival_s = 0;  // after the level starts (rate > 0)
  std::vector<int64_t> prompt;
  int gen = 0;
};

struct Level {
  int streams = 0;
  int requests = 0;
  int64_t generated = 0;
  double wall_s = 0, output_tps = 0, decode_tps = 0, steady_tps = 0;
  std::vector<double> ttft, itl;
  int64_t peak_blocks = 0, tokens_at_peak = 0, running_at_peak = 0, block_size = 0, block_bytes = 0, token_bytes = 0,
          preemptions = 0;
  // Unused positions in the blocks held at the peak, per running sequence, in blocks.
  double spare_blocks_per_stream() const {
    return running_at_peak > 0 ? static_cast<double>(peak_blocks * block_size - tokens_at_peak) /
                                     static_cast<double>(block_size * running_at_peak)
                               : 0.0;
  }
  double prefix_hit = 0;
  // Thread-pool jobs of the level: helpers that joined / wanted, and jobs that ran alone.
  uint64_t pool_jobs = 0, pool_alone = 0, helpers_wanted = 0, helpers_joined = 0;
};

std::vector<int64_t> random_tokens(std::mt19937_64& rng, int n, int vocab) {
  std::uniform_int_distribution<int64_t> token(0, vocab - 1);
  std::vector<int64_t> t(static_cast<size_t>(n));
  for (int64_t& x : t) x = token(rng);
  return t;
}

std::vector<Planned> plan_requests(const ServingBenchArgs& args, int count, int vocab, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int> prompt(args.prompt[0], args.prompt[1]), gen(args.gen[0], args.gen[1]);
  std::exponential_distribution<double> gap(args.rate > 0 ? args.rate : 1.0);
  std::vector<Planned> out;
  double t = 0;
  for (int i = 0; i < count; ++i) {
    Planned p;
    p.arrival_s = args.rate > 0 ? t : 0;
    t += gap(rng);
    p.prompt = random_tokens(rng, prompt(rng), vocab);
    p.gen = gen(rng);
    out.push_back(std::move(p));
  }
  return out;
}

genai::EngineOptions engine_options(const ServingBenchArgs& args, int streams) {
  genai::EngineOptions o;
  o.block_size = args.block_size;
  o.kv_tokens = args.kv_tokens;
  o.max_running = streams;
  o.step_tokens = args.step_tokens;
  return o;
}

genai::EngineRequest request(std::vector<int64_t> prompt, int gen, std::vector<Clock::time_point>* times) {
  genai::EngineRequest r;
  r.prompt = std::move(prompt);
  r.params.max_new_tokens = gen;
  r.params.stop_on_eos = false;
  r.params.on_token = [times](int64_t) {
    times->push_back(Clock::now());
    return true;
  };
  return r;
}

constexpr int kSteadyPrompt = 256, kSteadyGen = 48;

// Decode tokens/s of `streams` equal requests decoding together (steps that ran no prompt token).
Result<double> steady_decode(genai::Engine& e, int streams, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<Clock::time_point> ignored;
  const int prompt = static_cast<int>(std::min<int64_t>(kSteadyPrompt, e.max_length() - kSteadyGen - 1));
  for (int i = 0; i < streams; ++i) {
    EMBER_RETURN_IF_ERROR(
        e.add(request(random_tokens(rng, prompt, e.config().vocab_size), kSteadyGen, &ignored)).status());
  }
  double time = 0;
  int64_t tokens = 0;
  while (!e.idle()) {
    const genai::EngineStats s0 = e.stats();
    const Clock::time_point start = Clock::now();
    EMBER_RETURN_IF_ERROR(e.step());
    const double step_s = seconds_between(start, Clock::now());
    const genai::EngineStats s1 = e.stats();
    if (s1.prompt_tokens_run == s0.prompt_tokens_run && s0.running == streams) {
      time += step_s;
      tokens += s1.decode_tokens_run - s0.decode_tokens_run;
    }
    e.take_finished();
  }
  return time > 0 ? static_cast<double>(tokens) / time : 0.0;
}

Result<Level> run_level(const ModelArgs& model, const ServingBenchArgs& args, int streams, uint64_t seed) {
  EMBER_ASSIGN_OR_RETURN(std::unique_ptr<genai::Engine> engine, load_engine(model, engine_options(args, streams)));
  genai::Engine& e = *engine;
  const int vocab = e.config().vocab_size;
  {  // warm-up: first touch of the weights and of the step buffers
    std::mt19937_64 rng(seed ^ 0x5eed);
    std::vector<Clock::time_point> ignored;
    EMBER_RETURN_IF_ERROR(e.add(request(random_tokens(rng, args.prompt[0], vocab), 4, &ignored)).status());
    while (!e.idle()) EMBER_RETURN_IF_ERROR(e.step());
    e.take_finished();
  }
  const genai::EngineStats before = e.stats();
  const threading::PoolStats pool_before = threading::pool_stats();
  Level level;
  level.streams = streams;
  level.requests = args.requests > 0 ? args.requests : std::max(8, 4 * streams);
  const std::vector<Planned> planned = plan_requests(args, level.requests, vocab, seed);
  std::vector<std::vector<Clock::time_point>> times(planned.size());
  std::vector<Clock::time_point> added(planned.size());
  size_t next = 0;
  int in_flight = 0, finished = 0;
  double decode_time = 0;
  int64_t decode_tokens = 0;
  const Clock::time_point start = Clock::now();
  while (finished < level.requests) {
    const double now = seconds_between(start, Clock::now());
    while (next < planned.size() && in_flight < streams && planned[next].arrival_s <= now) {
      EMBER_RETURN_IF_ERROR(e.add(request(planned[next].prompt, planned[next].gen, &times[next])).status());
      added[next] = Clock::now();
      ++next;
      ++in_flight;
    }
    if (e.idle()) {
      std::this_thread::sleep_for(std::chrono::duration<double>(std::max(0.0, planned[next].arrival_s - now)));
      continue;
    }
    const genai::EngineStats s0 = e.stats();
    const Clock::time_point step_start = Clock::now();
    EMBER_RETURN_IF_ERROR(e.step());
    const double step_s = seconds_between(step_start, Clock::now());
    const genai::EngineStats s1 = e.stats();
    if (s1.prompt_tokens_run == s0.prompt_tokens_run) {
      decode_time += step_s;
      decode_tokens += s1.decode_tokens_run - s0.decode_tokens_run;
    }
    if (s1.pool.referenced_blocks > level.peak_blocks) {
      level.peak_blocks = s1.pool.referenced_blocks;
      level.tokens_at_peak = s1.tokens_held;
      level.running_at_peak = s1.running;
    }
    for (const genai::FinishedRequest& f : e.take_finished()) {
      --in_flight;
      ++finished;
      level.generated += f.result.stats.generated_tokens;
    }
  }
  level.wall_s = seconds_between(start, Clock::now());
  for (size_t i = 0; i < planned.size(); ++i) {
    const auto& t = times[i];
    if (t.empty()) continue;
    level.ttft.push_back(seconds_between(added[i], t.front()));
    for (size_t k = 1; k < t.size(); ++k) level.itl.push_back(seconds_between(t[k - 1], t[k]));
  }
  const genai::EngineStats after = e.stats();
  const threading::PoolStats pool_after = threading::pool_stats();
  level.pool_jobs = pool_after.jobs - pool_before.jobs;
  level.pool_alone = pool_after.alone - pool_before.alone;
  level.helpers_wanted = pool_after.helpers_wanted - pool_before.helpers_wanted;
  level.helpers_joined = pool_after.helpers_joined - pool_before.helpers_joined;
  level.output_tps = static_cast<double>(level.generated) / level.wall_s;
  level.decode_tps = decode_time > 0 ? static_cast<double>(decode_tokens) / decode_time : 0;
  level.block_bytes = after.block_bytes;
  level.block_size = after.block_size;
  level.token_bytes = after.block_bytes / after.block_size;
  level.preemptions = after.preemptions - before.preemptions;
  const int64_t admitted = after.prompt_tokens_admitted - before.prompt_tokens_admitted;
  level.prefix_hit = admitted > 0 ? static_cast<double>(after.prefix_tokens_reused - before.prefix_tokens_reused) /
                                        static_cast<double>(admitted)
                                  : 0;
  EMBER_ASSIGN_OR_RETURN(level.steady_tps, steady_decode(e, streams, seed + 1));
  return level;
}

struct StepTimes {
  int context = 0;
  std::vector<double> paged, contiguous, contiguous_again;
};

// Generator: a prompt of `context` tokens, then `steps` single-token appends; the step times.
Status time_contiguous(genai::Generator& g, const std::vector<int64_t>& prompt, int steps, std::vector<double>& out) {
  g.reset();
  EMBER_RETURN_IF_ERROR(g.append(prompt));
  for (int i = 0; i < steps; ++i) {
    const int64_t next[1] = {genai::argmax(g.last_logits())};
    const Clock::time_point start = Clock::now();
    EMBER_RETURN_IF_ERROR(g.append(next));
    out.push_back(seconds_between(start, Clock::now()));
  }
  return Status::ok();
}

// The engine, one request alone: the intervals between its tokens after the first.
Status time_paged(genai::Engine& e, const std::vector<int64_t>& prompt, int steps, std::vector<double>& out) {
  std::vector<Clock::time_point> times;
  EMBER_RETURN_IF_ERROR(e.add(request(prompt, steps + 1, &times)).status());
  while (!e.idle()) EMBER_RETURN_IF_ERROR(e.step());
  e.take_finished();
  for (size_t k = 1; k < times.size(); ++k) out.push_back(seconds_between(times[k - 1], times[k]));
  return Status::ok();
}

constexpr int kStepContext = 512, kStepCount = 64, kStepRepetitions = 8;

Result<StepTimes> run_decode_step(const ModelArgs& model, const ServingBenchArgs& args, uint64_t seed) {
  EMBER_ASSIGN_OR_RETURN(std::unique_ptr<genai::Engine> engine, load_engine(model, engine_options(args, 1)));
  StepTimes t;
  t.context = static_cast<int>(std::min<int64_t>(kStepContext, engine->max_length() - kStepCount - 2));
  if (t.context < 1) return invalid_argument("the context of {} tokens is too short", engine->max_length());
  EMBER_ASSIGN_OR_RETURN(std::unique_ptr<genai::Generator> generator,
                         load_generator(model, t.context + kStepCount + 2));
  std::mt19937_64 rng(seed);
  for (int r = -1; r < kStepRepetitions; ++r) {  // the first round warms up
    const std::vector<int64_t> prompt = random_tokens(rng, t.context, engine->config().vocab_size);
    StepTimes round;
    // The paged run sits between the two contiguous ones, which swap places every round.
    std::vector<double>& before = r % 2 == 0 ? round.contiguous : round.contiguous_again;
    std::vector<double>& after = r % 2 == 0 ? round.contiguous_again : round.contiguous;
    EMBER_RETURN_IF_ERROR(time_contiguous(*generator, prompt, kStepCount, before));
    EMBER_RETURN_IF_ERROR(time_paged(*engine, prompt, kStepCount, round.paged));
    EMBER_RETURN_IF_ERROR(time_contiguous(*generator, prompt, kStepCount, after));
    if (r < 0) continue;
    for (auto [from, to] : {std::pair{&round.paged, &t.paged}, std::pair{&round.contiguous, &t.contiguous},
                            std::pair{&round.contiguous_again, &t.contiguous_again}}) {
      to->insert(to->end(), from->begin(), from->end());
    }
  }
  return t;
}

struct PrefixResult {
  double first_ttft = 0, second_ttft = 0;
  int64_t reused = 0;
};

Result<PrefixResult> run_shared_prefix(const ModelArgs& model, const ServingBenchArgs& args, uint64_t seed) {
  EMBER_ASSIGN_OR_RETURN(std::unique_ptr<genai::Engine> engine, load_engine(model, engine_options(args, 1)));
  genai::Engine& e = *engine;
  std::mt19937_64 rng(seed);
  const int vocab = e.config().vocab_size;
  const std::vector<int64_t> system = random_tokens(rng, args.shared_prefix, vocab);
  PrefixResult r;
  {  // warm-up on unrelated tokens
    std::vector<Clock::time_point> ignored;
    EMBER_RETURN_IF_ERROR(e.add(request(random_tokens(rng, 64, vocab), 2, &ignored)).status());
    while (!e.idle()) EMBER_RETURN_IF_ERROR(e.step());
    e.take_finished();
  }
  for (int i = 0; i < 2; ++i) {
    std::vector<int64_t> prompt = system;
    const std::vector<int64_t> question = random_tokens(rng, 32, vocab);
    prompt.insert(prompt.end(), question.begin(), question.end());
    std::vector<Clock::time_point> times;
    EMBER_RETURN_IF_ERROR(e.add(request(prompt, 1, &times)).status());
    const Clock::time_point start = Clock::now();
    while (!e.idle()) EMBER_RETURN_IF_ERROR(e.step());
    (i == 0 ? r.first_ttft : r.second_ttft) = seconds_between(start, times.front());
    for (const genai::FinishedRequest& f : e.take_finished()) {
      if (i == 1) r.reused = f.result.stats.reused_tokens;
    }
  }
  return r;
}

void print_markdown(const ModelArgs& model, const ServingBenchArgs& args, const std::vector<Level>& levels,
                    const PrefixResult* prefix, const StepTimes& steps) {
  fmt::print("CPU: {}, ISA {}; model {}; prompts {}-{}, outputs {}-{} tokens; {}; block {} tokens, step {} tokens\n\n",
             cpu_features().brand, isa_description(), model.model_dir, args.prompt[0], args.prompt[1], args.gen[0],
             args.gen[1], args.rate > 0 ? fmt::format("Poisson arrivals at {} req/s", args.rate) : "closed loop",
             args.block_size, args.step_tokens);
  fmt::print("| streams | requests | output tok/s | decode tok/s | steady tok/s | TTFT p50 ms | TTFT p99 ms | ITL p50 ms | ITL p99 ms | "
             "KV peak MB | KV / held | spare blocks / stream | prefix hit | preemptions |\n");
  fmt::print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n");
  for (const Level& l : levels) {
    const double kv = static_cast<double>(l.peak_blocks * l.block_bytes);
    const double held = static_cast<double>(l.tokens_at_peak * l.token_bytes);
    fmt::print("| {} | {} | {:.2f} | {:.2f} | {:.2f} | {:.1f} | {:.1f} | {:.1f} | {:.1f} | {:.1f} | {:.3f} | {:.2f} | {:.1f} % | {} "
               "|\n",
               l.streams, l.requests, l.output_tps, l.decode_tps, l.steady_tps, 1e3 * percentile(l.ttft, 50),
               1e3 * percentile(l.ttft, 99), 1e3 * percentile(l.itl, 50), 1e3 * percentile(l.itl, 99), kv / 1e6,
               held > 0 ? kv / held : 0.0, l.spare_blocks_per_stream(), 100 * l.prefix_hit, l.preemptions);
  }
  fmt::print("\n");
  for (const Level& l : levels) {
    fmt::print("thread pool at {} streams: {} jobs, {} ran alone, {} of {} wanted helpers joined\n", l.streams,
               l.pool_jobs, l.pool_alone, l.helpers_joined, l.helpers_wanted);
  }
  if (!levels.empty() && levels.front().decode_tps > 0) {
    fmt::print("\n");
    for (const Level& l : levels) {
      fmt::print("at {} streams: decode tok/s {:.2f} x one stream's, steady {:.2f} x\n", l.streams,
                 l.decode_tps / levels.front().decode_tps, l.steady_tps / levels.front().steady_tps);
    }
  }
  if (prefix) {
    fmt::print("\nshared {}-token system prompt: first request TTFT {:.1f} ms, second {:.1f} ms ({:.3f} x), {} tokens "
               "from the prefix cache\n",
               args.shared_prefix, 1e3 * prefix->first_ttft, 1e3 * prefix->second_ttft,
               prefix->second_ttft / prefix->first_ttft, prefix->reused);
  }
  const double paged = percentile(steps.paged, 50), contiguous = percentile(steps.contiguous, 50),
               again = percentile(steps.contiguous_again, 50);
  fmt::print("\none stream's decode step after {} tokens, p50 of {} x {} steps (p10-p90): paged {:.2f} ms ({:.2f}-{:.2f}), "
             "contiguous {:.2f} ms ({:.2f}-{:.2f}); paged / contiguous {:.3f}, null control (contiguous / contiguous) "
             "{:.3f}\n",
             steps.context, kStepRepetitions, kStepCount, 1e3 * paged, 1e3 * percentile(steps.paged, 10),
             1e3 * percentile(steps.paged, 90), 1e3 * contiguous, 1e3 * percentile(steps.contiguous, 10),
             1e3 * percentile(steps.contiguous, 90), paged / contiguous, again / contiguous);
}

void print_json(const ModelArgs& model, const ServingBenchArgs& args, const std::vector<Level>& levels,
                const PrefixResult* prefix, const StepTimes& steps, uint64_t seed) {
  nlohmann::json out = {{"model_dir", model.model_dir},  {"cpu", cpu_features().brand}, {"isa", isa_description()},
                        {"prompt_range", args.prompt},   {"gen_range", args.gen},       {"rate", args.rate},
                        {"block_size", args.block_size}, {"step_tokens", args.step_tokens}, {"seed", seed}};
  for (const Level& l : levels) {
    out["levels"].push_back({{"streams", l.streams},
                             {"requests", l.requests},
                             {"generated_tokens", l.generated},
                             {"wall_s", l.wall_s},
                             {"output_tokens_per_s", l.output_tps},
                             {"decode_tokens_per_s", l.decode_tps},
                             {"steady_decode_tokens_per_s", l.steady_tps},
                             {"ttft_p50_s", percentile(l.ttft, 50)},
                             {"ttft_p99_s", percentile(l.ttft, 99)},
                             {"itl_p50_s", percentile(l.itl, 50)},
                             {"itl_p99_s", percentile(l.itl, 99)},
                             {"kv_peak_bytes", l.peak_blocks * l.block_bytes},
                             {"kv_tokens_held_at_peak", l.tokens_at_peak},
                             {"running_at_peak", l.running_at_peak},
                             {"kv_bytes_per_token", l.token_bytes},
                             {"prefix_hit_rate", l.prefix_hit},
                             {"preemptions", l.preemptions},
                             {"pool_jobs", l.pool_jobs},
                             {"pool_jobs_alone", l.pool_alone},
                             {"pool_helpers_wanted", l.helpers_wanted},
                             {"pool_helpers_joined", l.helpers_joined}});
  }
  if (prefix) {
    out["shared_prefix"] = {{"tokens", args.shared_prefix},
                            {"first_ttft_s", prefix->first_ttft},
                            {"second_ttft_s", prefix->second_ttft},
                            {"reused_tokens", prefix->reused}};
  }
  out["decode_step"] = {{"context", steps.context},
                        {"paged_p50_s", percentile(steps.paged, 50)},
                        {"contiguous_p50_s", percentile(steps.contiguous, 50)},
                        {"contiguous_again_p50_s", percentile(steps.contiguous_again, 50)}};
  fmt::print("{}\n", out.dump(2));
}

}  // namespace

void add_serving_bench_options(CLI::App& app, ServingBenchArgs& args) {
  app.add_option("--concurrency", args.concurrency,
                 "serving benchmark: concurrent streams per level, e.g. 1,4,8,16 (replaces pp/tg)")
      ->delimiter(',')
      ->check(CLI::PositiveNumber);
  app.add_option("--requests", args.requests, "requests per level (default: 4 x streams, at least 8)")
      ->check(CLI::PositiveNumber);
  app.add_option("--rate", args.rate, "Poisson arrivals per second (default: a new request whenever one finishes)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--prompt-range", args.prompt, "MIN,MAX prompt tokens")->delimiter(',')->expected(2);
  app.add_option("--gen-range", args.gen, "MIN,MAX generated tokens")->delimiter(',')->expected(2);
  app.add_option("--shared-prefix", args.shared_prefix,
                 "also time two requests sharing a system prompt of this many tokens")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--kv-tokens", args.kv_tokens, "KV pool size in tokens (default: 4 x the context)")
      ->check(CLI::PositiveNumber);
  app.add_option("--block-size", args.block_size, "tokens per KV block")->check(CLI::PositiveNumber);
  app.add_option("--step-tokens", args.step_tokens, "tokens per engine step (decodes, then prompt chunks)")
      ->check(CLI::PositiveNumber);
}

int bench_serving(const ModelArgs& model, const ServingBenchArgs& args, uint64_t seed, bool json) {
  auto fail = [](const Status& s) {
    fmt::print(stderr, "ember bench: {}\n", s.to_string());
    return 1;
  };
  for (const std::vector<int>* range : {&args.prompt, &args.gen}) {
    if (range->size() != 2 || (*range)[0] < 1 || (*range)[0] > (*range)[1]) {
      return fail(invalid_argument("a length range must be MIN,MAX with 1 <= MIN <= MAX"));
    }
  }
  std::vector<Level> levels;
  for (int streams : args.concurrency) {
    auto level = run_level(model, args, streams, seed);
    if (!level.is_ok()) return fail(level.status().with_context(fmt::format("{} streams: ", streams)));
    levels.push_back(std::move(*level));
  }
  std::optional<PrefixResult> prefix;
  if (args.shared_prefix > 0) {
    auto r = run_shared_prefix(model, args, seed);
    if (!r.is_ok()) return fail(r.status().with_context("shared prefix: "));
    prefix = *r;
  }
  auto steps = run_decode_step(model, args, seed);
  if (!steps.is_ok()) return fail(steps.status().with_context("decode step: "));
  if (json) {
    print_json(model, args, levels, prefix ? &*prefix : nullptr, *steps, seed);
  } else {
    print_markdown(model, args, levels, prefix ? &*prefix : nullptr, *steps);
  }
  return 0;
}

}  // namespace ember::cli
