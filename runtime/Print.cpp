// A port of numpy/core/arrayprint.py (1.24) for the default options: the element formats (FloatingFormat,
// IntegerFormat, BoolFormat) are fitted to the elements shown, then _formatArray lays them out. NumPy's
// Dragon4 digits are std::to_chars' shortest round-trip digits, rounded (correctly, from the binary value)
// when they exceed the precision.
#include "runtime/Print.h"

#include "runtime/KernelSupport.h"

#include <algorithm>
#include <charconv>
#include <functional>

namespace tg::runtime {

namespace {

constexpr int kPrecision = 8;
constexpr int64_t kThreshold = 1000;
constexpr int64_t kEdgeItems = 3;
constexpr size_t kLineWidth = 75;

template <typename T>
std::string toChars(T value, std::chars_format format) {
  char buffer[512]; // the fixed form of the largest double has 309 digits
  return std::string(buffer, std::to_chars(buffer, buffer + sizeof buffer, value, format).ptr);
}
template <typename T>
std::string toChars(T value, std::chars_format format, int precision) {
  char buffer[512];
  return std::string(buffer, std::to_chars(buffer, buffer + sizeof buffer, value, format, precision).ptr);
}

/// The shortest digits of `value` in `format`, but at most kPrecision after the point, without trailing zeros
/// and always with a point: "1.", "-0.25", "1.5e-05" (Dragon4 with unique=True, trim='.').
template <typename T>
std::string cappedDigits(T value, std::chars_format format) {
  std::string text = toChars(value, format);
  size_t exponent = std::min(text.find('e'), text.size());
  size_t point = text.find('.');
  if (point != std::string::npos && exponent - point - 1 > static_cast<size_t>(kPrecision)) {
    text = toChars(value, format, kPrecision);
    exponent = std::min(text.find('e'), text.size());
    size_t last = text.find_last_not_of('0', exponent - 1);
    text.erase(last + 1, exponent - last - 1);
    exponent = last + 1;
  }
  if (text.find('.') != std::string::npos) return text;
  return text.substr(0, exponent) + '.' + text.substr(exponent);
}

/// A float in NumPy's array format, fitted to the finite values shown (FloatingFormat.fillFormat).
template <typename T>
class FloatFormat {
public:
  explicit FloatFormat(const std::vector<T> &values) {
    std::vector<T> finite;
    bool negativeInfinity = false;
    for (T value : values) {
      if (std::isfinite(value)) finite.push_back(value);
      negativeInfinity = negativeInfinity || (std::isinf(value) && value < 0);
    }
    // Magnitudes compare in T, as NumPy's scalars do.
    T maxAbs = 0, minAbs = std::numeric_limits<T>::infinity();
    for (T value : finite)
      if (value != 0) {
        maxAbs = std::max(maxAbs, std::abs(value));
        minAbs = std::min(minAbs, std::abs(value));
      }
    exponential_ = maxAbs > 0 && (maxAbs >= T(1e8) || minAbs < T(0.0001) || maxAbs / minAbs > T(1000));

    for (T value : finite) {
      std::string text =
          cappedDigits(value, exponential_ ? std::chars_format::scientific : std::chars_format::fixed);
      size_t point = text.find('.'), e = std::min(text.find('e'), text.size());
      padLeft_ = std::max(padLeft_, static_cast<int>(point));
      fraction_ = std::max(fraction_, static_cast<int>(e - point - 1));
      if (exponential_) exponentDigits_ = std::max(exponentDigits_, static_cast<int>(text.size() - e - 2));
    }
    // After the point: the fraction, then in scientific form "e+XX".
    padRight_ = exponential_ ? exponentDigits_ + 2 + fraction_ : fraction_;
    if (finite.size() != values.size()) // room for "nan", "inf", "-inf"
      padLeft_ = std::max({padLeft_, 3 - (padRight_ + 1), 3 + negativeInfinity - (padRight_ + 1)});
  }

  std::string operator()(T value) const {
    if (!std::isfinite(value)) {
      std::string word = std::isnan(value) ? "nan" : value < 0 ? "-inf" : "inf";
      return pad(word, padLeft_ + padRight_ + 1);
    }
    if (!exponential_) {
      std::string text = cappedDigits(value, std::chars_format::fixed);
      size_t point = text.find('.');
      return pad(text, padLeft_ - static_cast<int>(point) + static_cast<int>(text.size())) +
             std::string(fraction_ - (text.size() - point - 1), ' ');
    }
    // Dragon4 with min_digits: past the shortest digits come the exact value's, so every mantissa has
    // fraction_ digits, correctly rounded.
    std::string text = toChars(value, std::chars_format::scientific, fraction_);
    size_t e = text.find('e');
    std::string mantissa = text.substr(0, e) + (fraction_ == 0 ? "." : "");
    std::string exponent = text.substr(e + 2);
    exponent =
        std::string(std::max<int>(0, exponentDigits_ - static_cast<int>(exponent.size())), '0') + exponent;
    return pad(mantissa, padLeft_ + 1 + fraction_) + "e" + text[e + 1] + exponent;
  }

private:
  static std::string pad(const std::string &text, int width) {
    return std::string(std::max<int>(0, width - static_cast<int>(text.size())), ' ') + text;
  }

  bool exponential_ = false;
  int padLeft_ = 0;        // characters before the point
  int fraction_ = 0;       // digits after the point
  int exponentDigits_ = 2; // scientific only
  int padRight_ = 0;       // characters after the point
};

/// str() of a NumPy scalar: the shortest digits, positional from 1e-4 to 1e16 ("1.0", "0.1"), else scientific
/// ("1e+16", "1.5e-05").
template <typename T>
std::string formatScalar(T value) {
  if constexpr (std::is_same_v<T, bool>) {
    return value ? "True" : "False";
  } else if constexpr (std::is_integral_v<T>) {
    return std::to_string(value);
  } else {
    if (std::isnan(value)) return "nan";
    if (std::isinf(value)) return value < 0 ? "-inf" : "inf";
    long double magnitude = std::abs(value);
    if (magnitude != 0 && (magnitude < 1e-4L || magnitude >= 1e16L))
      return toChars(value, std::chars_format::scientific);
    std::string text = toChars(value, std::chars_format::fixed);
    return text.find('.') == std::string::npos ? text + ".0" : text;
  }
}

/// The elements NumPy looks at to fit the format: with summarization, only the edge items of every axis.
template <typename T>
void collectShown(const T *data, const std::vector<int64_t> &shape, const std::vector<int64_t> &strides,
                  size_t axis, bool summarize, std::vector<T> &shown) {
  if (axis == shape.size()) {
    shown.push_back(*data);
    return;
  }
  int64_t size = shape[axis];
  bool skip = summarize && size > 2 * kEdgeItems;
  for (int64_t i = 0; i < size; ++i) {
    if (skip && i == kEdgeItems) i = size - kEdgeItems;
    collectShown(data + i * strides[axis], shape, strides, axis + 1, summarize, shown);
  }
}

/// _formatArray: nested brackets, rows wrapped at the line width, '...' in place of the middle of long axes.
class Layout {
public:
  Layout(const std::vector<int64_t> &shape, bool summarize, std::function<std::string(int64_t)> element)
      : shape_(shape), strides_(Tensor::contiguousStrides(shape)), summarize_(summarize),
        element_(std::move(element)) {}

  std::string format() { return recurse(0, 0, " ", kLineWidth); }

private:
  std::string recurse(size_t axis, int64_t offset, const std::string &indent, size_t width) {
    if (axis == shape_.size()) return element_(offset);
    int64_t size = shape_[axis];
    bool summary = summarize_ && 2 * kEdgeItems < size;
    int64_t leading = summary ? kEdgeItems : 0, trailing = summary ? kEdgeItems : size;
    std::vector<int64_t> items;
    for (int64_t i = 0; i < leading; ++i)
      items.push_back(i);
    for (int64_t i = trailing; i >= 1; --i)
      items.push_back(size - i);
    auto nested = [&](int64_t i) {
      return recurse(axis + 1, offset + i * strides_[axis], indent + " ", width - 1);
    };

    std::string text;
    if (axis + 1 == shape_.size()) {
      // The last axis: words separated by spaces, wrapped before the line would pass width - len("]").
      std::string line = indent;
      auto extend = [&](const std::string &word) {
        if (line.size() + word.size() > width - 1 && line.size() > indent.size()) {
          text += line.substr(0, line.find_last_not_of(' ') + 1) + "\n";
          line = indent;
        }
        line += word;
      };
      for (size_t k = 0; k < items.size(); ++k) {
        if (summary && k == static_cast<size_t>(leading)) {
          extend("...");
          line += " ";
        }
        extend(nested(items[k]));
        if (k + 1 < items.size()) line += " ";
      }
      text += line;
    } else {
      // Outer axes: one row per line, with a blank line per axis below.
      std::string separator(shape_.size() - axis - 1, '\n');
      for (size_t k = 0; k < items.size(); ++k) {
        if (summary && k == static_cast<size_t>(leading)) text += indent + "..." + separator;
        text += indent + nested(items[k]) + (k + 1 < items.size() ? separator : "");
      }
    }
    return '[' + text.substr(indent.size()) + ']';
  }

  std::vector<int64_t> shape_, strides_;
  bool summarize_;
  std::function<std::string(int64_t)> element_;
};

template <typename T>
std::string formatTyped(const Tensor &tensor) {
  const T *data = tensor.data<T>();
  if (tensor.rank() == 0) return formatScalar(data[0]);
  if (tensor.numElements() == 0) return "[]";
  bool summarize = tensor.numElements() > kThreshold;
  std::vector<T> shown;
  collectShown(data, tensor.shape(), tensor.strides(), 0, summarize, shown);

  std::function<std::string(T)> format;
  if constexpr (std::is_same_v<T, bool>) {
    format = [](bool value) { return value ? " True" : "False"; };
  } else if constexpr (std::is_integral_v<T>) {
    auto [low, high] = std::minmax_element(shown.begin(), shown.end());
    size_t width = std::max(std::to_string(*low).size(), std::to_string(*high).size());
    format = [width](T value) {
      std::string text = std::to_string(value);
      return std::string(width - text.size(), ' ') + text;
    };
  } else {
    format = FloatFormat<T>(shown);
  }
  return Layout(tensor.shape(), summarize, [&](int64_t offset) { return format(data[offset]); }).format();
}

} // namespace

std::string formatArray(const Tensor &tensor) {
  Tensor contiguous = tensor.contiguous();
  return visitDType(tensor.dtype(), [&](auto zero) { return formatTyped<decltype(zero)>(contiguous); });
}

} // namespace tg::runtime
