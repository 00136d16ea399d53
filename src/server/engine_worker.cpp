#include "server/engine_worker.h"

#include <fmt/format.h>

namespace ember::server {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

const char* finish_reason(genai::StopReason reason) {
  switch (reason) {
    case genai::StopReason::kEos:
    case genai::StopReason::kCallback:  // a stop string
      return "stop";
    case genai::StopReason::kMaxNewTokens:
    case genai::StopReason::kContextFull:
      return "length";
    case genai::StopReason::kCancelled:
      return "cancelled";
    case genai::StopReason::kError:
      return "error";
  }
  return "stop";
}

}  // namespace

bool Job::wait(std::vector<ChoiceEvent>& out, std::chrono::milliseconds timeout) {
  std::unique_lock lock(mutex_);
  if (!cv_.wait_for(lock, timeout, [&] { return !events_.empty(); })) return false;
  while (!events_.empty()) {
    out.push_back(std::move(events_.front()));
    events_.pop_front();
  }
  return true;
}

bool Job::done() const {
  std::lock_guard lock(mutex_);
  return events_.empty() && finished_choices_ == static_cast<int>(choices_.size());
}

void Job::cancel() {
  if (cancelled_.exchange(true)) return;
  if (worker_) {
    {
      std::lock_guard lock(worker_->mutex_);
      worker_->cancel_pending_ = true;
    }
    worker_->cv_.notify_one();
  }
}

JobUsage Job::usage() const {
  std::lock_guard lock(mutex_);
  return usage_;
}

void Job::push(ChoiceEvent event) {
  {
    std::lock_guard lock(mutex_);
    if (event.finished) ++finished_choices_;
    events_.push_back(std::move(event));
  }
  cv_.notify_all();
}

EngineWorker::EngineWorker(std::unique_ptr<genai::Engine> engine, const genai::Tokenizer& tokenizer,
                           GenerationMetrics& metrics)
    : engine_(std::move(engine)), tokenizer_(tokenizer), metrics_(metrics), stats_(engine_->stats()) {
  thread_ = std::thread([this] { loop(); });
}

EngineWorker::~EngineWorker() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  cv_.notify_one();
  thread_.join();
}

Result<std::shared_ptr<Job>> EngineWorker::submit(JobSpec spec) {
  if (Status s = genai::validate_stop_strings(spec.stop); !s.is_ok()) return s;
  if (spec.n < 1) return invalid_argument("n must be at least 1, got {}", spec.n);
  auto job = std::make_shared<Job>();
  job->worker_ = this;
  job->spec_ = std::move(spec);
  job->submitted_ = Clock::now();
  job->choices_.resize(static_cast<size_t>(job->spec_.n));
  ++active_;
  {
    std::lock_guard lock(mutex_);
    if (stop_) {
      --active_;
      return internal_error("the engine is shutting down");
    }
    inbox_.push_back(job);
  }
  cv_.notify_one();
  std::unique_lock lock(job->mutex_);
  job->cv_.wait(lock, [&] { return job->admitted_ || !job->admission_.is_ok(); });
  if (!job->admission_.is_ok()) return job->admission_;
  return job;
}

void EngineWorker::cancel_all() {
  {
    std::lock_guard lock(mutex_);
    cancel_all_ = true;
  }
  cv_.notify_one();
}

genai::EngineStats EngineWorker::stats() const {
  std::lock_guard lock(mutex_);
  return stats_;
}

void EngineWorker::admit(const std::shared_ptr<Job>& job) {
  const JobSpec& spec = job->spec_;
  std::vector<genai::RequestId> added;
  Status refused;
  for (int c = 0; c < spec.n && refused.is_ok(); ++c) {
    Job::Choice& choice = job->choices_[static_cast<size_t>(c)];
    choice.stream = std::make_unique<genai::TextStream>(tokenizer_, spec.stop);
    genai::EngineRequest request;
    request.prompt = spec.prompt;
    request.params = spec.params;
    request.params.sampling.seed = spec.params.sampling.seed + static_cast<uint64_t>(c);
    Job* j = job.get();
    if (spec.params.top_logprobs >= 0) {
      request.params.on_logprobs = [j, c](const genai::TokenLogprobs& lp) {
        j->choices_[static_cast<size_t>(c)].logprobs.push_back(lp);
      };
    }
    request.params.on_token = [this, j, c](int64_t token) {
      Job::Choice& ch = j->choices_[static_cast<size_t>(c)];
      const Clock::time_point now = Clock::now();
      if (ch.last_token == Clock::time_point{}) {
        if (c == 0) metrics_.time_to_first_token.observe(std::chrono::duration<double>(now - j->submitted_).count());
      } else {
        metrics_.inter_token.observe(std::chrono::duration<double>(now - ch.last_token).count());
      }
      ch.last_token = now;
      ChoiceEvent event;
      event.choice = c;
      event.text = ch.stream->put(static_cast<int32_t>(token));
      // The end-of-sequence token is no part of the text, so it has no logprobs entry (as OpenAI's).
      if (!engine_->config().is_eos(token)) event.logprobs = std::move(ch.logprobs);
      ch.logprobs.clear();
      j->push(std::move(event));
      return !ch.stream->stopped() && !j->cancelled_.load();
    };
    auto id = engine_->add(std::move(request));
    if (!id.is_ok()) {
      refused = id.status();
      break;
    }
    added.push_back(*id);
    running_[*id] = {job, c};
  }
  if (!refused.is_ok()) {
    for (genai::RequestId id : added) {
      engine_->cancel(id);
      running_.erase(id);
    }
    engine_->take_finished();  // the cancelled choices of this job, which nobody waits for
    --active_;
    {
      std::lock_guard lock(job->mutex_);
      job->admission_ = refused;
    }
    job->cv_.notify_all();
    return;
  }
  {
    std::lock_guard lock(job->mutex_);
    job->admitted_ = true;
    job->usage_.prompt_tokens = static_cast<int64_t>(spec.prompt.size());
  }
  job->cv_.notify_all();
}

void EngineWorker::finish(const genai::FinishedRequest& finished) {
  auto it = running_.find(finished.id);
  if (it == running_.end()) return;
  auto [job, c] = it->second;
  running_.erase(it);
  Job::Choice& choice = job->choices_[static_cast<size_t>(c)];
  choice.finished = true;
  ChoiceEvent event;
  event.choice = c;
  event.finished = true;
  event.text = choice.stream->finish();
  event.logprobs = std::move(choice.logprobs);
  event.finish_reason = finish_reason(finished.result.stop);
  event.error = finished.result.error;
  if (finished.result.stop == genai::StopReason::kCallback && !choice.stream->stopped()) {
    event.finish_reason = "cancelled";  // the callback refused the token because the job was cancelled
  }
  metrics_.finished.add(fmt::format("reason=\"{}\"", event.finish_reason));
  const genai::GenerationStats& st = finished.result.stats;
  metrics_.generation_tokens += static_cast<int64_t>(finished.result.tokens.size());
  {
    std::lock_guard lock(job->mutex_);
    job->usage_.completion_tokens += static_cast<int64_t>(finished.result.tokens.size());
    if (c == 0) job->usage_.cached_tokens = st.reused_tokens;
  }
  bool last = true;
  for (const Job::Choice& other : job->choices_) last = last && other.finished;
  if (c == 0) {
    metrics_.prompt_tokens += st.prompt_tokens;
    metrics_.cached_prompt_tokens += st.reused_tokens;
  }
  // A job stops counting before its last event, so a client that saw it end
  // and sends the next request is not refused as over the server's limit.
  if (last) {
    metrics_.request_duration.observe(seconds_since(job->submitted_));
    --active_;
  }
  job->push(std::move(event));
}

void EngineWorker::loop() {
  std::vector<std::shared_ptr<Job>> arrived;
  for (;;) {
    bool cancel_all = false;
    {
      std::unique_lock lock(mutex_);
      cv_.wait(lock, [&] { return stop_ || !inbox_.empty() || cancel_all_ || cancel_pending_ || !engine_->idle(); });
      if (stop_) {
        cancel_all = true;
        for (auto& job : inbox_) {
          std::lock_guard job_lock(job->mutex_);
          job->admission_ = internal_error("the engine is shutting down");
          job->cv_.notify_all();
          --active_;
        }
        inbox_.clear();
      }
      arrived.swap(inbox_);
      cancel_all = cancel_all || cancel_all_;
      cancel_all_ = false;
      cancel_pending_ = false;
    }
    for (auto& job : arrived) admit(job);
    arrived.clear();
    for (auto& [id, entry] : running_) {
      if (cancel_all || entry.first->cancelled_.load()) engine_->cancel(id);
    }
    Status step = engine_->idle() ? Status::ok() : engine_->step();
    if (!step.is_ok()) {
      fmt::print(stderr, "ember serve: engine step failed: {}\n", step.to_string());
      for (auto& [id, entry] : running_) engine_->fail(id, "the engine's step failed: " + step.to_string());
    }
    for (const genai::FinishedRequest& f : engine_->take_finished()) finish(f);
    {
      std::lock_guard lock(mutex_);
      stats_ = engine_->stats();
      if (stop_ && running_.empty()) return;
    }
  }
}

}  // namespace ember::server
