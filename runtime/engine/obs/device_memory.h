// DeviceMemory: what the CUDA caching allocator holds on this rank's GPU (allocated, reserved,
// peak allocated), for /metrics and --summary. Kept free of LibTorch headers on purpose; the
// numbers are zero when the build has no CUDA (PPU_WITH_CUDA unset) or the device is the CPU.
#pragma once

namespace ppu {

struct CudaMemory {
  double allocated = 0, reserved = 0, peak = 0;
};

// `device_index` < 0 means the CPU: all zeros.
CudaMemory cuda_memory(int device_index);

}  // namespace ppu
