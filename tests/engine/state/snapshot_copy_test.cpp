// snapshot_copy (engine/state/checkpoint_format.h): a background save's copy of a tensor is equal
// to it, owns its storage (later training does not reach it), keeps the dtype, shape and
// requires_grad the archive records, and takes clone()'s path for what memcpy cannot copy.
#include <gtest/gtest.h>

#include "engine/state/checkpoint_format.h"

namespace {

TEST(SnapshotCopy, IsEqualAndOwnsItsStorage) {
  auto live = torch::randn({7, 5});
  const auto before = live.clone();
  const auto copy = ppu::snapshot_copy(live);
  EXPECT_TRUE(torch::equal(copy, live));
  EXPECT_NE(copy.data_ptr(), live.data_ptr());
  live.add_(1.0);  // training goes on
  EXPECT_FALSE(torch::equal(copy, live));
  EXPECT_TRUE(torch::equal(copy, before));
}

TEST(SnapshotCopy, KeepsDtypeShapeAndRequiresGrad) {
  const auto param = torch::randn({3, 4}, torch::kBFloat16).set_requires_grad(true);
  const auto copy = ppu::snapshot_copy(param);
  EXPECT_EQ(copy.scalar_type(), torch::kBFloat16);
  EXPECT_EQ(copy.sizes(), param.sizes());
  EXPECT_TRUE(copy.requires_grad());
  EXPECT_TRUE(copy.is_leaf());  // no graph back to the live parameter
  EXPECT_FALSE(ppu::snapshot_copy(torch::ones({2})).requires_grad());
}

TEST(SnapshotCopy, CopiesViewsAndEmptyTensors) {
  const auto base = torch::arange(24, torch::kFloat32).reshape({4, 6});
  const auto column = base.select(1, 2);      // strided
  const auto shifted = base.narrow(0, 1, 2);  // contiguous, at an offset into its storage
  EXPECT_TRUE(torch::equal(ppu::snapshot_copy(column), column));
  EXPECT_TRUE(torch::equal(ppu::snapshot_copy(shifted), shifted));
  EXPECT_EQ(ppu::snapshot_copy(torch::empty({0})).numel(), 0);
}

TEST(SnapshotCopy, AsSavedCopiesOnlyWhenCloned) {
  const auto live = torch::ones({4});
  EXPECT_EQ(ppu::as_saved(live, ppu::TensorCopy::Shared).data_ptr(), live.data_ptr());
  EXPECT_NE(ppu::as_saved(live, ppu::TensorCopy::Cloned).data_ptr(), live.data_ptr());
  EXPECT_FALSE(ppu::as_saved(torch::Tensor(), ppu::TensorCopy::Cloned).defined());
}

}  // namespace
