#include "engine/obs/device_memory.h"

#ifdef PPU_WITH_CUDA
#include <c10/cuda/CUDACachingAllocator.h>
#endif

namespace ppu {

CudaMemory cuda_memory(int device_index) {
  CudaMemory m;
#ifdef PPU_WITH_CUDA
  if (device_index < 0) return m;
  // Aggregate over small and large pools; the same field names exist in LibTorch 1.13 and 2.x.
  const auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(static_cast<c10::DeviceIndex>(device_index));
  constexpr size_t kAggregate = 0;  // StatType::AGGREGATE (its namespace moved between versions)
  m.allocated = static_cast<double>(stats.allocated_bytes[kAggregate].current);
  m.reserved = static_cast<double>(stats.reserved_bytes[kAggregate].current);
  m.peak = static_cast<double>(stats.allocated_bytes[kAggregate].peak);
#else
  (void)device_index;
#endif
  return m;
}

}  // namespace ppu
