// The least a recorder of torch's ops can do through RecordFunction (the
// question: can stepscope's default options cost <= 0.5x torch.profiler's per-op overhead?).
// bench/overhead.py builds it with torch.utils.cpp_extension and times a tiny op under it,
// beside torch.profiler and ITT's bare observer. Not part of stepscope: a measurement.
//
// Each op's start goes on a per-thread stack (RecordFunction opens and closes LIFO on a
// thread); at its end (name, start ns, end ns, thread, depth) is appended to a per-thread
// buffer reserved up front. Names are interned: fn.name() is not a stable pointer (autograd
// nodes' names are temporaries). BACKWARD_FUNCTION is observed too, or the autograd nodes
// torch.profiler shows (AddmmBackward0, AccumulateGrad) are missing.
#include <torch/extension.h>
#include <ATen/record_function.h>

#include <atomic>
#include <cstring>
#include <ctime>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace {

struct Event {
  const char* name;
  int64_t start_ns;
  int64_t end_ns;
  uint32_t thread;
  uint32_t depth;
};

struct ThreadBuffer {
  std::vector<Event> events;
  std::vector<int64_t> open_starts;
  std::unordered_map<size_t, const char*> names;  // name hash -> interned text
  uint32_t thread = 0;
};

std::mutex registry_mutex;
std::vector<ThreadBuffer*> registry;
std::unordered_map<std::string, std::string*> interned;
std::atomic<uint32_t> next_thread{0};
at::CallbackHandle handle = 0;

int64_t now_ns() {
  timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return now.tv_sec * 1000000000LL + now.tv_nsec;
}

ThreadBuffer& buffer() {
  thread_local ThreadBuffer* own = nullptr;
  if (own == nullptr) {
    own = new ThreadBuffer();
    own->events.reserve(1 << 20);
    own->open_starts.reserve(256);
    own->thread = next_thread++;
    std::lock_guard<std::mutex> guard(registry_mutex);
    registry.push_back(own);
  }
  return *own;
}

const char* intern(ThreadBuffer& own, const char* raw) {
  const char*& slot = own.names[std::hash<std::string_view>()(std::string_view(raw))];
  if (slot == nullptr || std::strcmp(slot, raw) != 0) {
    std::lock_guard<std::mutex> guard(registry_mutex);
    std::string*& text = interned[raw];
    if (text == nullptr) text = new std::string(raw);
    slot = text->c_str();
  }
  return slot;
}

std::unique_ptr<at::ObserverContext> on_start(const at::RecordFunction&) {
  buffer().open_starts.push_back(now_ns());
  return nullptr;
}

void on_end(const at::RecordFunction& fn, at::ObserverContext*) {
  int64_t end = now_ns();
  ThreadBuffer& own = buffer();
  int64_t start = own.open_starts.back();
  own.open_starts.pop_back();
  own.events.push_back({intern(own, fn.name()), start, end, own.thread, static_cast<uint32_t>(own.open_starts.size())});
}

}  // namespace

void start() {
  handle = at::addGlobalCallback(at::RecordFunctionCallback(on_start, on_end)
                                     .needsInputs(false)
                                     .needsOutputs(false)
                                     .needsIds(false)
                                     .scopes({at::RecordScope::FUNCTION, at::RecordScope::BACKWARD_FUNCTION, at::RecordScope::USER_SCOPE}));
}

// Stops observing; the number of events recorded (then dropped: the benchmark needs no
// Python object per event).
size_t stop() {
  at::removeCallback(handle);
  size_t count = 0;
  std::lock_guard<std::mutex> guard(registry_mutex);
  for (ThreadBuffer* own : registry) {
    count += own->events.size();
    own->events.clear();
  }
  return count;
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, module) {
  module.def("start", &start);
  module.def("stop", &stop);
}
