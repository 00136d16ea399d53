#pragma once
// The serving engine on its own thread, for `ember serve`. Request threads
// submit Jobs (one API request: a prompt and n choices); the engine thread
// adds each choice to the Engine, steps it while any request runs, and turns
// each chosen token into a ChoiceEvent: the text it settles (detokenized,
// stop strings held back and cut, TextStream), the token and, when asked, its
// logprobs. A request thread waits on its Job for events; cancelling the Job
// (a client gone) ends its choices at the next step and frees their KV.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "base/status.h"
#include "genai/engine.h"
#include "genai/text_stream.h"
#include "genai/tokenizer.h"
#include "server/metrics.h"

namespace ember::server {

struct ChoiceEvent {
  int choice = 0;
  std::string text;  // newly settled text (may be empty while a stop string could be forming)
  std::vector<genai::TokenLogprobs> logprobs;  // per token since the previous event, when the job asked for them
  bool finished = false;
  // When finished: "stop" (EOS or a stop string), "length", "cancelled" or
  // "error" (a constraint or the engine's step failed; why is in `error`).
  std::string finish_reason;
  std::string error;
};

struct JobSpec {
  std::vector<int64_t> prompt;
  // max_new_tokens, sampling (choice i draws with seed + i), top_logprobs; on_token is the worker's.
  genai::GenerationParams params;
  int n = 1;
  std::vector<std::string> stop;  // checked by validate_stop_strings
};

struct JobUsage {
  int64_t prompt_tokens = 0;
  int64_t completion_tokens = 0;  // over every choice
  int64_t cached_tokens = 0;      // prompt tokens whose KV came from the prefix cache (choice 0)
};

// What the worker records for /metrics.
struct GenerationMetrics {
  Histogram time_to_first_token{latency_buckets()};  // submit to the first token of choice 0
  Histogram inter_token{latency_buckets()};          // between tokens of one choice
  Histogram request_duration{latency_buckets()};     // submit to the last choice's end
  LabeledCounter finished;                           // choices by finish reason
  std::atomic<int64_t> prompt_tokens{0}, generation_tokens{0}, cached_prompt_tokens{0};
};

class EngineWorker;

class Job {
 public:
  // Moves the events that arrived into `out`; waits up to `timeout` when none
  // has. False when none came in time.
  bool wait(std::vector<ChoiceEvent>& out, std::chrono::milliseconds timeout);
  // Every choice has finished and its last event has been taken.
  bool done() const;
  // Ends every choice at the engine's next step (finish reason "cancelled").
  void cancel();
  JobUsage usage() const;
  int n() const { return static_cast<int>(choices_.size()); }

 private:
  friend class EngineWorker;
  struct Choice {
    std::unique_ptr<genai::TextStream> stream;
    std::vector<genai::TokenLogprobs> logprobs;  // since the last event
    bool finished = false;
    std::chrono::steady_clock::time_point last_token;
  };
  void push(ChoiceEvent event);

  EngineWorker* worker_ = nullptr;
  JobSpec spec_;
  std::chrono::steady_clock::time_point submitted_;
  std::vector<Choice> choices_;  // engine thread only
  std::atomic<bool> cancelled_{false};

  mutable std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<ChoiceEvent> events_;
  int finished_choices_ = 0;
  bool admitted_ = false;
  Status admission_;  // why the engine refused the job
  JobUsage usage_;
};

class EngineWorker {
 public:
  // Starts the engine thread. `tokenizer` must outlive the worker.
  EngineWorker(std::unique_ptr<genai::Engine> engine, const genai::Tokenizer& tokenizer, GenerationMetrics& metrics);
  ~EngineWorker();  // cancels every job and joins the thread

  const genai::Engine& engine() const { return *engine_; }
  // Hands the job to the engine thread and returns once the engine took it, or
  // refused it (a prompt that does not fit, a token outside the vocabulary).
  Result<std::shared_ptr<Job>> submit(JobSpec spec);
  // Jobs submitted and not yet finished.
  int64_t active_jobs() const { return active_.load(); }
  void cancel_all();
  // The engine's counters after its latest step.
  genai::EngineStats stats() const;

 private:
  friend class Job;
  void loop();
  void admit(const std::shared_ptr<Job>& job);
  void finish(const genai::FinishedRequest& finished);

  std::unique_ptr<genai::Engine> engine_;
  const genai::Tokenizer& tokenizer_;
  GenerationMetrics& metrics_;
  std::atomic<int64_t> active_{0};

  mutable std::mutex mutex_;
  std::condition_variable cv_;
  std::vector<std::shared_ptr<Job>> inbox_;
  bool stop_ = false;
  bool cancel_all_ = false;
  bool cancel_pending_ = false;  // some job was cancelled since the loop last looked
  genai::EngineStats stats_;

  // Engine thread only.
  std::unordered_map<genai::RequestId, std::pair<std::shared_ptr<Job>, int>> running_;
  std::thread thread_;
};

}  // namespace ember::server
