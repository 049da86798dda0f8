// The caching allocator (runtime/engine/cpu/allocator_config.cpp): every LibTorch binary runs on
// jemalloc with purging off, so a training step reuses the pages of the previous one instead of
// page-faulting its large activation buffers in again.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <torch/torch.h>

#include "engine/model/transformer.h"

using namespace ppu;

namespace {

long minor_faults() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_minflt;
}

}  // namespace

TEST(Allocator, JemallocIsTheProcessAllocatorAndNeverPurges) {
  using Mallctl = int (*)(const char*, void*, size_t*, void*, size_t);
  auto mallctl = reinterpret_cast<Mallctl>(dlsym(RTLD_DEFAULT, "mallctl"));
  ASSERT_NE(mallctl, nullptr) << "jemalloc is not loaded";
  ssize_t dirty = 0, muzzy = 0;
  size_t size = sizeof(dirty);
  ASSERT_EQ(mallctl("opt.dirty_decay_ms", &dirty, &size, nullptr, 0), 0);
  ASSERT_EQ(mallctl("opt.muzzy_decay_ms", &muzzy, &size, nullptr, 0), 0);
  EXPECT_EQ(dirty, -1);
  EXPECT_EQ(muzzy, -1);
  // malloc itself must be jemalloc's, not glibc's: a live allocation is counted by jemalloc.
  void* probe = malloc(64 << 20);
  asm volatile("" : : "g"(probe) : "memory");  // keep the compiler from eliding the malloc/free pair
  size_t allocated = 0, len = sizeof(allocated);
  uint64_t epoch = 1;
  size_t elen = sizeof(epoch);
  mallctl("epoch", &epoch, &elen, &epoch, elen);
  ASSERT_EQ(mallctl("stats.allocated", &allocated, &len, nullptr, 0), 0);
  EXPECT_GE(allocated, size_t{64} << 20);
  free(probe);
}

TEST(Allocator, TrainingStepsReuseTheirPages) {
  torch::set_num_threads(1);
  ModelSpec m = *model_preset("tiny");
  m.seq_len = 512;  // [B, h, S, S] fp32 scores: 4 x 4 x 512 x 512 x 4 B = 16 MiB per buffer
  const SlicePlan plan(m, SliceMode::Mlp, 2, 2, 0);
  Transformer model(m, plan, 7);
  auto gen = at::detail::createCPUGenerator(3);
  const auto tokens = at::randint(0, m.vocab, {4, m.seq_len + 1}, gen, torch::kLong);
  auto step = [&] {
    auto loss = model.loss(tokens);
    loss.backward();
    for (const auto& t : model.trainable()) t.mutable_grad() = torch::Tensor();
  };
  step();
  step();  // warm-up: the allocator's cache now holds one step's buffers
  const long before = minor_faults();
  const int steps = 3;
  for (int i = 0; i < steps; ++i) step();
  const double per_step = static_cast<double>(minor_faults() - before) / steps;
  const double one_score_buffer_pages = 4.0 * m.heads * m.seq_len * m.seq_len * 4 / 4096;
  RecordProperty("minor_faults_per_step", std::to_string(per_step));
  // glibc returns each such buffer to the OS at free: thousands of faults per step (every scores,
  // probs and their gradients in every layer). With the cache, only stray small pages remain.
  // A documented margin on a count, not on floating point: 5 % of one 16 MiB buffer's 4096 pages
  // (205 faults per step) against the ≥ 4096·(several buffers) glibc would take, so the bound
  // splits the two behaviours by more than an order of magnitude either way. CPU-independent:
  // one intra-op thread (set above), so no per-thread arenas or caches depend on the core count;
  // 4 KiB pages (x86-64); transparent huge pages could only lower the count.
  constexpr double kFractionOfOneBuffer = 0.05;
  EXPECT_LT(per_step, kFractionOfOneBuffer * one_score_buffer_pages) << per_step << " minor faults per step";
}
