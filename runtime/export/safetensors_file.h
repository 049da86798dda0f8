// safetensors_file: writes named tensors in the safetensors format (the Hugging Face format
// PyTorch, JAX and most inference stacks load): an 8-byte little-endian header length N, N
// bytes of JSON {name: {dtype, shape, data_offsets: [begin, end)}, "__metadata__": {str: str}}
// padded with spaces to a multiple of 8, then the tensors' bytes back to back, in the order
// given, with no gaps. The file is written atomically. Hand-written: the format is a JSON
// header and raw bytes, and Debian packages no C++ safetensors library.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace ppu {

// dtypes: float32 (F32), bfloat16 (BF16), float16 (F16), int64 (I64); others throw. Tensors
// are copied to contiguous CPU memory (little-endian hosts only, as the format requires).
void write_safetensors(const std::string& path, const std::vector<std::pair<std::string, torch::Tensor>>& tensors,
                       const std::map<std::string, std::string>& metadata = {});

// The Hugging Face layout of a model's weights in `dir`: model.safetensors when the tensors'
// bytes fit `max_shard_bytes`, else model-00001-of-0000N.safetensors ... (tensors in the given
// order, a new shard whenever the next tensor would overflow; a tensor is never split) plus
// model.safetensors.index.json {"metadata": {"total_size"}, "weight_map": {name: file}}, as
// transformers' save_pretrained writes. Every shard carries `metadata`. Returns the files written.
std::vector<std::string> write_safetensors_model(const std::string& dir,
                                                 const std::vector<std::pair<std::string, torch::Tensor>>& tensors,
                                                 uint64_t max_shard_bytes,
                                                 const std::map<std::string, std::string>& metadata = {});

}  // namespace ppu
