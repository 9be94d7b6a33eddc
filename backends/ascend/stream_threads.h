#pragma once
// The threads of a plan's streams, kept from one run to the next. Stream 0 is the
// caller's thread; each other stream has its own thread, which walks its kernels in
// order and hands each over once the events it waits on are recorded. The caller's
// thread runs the kernels handed over, one at a time, with its whole OpenMP team: so
// N streams never run more threads than one stream would (a second team would spin
// against the first on the same cores), and each kernel gets them all. On the host the
// streams take turns in an order the events allow, as on a device with one core.
//
// A stream thread wakes only when it can hand a kernel over: at the start of a run if
// its first kernel waits on nothing, else when the event it waits on is recorded. It
// hands over as many kernels as are ready, in its stream's order, and the caller's
// thread never waits for it to acknowledge one (each wakeup of a sleeping thread costs
// tens of microseconds on a virtual machine, and starting threads for every run cost
// ResNet-50's 4-stream plan more than its kernels gained).
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace geopt::ascend {

class StreamThreads {
 public:
  // stream_kernels[s]: stream s's kernels in order; waits[k], records[k]: kernel k's
  // events. All three are the executor's and outlive this object.
  StreamThreads(const std::vector<std::vector<size_t>>& stream_kernels, const std::vector<std::vector<uint32_t>>& waits,
                const std::vector<std::vector<uint32_t>>& records, size_t events);
  ~StreamThreads();  // stops and joins the threads
  StreamThreads(const StreamThreads&) = delete;
  StreamThreads& operator=(const StreamThreads&) = delete;

  // Runs every kernel once through run_kernel, on this thread, in an order the events
  // allow. One run at a time. Rethrows what run_kernel threw; throws geopt::Error when
  // every stream waits on an event nobody records (deadlock).
  void run(const std::function<void(size_t)>& run_kernel);

 private:
  void stop();  // tells the threads to end and joins them
  bool waits_met(size_t k) const;
  bool head_ready(size_t s) const;  // stream s's next kernel can be handed over
  void stream_main(size_t s);
  void wake_ready_streams();

  const std::vector<std::vector<size_t>>& stream_kernels_;
  const std::vector<std::vector<uint32_t>>& waits_;
  const std::vector<std::vector<uint32_t>>& records_;

  std::mutex mutex_;
  std::condition_variable runner_wake_;
  std::vector<std::condition_variable> stream_wake_;
  std::vector<std::thread> threads_;
  // The run's state, guarded by mutex_.
  bool stop_ = false;    // the destructor's
  std::exception_ptr failure_;
  std::vector<char> recorded_;  // per event
  std::vector<size_t> next_;    // per stream: its next kernel to hand over (index in its list)
  std::vector<char> in_run_;    // per stream: its thread takes part in this run and has not left it
  std::vector<size_t> handed_;  // kernels handed over, in order (room for all made before the run)
  size_t handed_taken_ = 0;     // how many of them the caller's thread took
  size_t busy_ = 0;             // stream threads still in this run
};

}  // namespace geopt::ascend
