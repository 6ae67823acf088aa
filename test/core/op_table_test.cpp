// op_table_test.cpp - the core op table (spec §6.5, §6.11, §6.12).
#include <gtest/gtest.h>
#include <spmd/core/op_table.h>
#include <spmd/core/propagation.h>

#include <set>
#include <string>

namespace spmd::core {
namespace {

TEST(OpTable, NamesAndSpellingsAreUnique) {
  std::set<std::string> seen;
  for (const OpRow& r : op_table()) {
    EXPECT_TRUE(seen.insert(std::string(r.name)).second) << r.name;
    for (std::string_view s : r.spellings)
      EXPECT_TRUE(seen.insert(std::string(s)).second) << s;
  }
}

TEST(OpTable, EveryRowIsFoundByEverySpelling) {
  for (const OpRow& r : op_table()) {
    EXPECT_EQ(find_op(r.name), &r) << r.name;
    for (std::string_view s : r.spellings) EXPECT_EQ(find_op(s), &r) << s;
  }
}

TEST(OpTable, FindsCxxAndAtenSpellings) {
  const OpRow* t = find_op("transpose");
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(find_op("torch::transpose"), t);
  EXPECT_EQ(find_op("at::Tensor::transpose"), t);
  EXPECT_EQ(find_op(".transpose"), t);
  EXPECT_EQ(find_op("aten::transpose.int"), t);
  EXPECT_EQ(find_op("aten::transpose_"), t);
  EXPECT_EQ(find_op("aten::split_with_sizes"), find_op("split"));
  EXPECT_EQ(find_op("operator[]"), find_op("index"));
  EXPECT_EQ(find_op("concatenate"), find_op("cat"));
  EXPECT_EQ(find_op("no_such_op"), nullptr);
}

TEST(OpTable, Aliasing) {
  EXPECT_EQ(aliasing_of("aten::view"), Aliasing::View);
  EXPECT_EQ(aliasing_of("at::Tensor::narrow"), Aliasing::View);
  EXPECT_EQ(aliasing_of("aten::transpose_"), Aliasing::InPlace);
  EXPECT_EQ(aliasing_of(".add_"), Aliasing::InPlace);
  EXPECT_EQ(aliasing_of("aten::index_put_"), Aliasing::InPlace);
  EXPECT_EQ(aliasing_of("aten::index_put"), Aliasing::None);
  EXPECT_EQ(aliasing_of("add"), Aliasing::None);
  EXPECT_EQ(aliasing_of("at::relu_out"), Aliasing::Out);
  EXPECT_EQ(aliasing_of("__add__"), Aliasing::None);
  EXPECT_EQ(aliasing_of("__iadd__"), Aliasing::InPlace);
  EXPECT_EQ(aliasing_of("cat"), Aliasing::None);
  // Bookkeeping is not an in-place write of a tensor's values.
  EXPECT_EQ(aliasing_of("aten::requires_grad_"), Aliasing::None);
  EXPECT_STREQ(to_string(Aliasing::View), "view");
}

TEST(OpTable, MetadataFactoriesAndRanks) {
  EXPECT_TRUE(is_metadata_op("size"));
  EXPECT_TRUE(is_metadata_op("requires_grad_"));
  EXPECT_TRUE(is_metadata_op("_version"));
  EXPECT_FALSE(is_metadata_op("add"));
  EXPECT_TRUE(is_shape_factory("torch::zeros"));
  EXPECT_FALSE(is_shape_factory("zeros_like"));
  EXPECT_TRUE(has_same_rank_operands("stack"));
  EXPECT_TRUE(has_same_rank_operands("concat"));
  EXPECT_FALSE(has_same_rank_operands("add"));
}

TEST(OpTable, StockModules) {
  ASSERT_NE(find_stock_module("DropoutImpl"), nullptr);
  EXPECT_EQ(find_stock_module("DropoutImpl")->name, "dropout");
  EXPECT_EQ(find_stock_module("LinearImpl"), nullptr);  // holds weights
}

using Ints = std::vector<std::vector<std::optional<long>>>;

TEST(OpTable, ShardingArgsFromInts) {
  ShardingArgs t = sharding_args_from_ints("transpose", Ints{{0}, {1}});
  EXPECT_TRUE(t.has_dims);
  EXPECT_EQ(t.dims, (std::vector<long>{0, 1}));
  EXPECT_TRUE(t.known);

  ShardingArgs v = sharding_args_from_ints("view", Ints{{4, -1}});
  EXPECT_EQ(v.sizes.size(), 2u);
  EXPECT_FALSE(v.has_dims);

  ShardingArgs u = sharding_args_from_ints("unflatten", Ints{{1}, {2, 3}});
  EXPECT_EQ(u.dims, (std::vector<long>{1}));
  EXPECT_EQ(u.sizes.size(), 2u);

  ShardingArgs c = sharding_args_from_ints("cat", Ints{});
  EXPECT_EQ(c.dims, (std::vector<long>{0}));

  ShardingArgs s = sharding_args_from_ints("split", Ints{{2}});
  EXPECT_EQ(s.dims, (std::vector<long>{0}));
  ShardingArgs s1 = sharding_args_from_ints("split", Ints{{2}, {1}});
  EXPECT_EQ(s1.dims, (std::vector<long>{1}));

  EXPECT_FALSE(sharding_args_from_ints("repeat_interleave", Ints{{2}}).known);
  EXPECT_FALSE(sharding_args_from_ints("einsum", Ints{}).known);
  EXPECT_FALSE(sharding_args_from_ints("softmax", Ints{{std::nullopt}}).known);
  EXPECT_EQ(
      sharding_args_from_ints("layer_norm", Ints{{8, 16}}).normalized_ndim, 2);
  // Roll without dims rolls the flattened tensor: no dims read.
  EXPECT_FALSE(sharding_args_from_ints("roll", Ints{{1}}).has_dims);
  // Ops outside the table: default arguments.
  EXPECT_TRUE(sharding_args_from_ints("add", Ints{{1}}).known);
}

}  // namespace
}  // namespace spmd::core
