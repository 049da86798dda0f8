#include "engine/obs/matmul_flop_counter.h"

#include <ATen/record_function.h>

#include <atomic>
#include <cstring>
#include <stdexcept>

namespace ppu {

namespace {

std::atomic<uint64_t> g_multiply_adds{0};
std::atomic<bool> g_active{false};

int64_t dim_of(const c10::IValue& v, int64_t i) {
  const auto sizes = v.toTensor().sizes();
  return sizes[i < 0 ? sizes.size() + i : i];
}

std::unique_ptr<at::ObserverContext> on_op(const at::RecordFunction& fn) {
  const char* name = fn.name();
  const auto inputs = fn.inputs();
  // mm(a[m,k], b[k,n]); addmm(c, a, b); bmm(a[B,m,k], b[B,k,n]); baddbmm(c, a, b)
  int first = -1;
  bool batched = false;
  if (std::strcmp(name, "aten::mm") == 0) first = 0;
  else if (std::strcmp(name, "aten::addmm") == 0) first = 1;
  else if (std::strcmp(name, "aten::bmm") == 0) first = 0, batched = true;
  else if (std::strcmp(name, "aten::baddbmm") == 0) first = 1, batched = true;
  if (first < 0 || inputs.size() < static_cast<size_t>(first) + 2) return nullptr;
  const auto& a = inputs[first];
  const auto& b = inputs[first + 1];
  if (!a.isTensor() || !b.isTensor()) return nullptr;
  uint64_t macs = static_cast<uint64_t>(dim_of(a, -2)) * dim_of(a, -1) * dim_of(b, -1);
  if (batched) macs *= static_cast<uint64_t>(dim_of(a, 0));
  g_multiply_adds.fetch_add(macs, std::memory_order_relaxed);
  return nullptr;
}

}  // namespace

MatmulFlopCounter::MatmulFlopCounter() {
  if (g_active.exchange(true)) throw std::logic_error("MatmulFlopCounter instances must not overlap");
  g_multiply_adds = 0;
  handle_ =
      at::addGlobalCallback(at::RecordFunctionCallback(&on_op).needsInputs(true).scopes({at::RecordScope::FUNCTION}));
}

MatmulFlopCounter::~MatmulFlopCounter() {
  at::removeCallback(handle_);
  g_active = false;
}

double MatmulFlopCounter::flops() const { return 2.0 * static_cast<double>(g_multiply_adds.load()); }
void MatmulFlopCounter::reset() { g_multiply_adds = 0; }

void MatmulFlopCounter::add_multiply_adds(uint64_t multiply_adds) {
  if (g_active.load(std::memory_order_relaxed)) g_multiply_adds.fetch_add(multiply_adds, std::memory_order_relaxed);
}

}  // namespace ppu
