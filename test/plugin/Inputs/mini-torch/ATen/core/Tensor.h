// Test stand-in for libtorch's <ATen/core/Tensor.h> (see
// c10/core/ScalarType.h). at::Tensor with the usual methods and operators;
// like the real class it is non-trivially copyable (an intrusive pointer).
#pragma once

#include <c10/core/ScalarType.h>
#include <c10/util/Optional.h>

#include <string>
#include <tuple>
#include <vector>

namespace at {

using c10::ArrayRef;
using c10::IntArrayRef;
using c10::Scalar;
using c10::ScalarType;
using c10::kBFloat16;
using c10::kBool;
using c10::kFloat;
using c10::kHalf;
using c10::kLong;

struct TensorImpl;
namespace indexing {
class TensorIndex;
}  // namespace indexing

class TensorBase {
 public:
  TensorBase();
  TensorBase(const TensorBase&);
  TensorBase(TensorBase&&) noexcept;
  ~TensorBase();
  TensorBase& operator=(const TensorBase&) &;
  int64_t dim() const;
  int64_t numel() const;
  IntArrayRef sizes() const;
  int64_t size(int64_t d) const;
  bool defined() const;
  bool requires_grad() const;
  ScalarType scalar_type() const;

 protected:
  TensorImpl* impl_;
};

class Tensor : public TensorBase {
 public:
  Tensor();
  Tensor(const Tensor&);
  Tensor(Tensor&&) noexcept;
  ~Tensor();
  Tensor& operator=(const Tensor&) &;
  Tensor& operator=(Tensor&&) &;
  Tensor& operator=(const Scalar&) &;

  // Pointwise and reductions.
  Tensor add(const Tensor& other, const Scalar& alpha = 1) const;
  Tensor add(const Scalar& other, const Scalar& alpha = 1) const;
  Tensor& add_(const Tensor& other, const Scalar& alpha = 1) const;
  Tensor sub(const Tensor& other, const Scalar& alpha = 1) const;
  Tensor& sub_(const Tensor& other, const Scalar& alpha = 1) const;
  Tensor mul(const Tensor& other) const;
  Tensor mul(const Scalar& other) const;
  Tensor& mul_(const Tensor& other) const;
  Tensor& mul_(const Scalar& other) const;
  Tensor div(const Tensor& other) const;
  Tensor div(const Scalar& other) const;
  Tensor& div_(const Tensor& other) const;
  Tensor neg() const;
  Tensor exp() const;
  Tensor tanh() const;
  Tensor relu() const;
  Tensor& relu_() const;
  Tensor sigmoid() const;
  Tensor softmax(int64_t dim) const;
  Tensor pow(const Scalar& exponent) const;
  Tensor sum() const;
  Tensor sum(IntArrayRef dim, bool keepdim = false) const;
  Tensor mean() const;
  Tensor mean(IntArrayRef dim, bool keepdim = false) const;
  // As in libtorch: var/std(unbiased) over every dim, var/std over dims, and
  // the C++-only var/std(int dim) that makes x.var(1) reduce dim 1.
  Tensor var(bool unbiased) const;
  Tensor var(IntArrayRef dim, bool unbiased, bool keepdim = false) const;
  Tensor var(int dim) const;
  Tensor std(bool unbiased) const;
  Tensor std(IntArrayRef dim, bool unbiased, bool keepdim = false) const;
  Tensor std(int dim) const;
  Tensor norm(const Scalar& p = 2) const;
  Tensor norm(const Scalar& p, IntArrayRef dim, bool keepdim = false) const;
  Tensor amax(IntArrayRef dim = {}, bool keepdim = false) const;
  Tensor logsumexp(IntArrayRef dim, bool keepdim = false) const;
  Tensor prod(int64_t dim, bool keepdim = false) const;
  Tensor clone() const;
  Tensor detach() const;
  void backward(const Tensor& gradient = {}) const;
  Tensor& zero_() const;
  Tensor& copy_(const Tensor& src) const;
  Scalar item() const;
  template <typename T>
  T item() const;
  // Contractions.
  Tensor matmul(const Tensor& other) const;
  Tensor mm(const Tensor& other) const;
  Tensor bmm(const Tensor& other) const;
  // Shape.
  Tensor t() const;
  Tensor transpose(int64_t a, int64_t b) const;
  Tensor view(IntArrayRef size) const;
  Tensor reshape(IntArrayRef size) const;
  Tensor contiguous() const;
  Tensor flatten(int64_t start = 0, int64_t end = -1) const;
  Tensor unsqueeze(int64_t d) const;
  Tensor squeeze(int64_t d) const;
  Tensor narrow(int64_t d, int64_t start, int64_t length) const;
  Tensor to(ScalarType t) const;
  /// libtorch: the dtype and device of `other`, not its values.
  Tensor to(const Tensor& other, bool non_blocking = false,
            bool copy = false) const;
  Tensor permute(IntArrayRef dims) const;
  Tensor expand(IntArrayRef size) const;
  Tensor select(int64_t d, int64_t index) const;
  Tensor slice(int64_t d, int64_t start, int64_t end) const;
  std::vector<Tensor> chunk(int64_t chunks, int64_t d = 0) const;
  std::vector<Tensor> split(int64_t split_size, int64_t d = 0) const;
  std::vector<Tensor> unbind(int64_t d = 0) const;
  // Masks, indexing, more pointwise and reductions.
  Tensor masked_fill(const Tensor& mask, const Scalar& value) const;
  Tensor& masked_fill_(const Tensor& mask, const Scalar& value) const;
  Tensor lt(const Scalar& other) const;
  Tensor ge(const Scalar& other) const;
  Tensor logical_or(const Tensor& other) const;
  Tensor eq(const Tensor& other) const;
  Tensor gather(int64_t d, const Tensor& index) const;
  Tensor index_select(int64_t d, const Tensor& index) const;
  Tensor& index_add_(int64_t d, const Tensor& index,
                     const Tensor& source) const;
  Tensor log_softmax(int64_t d) const;
  Tensor log() const;
  Tensor rsqrt() const;
  Tensor square() const;
  std::tuple<Tensor, Tensor> max(int64_t d, bool keepdim = false) const;
  Tensor max() const;
  std::tuple<Tensor, Tensor> topk(int64_t k, int64_t d = -1,
                                  bool largest = true,
                                  bool sorted = true) const;
  Tensor logical_not() const;
  Tensor type_as(const Tensor& other) const;
  Tensor expand_as(const Tensor& other) const;
  Tensor triu(int64_t diagonal = 0) const;
  Tensor tril(int64_t diagonal = 0) const;
  Tensor& triu_(int64_t diagonal = 0) const;
  Tensor& tril_(int64_t diagonal = 0) const;
  Tensor roll(IntArrayRef shifts, IntArrayRef dims = {}) const;
  Tensor flip(IntArrayRef dims) const;
  Tensor cumsum(int64_t d) const;
  Tensor repeat_interleave(int64_t repeats,
                           c10::optional<int64_t> dim = c10::nullopt) const;
  Tensor repeat_interleave(const Tensor& repeats,
                           c10::optional<int64_t> dim = c10::nullopt) const;
  // Operators that are members in libtorch.
  Tensor operator-() const;
  Tensor& operator+=(const Tensor& other) &;
  Tensor& operator+=(const Scalar& other) &;
  Tensor& operator-=(const Tensor& other) &;
  Tensor& operator*=(const Tensor& other) &;
  Tensor& operator*=(const Scalar& other) &;
  Tensor& operator/=(const Tensor& other) &;
  Tensor& operator/=(const Scalar& other) &;
  Tensor operator[](int64_t index) const;
  // Indexing with at::indexing::TensorIndex (ATen/TensorIndexing.h).
  Tensor index(ArrayRef<indexing::TensorIndex> indices) const;
  Tensor& index_put_(ArrayRef<indexing::TensorIndex> indices,
                     const Tensor& rhs);
  Tensor& index_put_(ArrayRef<indexing::TensorIndex> indices,
                     const Scalar& v);
};

namespace indexing {
/// libtorch: a Python-style slice `start:stop:step` (c10::nullopt = open).
struct Slice {
  Slice(c10::optional<int64_t> start = c10::nullopt,
        c10::optional<int64_t> stop = c10::nullopt,
        c10::optional<int64_t> step = c10::nullopt);
};
struct EllipsisIndexType {};
extern const EllipsisIndexType Ellipsis;
/// libtorch: one subscript (a tensor, a bool mask, an integer, a slice, ...).
class TensorIndex {
 public:
  TensorIndex(const Tensor& tensor);
  TensorIndex(Slice slice);
  TensorIndex(int64_t integer);
  TensorIndex(int integer);
  TensorIndex(EllipsisIndexType);
};
}  // namespace indexing

using TensorList = ArrayRef<Tensor>;

// Operators that are free functions in libtorch (ATen/TensorOperators.h).
Tensor operator+(const Tensor& a, const Tensor& b);
Tensor operator+(const Tensor& a, const Scalar& b);
Tensor operator+(const Scalar& a, const Tensor& b);
Tensor operator-(const Tensor& a, const Tensor& b);
Tensor operator-(const Tensor& a, const Scalar& b);
Tensor operator-(const Scalar& a, const Tensor& b);
Tensor operator*(const Tensor& a, const Tensor& b);
Tensor operator*(const Tensor& a, const Scalar& b);
Tensor operator*(const Scalar& a, const Tensor& b);
Tensor operator/(const Tensor& a, const Tensor& b);
Tensor operator/(const Tensor& a, const Scalar& b);
Tensor operator/(const Scalar& a, const Tensor& b);
Tensor operator>(const Tensor& a, const Scalar& b);
Tensor operator<(const Tensor& a, const Scalar& b);
Tensor operator>=(const Tensor& a, const Scalar& b);
Tensor operator|(const Tensor& a, const Tensor& b);
Tensor operator&(const Tensor& a, const Tensor& b);
Tensor operator^(const Tensor& a, const Tensor& b);
Tensor operator~(const Tensor& a);
Tensor operator!=(const Tensor& a, const Scalar& b);
Tensor operator<=(const Tensor& a, const Scalar& b);
Tensor operator==(const Tensor& a, const Scalar& b);

// Free functions (ATen/Functions.h).
Tensor add(const Tensor& a, const Tensor& b, const Scalar& alpha = 1);
Tensor sub(const Tensor& a, const Tensor& b, const Scalar& alpha = 1);
Tensor mul(const Tensor& a, const Tensor& b);
Tensor div(const Tensor& a, const Tensor& b);
Tensor matmul(const Tensor& a, const Tensor& b);
Tensor mm(const Tensor& a, const Tensor& b);
Tensor bmm(const Tensor& a, const Tensor& b);
Tensor addmm(const Tensor& self, const Tensor& m1, const Tensor& m2,
             const Scalar& beta = 1, const Scalar& alpha = 1);
Tensor einsum(const std::string& eq, TensorList tensors);
Tensor relu(const Tensor& x);
Tensor& relu_out(Tensor& out, const Tensor& x);
Tensor gelu(const Tensor& x);
Tensor tanh(const Tensor& x);
Tensor exp(const Tensor& x);
Tensor sigmoid(const Tensor& x);
Tensor softmax(const Tensor& x, int64_t dim);
Tensor dropout(const Tensor& x, double p, bool train);
// As in libtorch 1.13, weights and biases of these ops are optional.
Tensor layer_norm(const Tensor& x, IntArrayRef shape,
                  const c10::optional<Tensor>& weight = {},
                  const c10::optional<Tensor>& bias = {}, double eps = 1e-5,
                  bool cudnn_enable = true);
Tensor linear(const Tensor& x, const Tensor& w,
              const c10::optional<Tensor>& b = {});
Tensor embedding(const Tensor& weight, const Tensor& indices,
                 int64_t padding_idx = -1, bool scale_grad_by_freq = false,
                 bool sparse = false);
Tensor cross_entropy_loss(const Tensor& self, const Tensor& target,
                          const c10::optional<Tensor>& weight = {},
                          int64_t reduction = 1, int64_t ignore_index = -100,
                          double label_smoothing = 0.0);
Tensor log_softmax(const Tensor& x, int64_t dim);
Tensor silu(const Tensor& x);
Tensor rsqrt(const Tensor& x);
Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b);
Tensor where(const Tensor& cond, const Scalar& a, const Tensor& b);
Tensor where(const Tensor& cond, const Tensor& a, const Scalar& b);
Tensor where(const Tensor& cond, const Scalar& a, const Scalar& b);
Tensor logical_not(const Tensor& x);
Tensor triu(const Tensor& x, int64_t diagonal = 0);
Tensor tril(const Tensor& x, int64_t diagonal = 0);
Tensor roll(const Tensor& x, IntArrayRef shifts, IntArrayRef dims = {});
Tensor flip(const Tensor& x, IntArrayRef dims);
Tensor cumsum(const Tensor& x, int64_t dim);
Tensor masked_fill(const Tensor& x, const Tensor& mask, const Scalar& value);
Tensor scaled_dot_product_attention(const Tensor& query, const Tensor& key,
                                    const Tensor& value,
                                    const c10::optional<Tensor>& attn_mask = {},
                                    double dropout_p = 0.0,
                                    bool is_causal = false,
                                    c10::optional<double> scale = c10::nullopt);
std::vector<Tensor> chunk(const Tensor& x, int64_t chunks, int64_t dim = 0);
std::vector<Tensor> split(const Tensor& x, int64_t split_size,
                          int64_t dim = 0);
std::vector<Tensor> unbind(const Tensor& x, int64_t dim = 0);
Tensor sum(const Tensor& x);
Tensor mean(const Tensor& x);
Tensor norm(const Tensor& x, const Scalar& p, IntArrayRef dim,
            bool keepdim = false);
Tensor var(const Tensor& x, IntArrayRef dim, bool unbiased,
           bool keepdim = false);
Tensor std(const Tensor& x, IntArrayRef dim, bool unbiased,
           bool keepdim = false);
Tensor transpose(const Tensor& x, int64_t a, int64_t b);
Tensor t(const Tensor& x);
Tensor cat(TensorList tensors, int64_t dim = 0);
Tensor stack(TensorList tensors, int64_t dim = 0);
Tensor zeros(IntArrayRef size);
Tensor ones(IntArrayRef size);
Tensor randn(IntArrayRef size);
Tensor zeros_like(const Tensor& x);
Tensor empty(IntArrayRef size);
Tensor arange(const Scalar& end);
Tensor one_hot(const Tensor& self, int64_t num_classes = -1);

}  // namespace at
