#include "runtime/train/hooks.h"

#include <mutex>
#include <vector>

namespace fg::runtime {
namespace {

std::mutex& HooksMutex() {
  static std::mutex mu;
  return mu;
}

std::vector<EpochHook>& Hooks() {
  static std::vector<EpochHook> hooks;
  return hooks;
}

}  // namespace

void AddEpochHook(EpochHook hook) {
  std::lock_guard<std::mutex> lock(HooksMutex());
  Hooks().push_back(std::move(hook));
}

void RunEpochHooks(int rank, int epoch) {
  std::vector<EpochHook> hooks;
  {
    std::lock_guard<std::mutex> lock(HooksMutex());
    hooks = Hooks();
  }
  for (const EpochHook& h : hooks) h(rank, epoch);
}

}  // namespace fg::runtime
