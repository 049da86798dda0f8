// jemalloc's compile-time options for every LibTorch binary of the project (compiled into each
// executable that links ppu_runtime; jemalloc reads this symbol at its first allocation).
//
// Why: the [B, h, S, S] attention buffers and the MLP activations are larger than glibc's
// largest mmap threshold (32 MiB), so glibc unmaps them at every free and the next step
// page-faults them in again: 19 k minor faults per step at batch 8 x seq 128, ~360 k at
// 16 x 256, 17% of CPU time in the kernel (measured, docs/BENCHMARKS.md). A training step
// reuses the same sizes every time, so freed pages are kept for reuse, as PyTorch's CUDA caching
// allocator does: dirty pages are never purged (dirty_decay_ms:-1), and RSS stays at the
// high-water mark of one step. tests/engine/allocator_test.cpp checks both facts.
extern "C" {
// NOLINTNEXTLINE: the name and linkage are jemalloc's interface.
const char* malloc_conf = "dirty_decay_ms:-1,muzzy_decay_ms:-1";
}
