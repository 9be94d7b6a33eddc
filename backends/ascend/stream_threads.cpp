#include "stream_threads.h"

#include "util/error.h"

namespace geopt::ascend {

StreamThreads::StreamThreads(const std::vector<std::vector<size_t>>& stream_kernels, const std::vector<std::vector<uint32_t>>& waits,
                             const std::vector<std::vector<uint32_t>>& records, size_t events)
    : stream_kernels_(stream_kernels), waits_(waits), records_(records), stream_wake_(stream_kernels.size()),
      recorded_(events, 0), next_(stream_kernels.size(), 0), in_run_(stream_kernels.size(), 0) {
  // Each thread starts out waiting for a run. A thread that cannot start stops the
  // ones that did before the error leaves (a destructor would not run).
  try {
    for (size_t s = 1; s < stream_kernels_.size(); ++s) threads_.emplace_back(&StreamThreads::stream_main, this, s);
  } catch (...) {
    stop();
    throw;
  }
}

StreamThreads::~StreamThreads() { stop(); }

void StreamThreads::stop() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  for (auto& w : stream_wake_) w.notify_all();
  for (auto& t : threads_) t.join();
}

bool StreamThreads::waits_met(size_t k) const {
  for (uint32_t e : waits_[k])
    if (!recorded_[e]) return false;
  return true;
}

bool StreamThreads::head_ready(size_t s) const { return next_[s] < stream_kernels_[s].size() && waits_met(stream_kernels_[s][next_[s]]); }

void StreamThreads::wake_ready_streams() {
  for (size_t s = 1; s < stream_kernels_.size(); ++s)
    if (head_ready(s)) stream_wake_[s].notify_one();
}

void StreamThreads::stream_main(size_t s) {
  std::unique_lock lock(mutex_);
  const auto& mine = stream_kernels_[s];
  for (;;) {
    // A run this thread takes part in (one may start before this thread does), whose
    // next kernel here can go (or that failed), or the end.
    stream_wake_[s].wait(lock, [&] { return stop_ || (in_run_[s] && (failure_ || head_ready(s))); });
    if (stop_) return;
    // Hand over every kernel that can go now, in order; sleep again only when the next
    // waits on an event not yet recorded. (handed_ has room for every kernel: no
    // allocation here, where an exception would end the process.)
    while (!failure_ && head_ready(s)) {
      handed_.push_back(mine[next_[s]++]);
      runner_wake_.notify_one();
    }
    if (failure_ || next_[s] == mine.size()) {
      in_run_[s] = 0;  // done with this run (or it failed): wait for the next
      if (--busy_ == 0) runner_wake_.notify_one();
    }
  }
}

void StreamThreads::run(const std::function<void(size_t)>& run_kernel) {
  const size_t streams = stream_kernels_.size();
  size_t kernel_count = 0;
  for (const auto& ks : stream_kernels_) kernel_count += ks.size();
  {
    std::lock_guard lock(mutex_);
    failure_ = nullptr;
    std::fill(recorded_.begin(), recorded_.end(), 0);
    std::fill(next_.begin(), next_.end(), 0);
    handed_.clear();
    handed_.reserve(kernel_count);
    handed_taken_ = 0;
    busy_ = 0;
    for (size_t s = 1; s < streams; ++s) {
      in_run_[s] = !stream_kernels_[s].empty();  // a stream without kernels takes no part
      busy_ += in_run_[s];
    }
    wake_ready_streams();
  }
  auto finish = [&] {  // every stream thread out of this run before it returns
    std::unique_lock lock(mutex_);
    runner_wake_.wait(lock, [&] { return busy_ == 0; });
  };
  for (size_t ran = 0; ran < kernel_count; ++ran) {
    size_t k;
    {
      std::unique_lock lock(mutex_);
      // Stalled: nothing handed over and no stream can go on (each is done or waits
      // on an event not recorded).
      auto stalled = [&] {
        for (size_t s = 0; s < streams; ++s)
          if (head_ready(s)) return false;
        return true;
      };
      runner_wake_.wait(lock, [&] { return handed_taken_ < handed_.size() || (streams && head_ready(0)) || stalled(); });
      if (handed_taken_ < handed_.size()) {
        k = handed_[handed_taken_++];
      } else if (streams && head_ready(0)) {
        k = stream_kernels_[0][next_[0]++];
      } else {
        failure_ = std::make_exception_ptr(Error("plan: every stream waits on an event nobody records (deadlock)"));
        for (auto& w : stream_wake_) w.notify_all();
        break;
      }
    }
    try {
      run_kernel(k);
    } catch (...) {
      std::lock_guard lock(mutex_);
      failure_ = std::current_exception();
      for (auto& w : stream_wake_) w.notify_all();
      break;
    }
    std::lock_guard lock(mutex_);
    for (uint32_t e : records_[k]) recorded_[e] = 1;
    wake_ready_streams();
  }
  finish();
  if (failure_) std::rethrow_exception(failure_);
}

}  // namespace geopt::ascend
