// SmallVector<T, N>: a vector that keeps up to N elements inside itself and only then allocates. Shapes
// (rarely above rank 4) and client lists (most values have one reader) are copied and built on every node a
// pass creates or checks; kept inline they cost no allocation and no pointer chase to scattered heap memory,
// which on graphs of 100k nodes is most of the cost of a walk. Elements are trivially copyable (Dim, Use).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <iterator>
#include <type_traits>

namespace tg::ir {

template <typename T, uint32_t N>
class SmallVector {
  static_assert(std::is_trivially_copyable_v<T>, "SmallVector copies its elements bytewise");
  static_assert(N > 0);

public:
  using value_type = T;
  using size_type = size_t;
  using iterator = T *;
  using const_iterator = const T *;
  using reference = T &;
  using const_reference = const T &;

  SmallVector() {}
  SmallVector(std::initializer_list<T> items) { assign(items.begin(), items.end()); }
  template <std::input_iterator It>
  SmallVector(It first, It last) {
    assign(first, last);
  }
  explicit SmallVector(size_t count, const T &value = T()) { resize(count, value); }
  SmallVector(const SmallVector &other) { assign(other.begin(), other.end()); }
  SmallVector(SmallVector &&other) noexcept { take(other); }
  SmallVector &operator=(const SmallVector &other) {
    if (this != &other) assign(other.begin(), other.end());
    return *this;
  }
  SmallVector &operator=(SmallVector &&other) noexcept {
    if (this != &other) {
      release();
      take(other);
    }
    return *this;
  }
  SmallVector &operator=(std::initializer_list<T> items) {
    assign(items.begin(), items.end());
    return *this;
  }
  ~SmallVector() { release(); }

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  size_t capacity() const { return capacity_; }
  T *data() { return capacity_ > N ? heap_ : inline_; }
  const T *data() const { return capacity_ > N ? heap_ : inline_; }
  T *begin() { return data(); }
  T *end() { return data() + size_; }
  const T *begin() const { return data(); }
  const T *end() const { return data() + size_; }
  auto rbegin() { return std::reverse_iterator<T *>(end()); }
  auto rend() { return std::reverse_iterator<T *>(begin()); }
  auto rbegin() const { return std::reverse_iterator<const T *>(end()); }
  auto rend() const { return std::reverse_iterator<const T *>(begin()); }
  T &operator[](size_t i) { return data()[i]; }
  const T &operator[](size_t i) const { return data()[i]; }
  T &front() { return data()[0]; }
  const T &front() const { return data()[0]; }
  T &back() { return data()[size_ - 1]; }
  const T &back() const { return data()[size_ - 1]; }

  void clear() { size_ = 0; }
  void reserve(size_t count) {
    if (count > capacity_) grow(count);
  }
  void push_back(const T &value) {
    if (size_ == capacity_) {
      T copy = value; // `value` may live in this vector
      grow(2 * capacity_);
      data()[size_++] = copy;
      return;
    }
    data()[size_++] = value;
  }
  template <typename... Args>
  T &emplace_back(Args &&...args) {
    push_back(T(std::forward<Args>(args)...));
    return back();
  }
  void pop_back() { --size_; }
  void resize(size_t count, const T &value = T()) {
    reserve(count);
    std::fill(data() + std::min<size_t>(size_, count), data() + count, value);
    size_ = static_cast<uint32_t>(count);
  }
  template <std::input_iterator It>
  void assign(It first, It last) {
    clear();
    if constexpr (std::forward_iterator<It>) reserve(static_cast<size_t>(std::distance(first, last)));
    for (; first != last; ++first)
      push_back(*first);
  }
  void assign(size_t count, const T &value) {
    clear();
    resize(count, value);
  }
  T *insert(const T *position, const T &value) {
    size_t at = static_cast<size_t>(position - begin());
    T copy = value;
    push_back(copy);
    std::rotate(begin() + at, end() - 1, end());
    return begin() + at;
  }
  template <std::input_iterator It>
  T *insert(const T *position, It first, It last) {
    size_t at = static_cast<size_t>(position - begin()), before = size_;
    for (; first != last; ++first)
      push_back(*first);
    std::rotate(begin() + at, begin() + before, end());
    return begin() + at;
  }
  T *erase(const T *position) { return erase(position, position + 1); }
  T *erase(const T *first, const T *last) {
    T *to = begin() + (first - begin());
    size_t removed = static_cast<size_t>(last - first);
    std::copy(to + removed, end(), to);
    size_ -= static_cast<uint32_t>(removed);
    return to;
  }

  friend bool operator==(const SmallVector &a, const SmallVector &b) {
    return std::equal(a.begin(), a.end(), b.begin(), b.end());
  }

private:
  void grow(size_t count) {
    count = std::max<size_t>(count, 2 * N);
    T *heap = new T[count];
    std::copy(begin(), end(), heap);
    release();
    heap_ = heap;
    capacity_ = static_cast<uint32_t>(count);
  }
  void release() {
    if (capacity_ > N) delete[] heap_;
    capacity_ = N;
  }
  /// Moves `other`'s elements here (this holds nothing) and leaves it empty.
  void take(SmallVector &other) {
    if (other.capacity_ > N) {
      heap_ = other.heap_;
      capacity_ = other.capacity_;
      other.capacity_ = N;
    } else {
      std::copy(other.inline_, other.inline_ + other.size_, inline_);
    }
    size_ = other.size_;
    other.size_ = 0;
  }

  union {
    T inline_[N];
    T *heap_;
  };
  uint32_t size_ = 0, capacity_ = N;
};

} // namespace tg::ir
