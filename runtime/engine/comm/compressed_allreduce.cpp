#include "engine/comm/compressed_allreduce.h"

#include <chrono>
#include <stdexcept>
#include <vector>

#include "core/cost_model.h"

namespace ppu {

namespace {

// Tags: 14 bits of sequence, 1 bit of phase, 15 bits of step; stays a positive int.
int message_tag(uint32_t sequence, int phase, int step) {
  return static_cast<int>(((sequence & 0x3FFFu) << 16) | (static_cast<uint32_t>(phase) << 15) |
                          static_cast<uint32_t>(step));
}

class Exchange {
 public:
  Exchange(Collectives& col, const WireCodec& codec, const WireLayout& layout, uint32_t sequence)
      : col_(col),
        codec_(codec),
        chunk_(layout.chunk_elements),
        bytes_(layout.chunk_bytes),
        sequence_(sequence),
        k_(col.world_size()),
        r_(col.rank()) {}

  torch::Tensor payload() { return torch::empty({bytes_}, torch::kUInt8); }
  uint8_t* data(torch::Tensor& p) { return p.data_ptr<uint8_t>(); }
  float* chunk(float* base, int c) { return base + static_cast<int64_t>(c) * chunk_; }

  void encode(const float* src, torch::Tensor& dst) { codec_.encode(src, chunk_, data(dst)); }

  // Encodes `values` (one chunk) with the residual `residual` added when given, leaves the
  // decoded payload in `values` and the new residual in `residual`.
  void encode_with_feedback(float* values, float* residual, torch::Tensor& dst) {
    if (residual) {
      for (int64_t i = 0; i < chunk_; ++i) values[i] += residual[i];
      encode(values, dst);
      codec_.decode(data(dst), chunk_, residual);
      for (int64_t i = 0; i < chunk_; ++i) std::swap(values[i], residual[i]);  // values <- decoded
      for (int64_t i = 0; i < chunk_; ++i) residual[i] -= values[i];           // residual <- x - decoded
    } else {
      encode(values, dst);
      codec_.decode(data(dst), chunk_, values);
    }
  }

  Collectives::Pending send(torch::Tensor& p, int dst, int phase, int step) {
    stats.bytes_sent += p.nbytes();
    return col_.send(p, dst, message_tag(sequence_, phase, step));
  }
  Collectives::Pending recv(torch::Tensor& p, int src, int phase, int step) {
    stats.bytes_received += p.nbytes();
    return col_.recv(p, src, message_tag(sequence_, phase, step));
  }

  void ring(float* buf, float* owner_residual) {
    const int next = (r_ + 1) % k_, prev = (r_ + k_ - 1) % k_;
    auto mod = [&](int c) { return ((c % k_) + k_) % k_; };
    // Reduce-scatter: after K-1 steps rank r holds the full sum of chunk r+1.
    for (int s = 0; s < k_ - 1; ++s) {
      auto out = payload(), in = payload();
      encode(chunk(buf, mod(r_ - s)), out);
      auto got = recv(in, prev, 0, s);
      auto sent = send(out, next, 0, s);
      got();
      sent();
      codec_.decode_add(data(in), chunk_, chunk(buf, mod(r_ - s - 1)));
    }
    // All-gather: the owner's payload travels around the ring as bytes, never re-encoded.
    auto carried = payload();
    encode_with_feedback(chunk(buf, mod(r_ + 1)), owner_residual, carried);
    for (int s = 0; s < k_ - 1; ++s) {
      auto in = payload();
      auto got = recv(in, prev, 1, s);
      auto sent = send(carried, next, 1, s);
      got();
      sent();
      codec_.decode(data(in), chunk_, chunk(buf, mod(r_ - s)));
      carried = in;
    }
  }

  void direct(float* buf, float* owner_residual) {
    // Reduce-scatter as one all-to-all: chunk p goes to rank p, encoded once.
    std::vector<torch::Tensor> in(k_), out(k_);
    std::vector<Collectives::Pending> waits;
    for (int p = 0; p < k_; ++p) {
      if (p == r_) continue;
      in[p] = payload();
      waits.push_back(recv(in[p], p, 0, 0));
    }
    for (int p = 0; p < k_; ++p) {
      if (p == r_) continue;
      out[p] = payload();
      encode(chunk(buf, p), out[p]);
      waits.push_back(send(out[p], p, 0, 0));
    }
    for (auto& w : waits) w();
    waits.clear();
    // Sum in rank order, in fp32; this rank's own contribution never left it.
    std::vector<float> sum(chunk_, 0.0f);
    for (int p = 0; p < k_; ++p) {
      if (p == r_) {
        const float* own = chunk(buf, r_);
        for (int64_t i = 0; i < chunk_; ++i) sum[i] += own[i];
      } else {
        codec_.decode_add(data(in[p]), chunk_, sum.data());
      }
    }
    std::copy(sum.begin(), sum.end(), chunk(buf, r_));
    // All-gather: the owner's encoded sum to every rank.
    auto mine = payload();
    encode_with_feedback(chunk(buf, r_), owner_residual, mine);
    for (int p = 0; p < k_; ++p) {
      if (p == r_) continue;
      waits.push_back(recv(in[p], p, 1, 0));
    }
    for (int p = 0; p < k_; ++p)
      if (p != r_) waits.push_back(send(mine, p, 1, 0));
    for (auto& w : waits) w();
    for (int p = 0; p < k_; ++p)
      if (p != r_) codec_.decode(data(in[p]), chunk_, chunk(buf, p));
  }

  AllreduceStats stats;

 private:
  Collectives& col_;
  WireCodec codec_;
  int64_t chunk_, bytes_;
  uint32_t sequence_;
  int k_, r_;
};

}  // namespace

AllreduceStats compressed_allreduce(Collectives& col, torch::Tensor& flat, WireDtype dtype, int64_t row_length,
                                    Collective schedule, uint32_t sequence, FeedbackState* feedback) {
  const auto start = std::chrono::steady_clock::now();
  if (col.world_size() == 1) return {};
  if (flat.scalar_type() != torch::kFloat32 || !flat.device().is_cpu() || !flat.is_contiguous() || flat.dim() != 1)
    throw std::invalid_argument("compressed_allreduce needs a flat contiguous fp32 CPU tensor");
  const int K = col.world_size();
  const int64_t n = flat.numel();
  const WireLayout layout = wire_layout(n, K, dtype, row_length);
  const WireCodec codec{dtype, layout.block};
  const bool lossy = codec.dtype != WireDtype::Fp32;

  auto buffer = torch::zeros({layout.padded_elements(K)}, torch::kFloat32);
  buffer.narrow(0, 0, n).copy_(flat);
  auto* buf = buffer.data_ptr<float>();
  float* owner_residual = nullptr;
  if (feedback && lossy) {
    if (!feedback->contribution.defined() || feedback->contribution.numel() != buffer.numel()) {
      feedback->contribution = torch::zeros_like(buffer);
      feedback->result = torch::zeros({layout.chunk_elements}, torch::kFloat32);
    }
    // This rank's contribution as it will be decoded, the residual kept for the next round.
    auto* residual = feedback->contribution.data_ptr<float>();
    std::vector<uint8_t> scratch(static_cast<size_t>(layout.chunk_bytes));
    for (int c = 0; c < K; ++c) {
      float* x = buf + c * layout.chunk_elements;
      float* e = residual + c * layout.chunk_elements;
      for (int64_t i = 0; i < layout.chunk_elements; ++i) x[i] += e[i];
      codec.encode(x, layout.chunk_elements, scratch.data());
      codec.decode(scratch.data(), layout.chunk_elements, e);
      for (int64_t i = 0; i < layout.chunk_elements; ++i) {
        const float decoded = e[i];
        e[i] = x[i] - decoded;
        x[i] = decoded;
      }
    }
    owner_residual = feedback->result.data_ptr<float>();
  }

  Exchange ex(col, codec, layout, sequence);
  if (schedule == Collective::Ring) ex.ring(buf, owner_residual);
  else ex.direct(buf, owner_residual);
  flat.copy_(buffer.narrow(0, 0, n));
  ex.stats.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return ex.stats;
}

}  // namespace ppu
