// Internal to the CSV reader (csv.cc): the hand-written token parsers of its inner loop, inline.
// Each parses one token at `p`, advances `p` past it and returns false when there is no valid
// token there. Thread-safe: pure functions.
#pragma once

#include <charconv>
#include <cstdint>

namespace fg::graph::io::csv_tokens {

inline bool IsBlank(char c) { return c == ' ' || c == '\t'; }
inline bool IsDigit(char c) { return static_cast<unsigned>(c - '0') < 10u; }
inline bool IsTerminator(char c) {
  return c == ',' || c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

inline constexpr double kPow10[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                             1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                             1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

// Parses an integer at p; advances p past it. False when there is no valid integer token.
inline bool ParseInt(const char*& p, const char* end, bool nan_ok, int64_t* out) {
  const char* s = p;
  bool neg = false;
  if (s < end && (*s == '-' || *s == '+')) neg = *s++ == '-';
  if (s == end || !IsDigit(*s)) {
    if (nan_ok && end - p >= 3 && (p[0] | 0x20) == 'n' && (p[1] | 0x20) == 'a' &&
        (p[2] | 0x20) == 'n' && (p + 3 == end || IsTerminator(p[3]))) {
      *out = -1;
      p += 3;
      return true;
    }
    return false;
  }
  uint64_t v = 0;
  int digits = 0;
  while (s < end && IsDigit(*s)) {
    const unsigned d = static_cast<unsigned>(*s - '0');
    if (++digits > 18) {
      if (__builtin_mul_overflow(v, 10u, &v) || __builtin_add_overflow(v, d, &v)) return false;
    } else {
      v = v * 10 + d;
    }
    ++s;
  }
  if (s < end && !IsTerminator(*s)) return false;
  if (v > static_cast<uint64_t>(INT64_MAX) + (neg ? 1 : 0)) return false;
  *out = neg ? static_cast<int64_t>(0 - v) : static_cast<int64_t>(v);
  p = s;
  return true;
}

inline bool ParseFloatSlow(const char*& p, const char* end, float* out) {
  const char* s = p;
  if (s < end && *s == '+') ++s;
  const char* t = s;
  while (t < end && !IsTerminator(*t)) ++t;
  auto [ptr, ec] = std::from_chars(s, t, *out);
  if (ec == std::errc::result_out_of_range) {
    // Denormal underflow / overflow: saturate like strtof.
    const bool neg = *s == '-';
    const char* e = s;
    while (e < t && (*e | 0x20) != 'e') ++e;
    const bool big = e < t && e + 1 < t && e[1] != '-';
    *out = big ? (neg ? -HUGE_VALF : HUGE_VALF) : (neg ? -0.0f : 0.0f);
    p = t;
    return true;
  }
  if (ec != std::errc() || ptr != t) return false;
  p = t;
  return true;
}

// Parses a float at p (decimal with optional fraction and exponent; nan/inf via from_chars).
inline bool ParseFloat(const char*& p, const char* end, float* out) {
  const char* s = p;
  bool neg = false;
  if (s < end && (*s == '-' || *s == '+')) neg = *s++ == '-';
  uint64_t mant = 0;
  int digits = 0, exp10 = 0;
  bool any = false;
  // Up to 19 significant digits go into mant; exp10 tracks the decimal point and dropped digits.
  auto scan_digits = [&](bool fraction) {
    for (; s < end && IsDigit(*s); ++s) {
      const unsigned d = static_cast<unsigned>(*s - '0');
      any = true;
      if (mant == 0 && d == 0) {
        exp10 -= fraction;  // a leading zero
      } else if (digits < 19) {
        mant = mant * 10 + d;
        ++digits;
        exp10 -= fraction;
      } else {
        exp10 += !fraction;
      }
    }
  };
  scan_digits(false);
  if (s < end && *s == '.') {
    ++s;
    scan_digits(true);
  }
  if (!any) return ParseFloatSlow(p, end, out);
  if (s < end && (*s | 0x20) == 'e') {
    ++s;
    bool eneg = false;
    if (s < end && (*s == '-' || *s == '+')) eneg = *s++ == '-';
    if (s == end || !IsDigit(*s)) return false;
    int e = 0;
    while (s < end && IsDigit(*s)) {
      if (e < 100000) e = e * 10 + (*s - '0');
      ++s;
    }
    exp10 += eneg ? -e : e;
  }
  if (s < end && !IsTerminator(*s)) return false;
  if (digits > 15 || exp10 < -22 || exp10 > 22) {
    if (mant == 0) {
      *out = neg ? -0.0f : 0.0f;
      p = s;
      return true;
    }
    return ParseFloatSlow(p, end, out);
  }
  double v = static_cast<double>(mant);
  v = exp10 < 0 ? v / kPow10[-exp10] : v * kPow10[exp10];
  *out = static_cast<float>(neg ? -v : v);
  p = s;
  return true;
}

}  // namespace fg::graph::io::csv_tokens
