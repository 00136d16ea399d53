#pragma once
// A vector with inline storage for N elements: shapes and strides of ordinary
// ranks never touch the heap, which keeps per-run kernel bookkeeping allocation-free.
#include <algorithm>
#include <cassert>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <new>
#include <span>
#include <type_traits>

namespace ember {

template <typename T, size_t N>
class SmallVector {
  static_assert(std::is_trivially_copyable_v<T>, "SmallVector holds trivially copyable values");

 public:
  SmallVector() = default;
  explicit SmallVector(size_t n, T value = T()) { resize(n, value); }
  SmallVector(std::initializer_list<T> init) { assign(init.begin(), init.end()); }
  template <typename It>
  SmallVector(It first, It last) { assign(first, last); }
  SmallVector(std::span<const T> s) { assign(s.begin(), s.end()); }
  SmallVector(const SmallVector& o) { assign(o.begin(), o.end()); }
  SmallVector(SmallVector&& o) noexcept { move_from(o); }
  SmallVector& operator=(const SmallVector& o) {
    if (this != &o) assign(o.begin(), o.end());
    return *this;
  }
  SmallVector& operator=(SmallVector&& o) noexcept {
    if (this != &o) {
      release();
      move_from(o);
    }
    return *this;
  }
  ~SmallVector() { release(); }

  template <typename It>
  void assign(It first, It last) {
    size_t n = static_cast<size_t>(std::distance(first, last));
    size_ = 0;
    reserve(n);
    std::copy(first, last, data_);
    size_ = n;
  }

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  T* data() { return data_; }
  const T* data() const { return data_; }
  T* begin() { return data_; }
  T* end() { return data_ + size_; }
  const T* begin() const { return data_; }
  const T* end() const { return data_ + size_; }
  T& operator[](size_t i) { assert(i < size_); return data_[i]; }
  const T& operator[](size_t i) const { assert(i < size_); return data_[i]; }
  T& back() { assert(size_ > 0); return data_[size_ - 1]; }
  const T& back() const { assert(size_ > 0); return data_[size_ - 1]; }
  operator std::span<const T>() const { return {data_, size_}; }

  void reserve(size_t n) {
    if (n <= capacity_) return;
    size_t cap = std::max(n, capacity_ * 2);
    T* p = static_cast<T*>(std::malloc(cap * sizeof(T)));
    if (!p) throw std::bad_alloc();
    if (size_) std::memcpy(p, data_, size_ * sizeof(T));
    if (data_ != inline_) std::free(data_);
    data_ = p;
    capacity_ = cap;
  }
  void resize(size_t n, T value = T()) {
    reserve(n);
    for (size_t i = size_; i < n; ++i) data_[i] = value;
    size_ = n;
  }
  void push_back(T v) {
    if (size_ == capacity_) reserve(size_ + 1);
    data_[size_++] = v;
  }
  void pop_back() { assert(size_ > 0); --size_; }
  void clear() { size_ = 0; }
  T* insert(T* pos, T v) {
    size_t idx = static_cast<size_t>(pos - data_);
    push_back(v);
    std::rotate(data_ + idx, data_ + size_ - 1, data_ + size_);
    return data_ + idx;
  }
  T* erase(T* pos) {
    std::copy(pos + 1, end(), pos);
    --size_;
    return pos;
  }

  // A loop, not std::equal: that becomes a memcmp call, which costs more than
  // comparing the few dimensions of a shape (a plan's signature check per run).
  friend bool operator==(const SmallVector& a, const SmallVector& b) {
    if (a.size_ != b.size_) return false;
    for (size_t i = 0; i < a.size_; ++i) {
      if (!(a.data_[i] == b.data_[i])) return false;
    }
    return true;
  }

 private:
  void release() {
    if (data_ != inline_) std::free(data_);
    data_ = inline_;
    capacity_ = N;
    size_ = 0;
  }
  void move_from(SmallVector& o) {
    if (o.data_ == o.inline_) {
      std::memcpy(inline_, o.inline_, o.size_ * sizeof(T));
      data_ = inline_;
      capacity_ = N;
    } else {
      data_ = o.data_;
      capacity_ = o.capacity_;
      o.data_ = o.inline_;
      o.capacity_ = N;
    }
    size_ = o.size_;
    o.size_ = 0;
  }

  T inline_[N];
  T* data_ = inline_;
  size_t size_ = 0;
  size_t capacity_ = N;
};

}  // namespace ember
