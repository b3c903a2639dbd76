//! Numbers that behave like Python's after `json.loads`: integers stay exact, floats print with
//! Python's `repr`. Traces recorded by Python agents then hash the same as ours.

use std::borrow::Cow;

use serde_json::Number;

/// A JSON number as Python sees it: an exact integer or a double.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum PyNumber {
    /// An integer literal (JSON integers fit in 64 bits here; see `from_json`).
    Int(i128),
    /// A literal with a fraction or an exponent.
    Float(f64),
}

impl PyNumber {
    /// Reads a JSON number. Integer literals within the 64-bit range stay exact; serde_json reads
    /// larger ones as doubles.
    pub fn from_json(number: &Number) -> PyNumber {
        if let Some(i) = number.as_i64() {
            PyNumber::Int(i128::from(i))
        } else if let Some(u) = number.as_u64() {
            PyNumber::Int(i128::from(u))
        } else {
            PyNumber::Float(number.as_f64().unwrap_or(f64::NAN))
        }
    }

    /// The value as a double, rounded as Python's `float()` rounds.
    pub fn to_f64(self) -> f64 {
        match self {
            PyNumber::Int(i) => i as f64,
            PyNumber::Float(f) => f,
        }
    }
}

/// The exact sum, as Python's `str()` prints it.
pub fn add(left: PyNumber, right: PyNumber) -> Result<String, NonFinite> {
    match (left, right) {
        (PyNumber::Int(a), PyNumber::Int(b)) => Ok((a + b).to_string()),
        _ => float_result(left.to_f64() + right.to_f64()),
    }
}

/// The exact difference, as Python's `str()` prints it.
pub fn subtract(left: PyNumber, right: PyNumber) -> Result<String, NonFinite> {
    match (left, right) {
        (PyNumber::Int(a), PyNumber::Int(b)) => Ok((a - b).to_string()),
        _ => float_result(left.to_f64() - right.to_f64()),
    }
}

/// The exact product, as Python's `str()` prints it.
pub fn multiply(left: PyNumber, right: PyNumber) -> Result<String, NonFinite> {
    match (left, right) {
        (PyNumber::Int(a), PyNumber::Int(b)) => Ok(match a.checked_mul(b) {
            Some(product) => product.to_string(),
            // Both magnitudes are at most 2^64, so the product's magnitude fits in a u128.
            None => {
                let magnitude = a.unsigned_abs() * b.unsigned_abs();
                let sign = if (a < 0) != (b < 0) { "-" } else { "" };
                format!("{sign}{magnitude}")
            }
        }),
        _ => float_result(left.to_f64() * right.to_f64()),
    }
}

/// True division, always a float; `None` when dividing by zero.
pub fn divide(left: PyNumber, right: PyNumber) -> Option<Result<String, NonFinite>> {
    match (left, right) {
        (_, PyNumber::Int(0)) => None,
        // Matches -0.0 too: float patterns compare with `==`.
        (_, PyNumber::Float(0.0)) => None,
        (PyNumber::Int(a), PyNumber::Int(b)) => Some(float_result(int_true_divide(a, b))),
        _ => Some(float_result(left.to_f64() / right.to_f64())),
    }
}

/// The result was infinite or not a number; Python raises or prints `inf`, we report an error.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NonFinite;

fn float_result(value: f64) -> Result<String, NonFinite> {
    if value.is_finite() {
        Ok(format_python_float(value))
    } else {
        Err(NonFinite)
    }
}

/// `a / b` for integers, correctly rounded like Python's `int.__truediv__` (dividing the doubles
/// would round twice once the integers pass 2^53).
fn int_true_divide(a: i128, b: i128) -> f64 {
    const EXACT: u128 = 1 << 53;
    let negative = (a < 0) != (b < 0);
    let (n, d) = (a.unsigned_abs(), b.unsigned_abs());
    let magnitude = if n <= EXACT && d <= EXACT {
        n as f64 / d as f64
    } else {
        // Binary long division: collect 55 significant quotient bits, then round half to even
        // using the remaining bits and the remainder as the sticky bit.
        let mut q = n / d;
        let mut r = n % d;
        let mut exponent: i32 = 0;
        while bit_len(q) < 55 {
            r <<= 1;
            q <<= 1;
            if r >= d {
                r -= d;
                q |= 1;
            }
            exponent -= 1;
        }
        let extra = bit_len(q) - 53;
        let dropped = q & ((1u128 << extra) - 1);
        let half = 1u128 << (extra - 1);
        let mut mantissa = q >> extra;
        let round_up = dropped > half || (dropped == half && (r != 0 || mantissa & 1 == 1));
        if round_up {
            mantissa += 1;
        }
        exponent += extra as i32;
        mantissa as f64 * 2f64.powi(exponent)
    };
    if negative { -magnitude } else { magnitude }
}

fn bit_len(x: u128) -> u32 {
    128 - x.leading_zeros()
}

/// Formats a finite double exactly as Python's `repr`/`str`: the shortest digits that round-trip,
/// positional between 1e-4 and 1e16, exponent form (`1e+16`, `1e-05`) outside.
pub fn format_python_float(value: f64) -> String {
    // `{:e}` gives the shortest round-trip digits, e.g. `-1.2345e-5`.
    let scientific = format!("{value:e}");
    let (mantissa, exponent) = scientific
        .split_once('e')
        .unwrap_or((scientific.as_str(), "0"));
    let exponent: i32 = exponent.parse().unwrap_or(0);
    let (sign, mantissa) = match mantissa.strip_prefix('-') {
        Some(rest) => ("-", rest),
        None => ("", mantissa),
    };
    let digits: String = mantissa.chars().filter(|c| *c != '.').collect();
    // Python's decpt: the value is 0.DIGITS × 10^decpt.
    let decpt = exponent + 1;
    let mut out = String::from(sign);
    if !(-4 < decpt && decpt <= 16) {
        out.push_str(&digits[..1]);
        if digits.len() > 1 {
            out.push('.');
            out.push_str(&digits[1..]);
        }
        let e = decpt - 1;
        out.push_str(&format!("e{}{:02}", if e < 0 { '-' } else { '+' }, e.abs()));
    } else if decpt <= 0 {
        out.push_str("0.");
        out.extend(std::iter::repeat_n('0', decpt.unsigned_abs() as usize));
        out.push_str(&digits);
    } else {
        let point = decpt as usize;
        if point < digits.len() {
            out.push_str(&digits[..point]);
            out.push('.');
            out.push_str(&digits[point..]);
        } else {
            out.push_str(&digits);
            out.extend(std::iter::repeat_n('0', point - digits.len()));
            out.push_str(".0");
        }
    }
    out
}

/// JSON text with every integer literal `-0` written `0`, strings untouched. Python's `json.loads`
/// reads `-0` as the integer 0, but serde_json reads it as the float -0.0, which would make
/// `-0 + 5` print `5.0` instead of `5`; `-0.0` and `-0e0` stay floats, as in Python. Only a `-0`
/// that starts a value (after `[`, `,`, `:` or whitespace, or at the start) is rewritten, so
/// malformed text stays malformed.
pub fn integer_negative_zero_as_zero(text: &str) -> Cow<'_, str> {
    let bytes = text.as_bytes();
    // Most `-0`s in a large suite sit inside ids and names (`calc-000045`): when none could be
    // rewritten wherever strings begin and end, the byte-by-byte walk below is not needed.
    if !memchr::memchr_iter(b'-', bytes).any(|i| starts_value(bytes, i) && integer_zero(bytes, i)) {
        return Cow::Borrowed(text);
    }
    let mut out: Option<String> = None;
    let mut copied = 0;
    let (mut in_string, mut escaped) = (false, false);
    for (i, &byte) in bytes.iter().enumerate() {
        if in_string {
            match byte {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                _ => {}
            }
            continue;
        }
        if byte == b'"' {
            in_string = true;
            continue;
        }
        if byte == b'-' && starts_value(bytes, i) && integer_zero(bytes, i) {
            let buffer = out.get_or_insert_with(|| String::with_capacity(text.len()));
            buffer.push_str(&text[copied..i]);
            copied = i + 1;
        }
    }
    match out {
        None => Cow::Borrowed(text),
        Some(mut buffer) => {
            buffer.push_str(&text[copied..]);
            Cow::Owned(buffer)
        }
    }
}

/// Whether a value can start at `i`: the text's start, or after `[`, `,`, `:` or whitespace.
fn starts_value(bytes: &[u8], i: usize) -> bool {
    i == 0
        || matches!(
            bytes[i - 1],
            b'[' | b',' | b':' | b' ' | b'\t' | b'\n' | b'\r'
        )
}

/// Whether the `-` at `i` begins the integer literal `-0` (not `-0.5`, `-0e1` or `-01`).
fn integer_zero(bytes: &[u8], i: usize) -> bool {
    bytes.get(i + 1) == Some(&b'0')
        && !matches!(bytes.get(i + 2), Some(b'.' | b'e' | b'E' | b'0'..=b'9'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floats_print_like_python_repr() {
        let cases = [
            (5.0, "5.0"),
            (0.25, "0.25"),
            (84.0, "84.0"),
            (1e16, "1e+16"),
            (1e15, "1000000000000000.0"),
            (1e-5, "1e-05"),
            (0.0001, "0.0001"),
            (0.1 + 0.2, "0.30000000000000004"),
            (-0.0, "-0.0"),
            (0.0, "0.0"),
            (1.5e300, "1.5e+300"),
            (-2.5e-7, "-2.5e-07"),
            (123456789.125, "123456789.125"),
            (1.0 / 3.0, "0.3333333333333333"),
            (5e-324, "5e-324"),
        ];
        for (value, expected) in cases {
            assert_eq!(format_python_float(value), expected, "{value:e}");
        }
    }

    #[test]
    fn only_integer_negative_zero_literals_become_zero() {
        let cases = [
            (r#"{"left":-0,"right":5}"#, r#"{"left":0,"right":5}"#),
            ("[-0, -0 ,\n-0]", "[0, 0 ,\n0]"),
            ("-0", "0"),
            (
                r#"{"a":-0.0,"b":-0e0,"c":-0E1,"d":-01,"e":1e-0}"#,
                r#"{"a":-0.0,"b":-0e0,"c":-0E1,"d":-01,"e":1e-0}"#,
            ),
            (
                r#"{"s":"-0","t":"\"-0","u":"\\"}"#,
                r#"{"s":"-0","t":"\"-0","u":"\\"}"#,
            ),
            ("--0", "--0"),
            ("[x-0]", "[x-0]"),
            (r#"{"id":"calc-000045"}"#, r#"{"id":"calc-000045"}"#),
            (
                r#"{"id":"calc-00","s":"a -0"}"#,
                r#"{"id":"calc-00","s":"a -0"}"#,
            ),
            (r#"{"id":"calc-00","v":-0}"#, r#"{"id":"calc-00","v":0}"#),
        ];
        for (text, expected) in cases {
            assert_eq!(integer_negative_zero_as_zero(text), expected, "{text}");
        }
    }

    #[test]
    fn integer_division_rounds_once() {
        // Python: (2**53 + 1) / 1 == 9007199254740992.0 and 18446744073709551615 / 3.
        assert_eq!(int_true_divide((1 << 53) + 1, 1), 9007199254740992.0);
        assert_eq!(int_true_divide(u64::MAX as i128, 3), 6148914691236517205.0);
        assert_eq!(int_true_divide(1, u64::MAX as i128), 5.421010862427522e-20);
        assert_eq!(int_true_divide(-10, 4), -2.5);
    }
}
