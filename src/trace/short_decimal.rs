//! Reading the short decimals traces are full of (durations, costs) exactly, without the
//! general float parser.

/// Powers of ten that an `f64` holds exactly.
const EXACT_POWERS_OF_TEN: [f64; 23] = [
    1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16,
    1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
];

/// The value of a well-formed JSON number without an exponent whose digits, read as one
/// integer, fit in the 53 bits of an `f64` (a duration like `0.032`, a cost like `0.0125`):
/// that integer and the power of ten are both exact, so one division rounds correctly and gives
/// what `str::parse::<f64>` gives (Clinger's fast path). `None` for any other number.
#[inline]
pub(super) fn short_decimal(number: &[u8]) -> Option<f64> {
    let (negative, digits) = match number.split_first() {
        Some((b'-', rest)) => (true, rest),
        _ => (false, number),
    };
    let mut mantissa: u64 = 0;
    let mut fraction_digits = None;
    for (at, &byte) in digits.iter().enumerate() {
        match byte {
            b'0'..=b'9' if at < 19 => mantissa = mantissa * 10 + u64::from(byte - b'0'),
            b'.' if fraction_digits.is_none() => fraction_digits = Some(digits.len() - at - 1),
            _ => return None,
        }
    }
    if mantissa > 1 << 53 {
        return None;
    }
    let power = EXACT_POWERS_OF_TEN.get(fraction_digits.unwrap_or(0))?;
    let value = mantissa as f64 / power;
    Some(if negative { -value } else { value })
}

/// The number at the start of `bytes` when [`short_decimal`] reads it, and its length: an
/// integer part without leading zeros, at most one fraction, no exponent, at most 19 digits.
/// `None` for any other number, well-formed or not: the caller then takes the general path,
/// which also names what is malformed. One pass, where checking the number first and reading
/// it after would read each digit twice.
#[inline]
pub(super) fn short_decimal_prefix(bytes: &[u8]) -> Option<(f64, usize)> {
    let negative = bytes.first() == Some(&b'-');
    let integer_start = usize::from(negative);
    let mut at = integer_start;
    let mut mantissa: u64 = 0;
    let digits = |at: &mut usize, mantissa: &mut u64| {
        let start = *at;
        while let Some(&byte @ b'0'..=b'9') = bytes.get(*at) {
            *mantissa = mantissa
                .wrapping_mul(10)
                .wrapping_add(u64::from(byte - b'0'));
            *at += 1;
        }
        *at - start
    };
    let integer_digits = digits(&mut at, &mut mantissa);
    if integer_digits == 0 || (integer_digits > 1 && bytes[integer_start] == b'0') {
        return None;
    }
    let mut fraction_digits = 0;
    if bytes.get(at) == Some(&b'.') {
        at += 1;
        fraction_digits = digits(&mut at, &mut mantissa);
        if fraction_digits == 0 {
            return None;
        }
    }
    // More than 19 digits may have wrapped; an exponent or a second point is another form.
    if integer_digits + fraction_digits > 19
        || matches!(bytes.get(at), Some(b'e' | b'E' | b'.'))
        || mantissa > 1 << 53
    {
        return None;
    }
    let value = mantissa as f64 / EXACT_POWERS_OF_TEN.get(fraction_digits)?;
    Some((if negative { -value } else { value }, at))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_decimals_read_as_the_standard_parser_reads_them() {
        let mut numbers: Vec<String> = [
            "0",
            "-0",
            "0.0",
            "-0.0",
            "0.032",
            "1",
            "12.5",
            "0.1",
            "0.3",
            "9007199254740992",
            "9007199254740993",
            "900719925474099.3",
            "0.0000000000000000000001",
            "0.00000000000000000000001",
            "123456789012345678",
            "1234567890123456789.5",
            "18446744073709551615",
            "99999999999999999999",
            "1.7976931348623157",
        ]
        .iter()
        .map(|text| text.to_string())
        .collect();
        // Every millisecond figure with up to three decimals below ten seconds.
        numbers.extend(
            (0..10_000_000)
                .step_by(997)
                .map(|n| format!("{}.{:03}", n / 1000, n % 1000)),
        );
        for text in &numbers {
            let expected: f64 = text.parse().unwrap();
            if let Some(value) = short_decimal(text.as_bytes()) {
                assert_eq!(value.to_bits(), expected.to_bits(), "{text}");
            }
        }
        for text in &numbers {
            let expected: f64 = text.parse().unwrap();
            for end in [",", "}", " ", ""] {
                let with_end = format!("{text}{end}");
                if let Some((value, len)) = short_decimal_prefix(with_end.as_bytes()) {
                    assert_eq!(value.to_bits(), expected.to_bits(), "{text}");
                    assert_eq!(len, text.len(), "{text}");
                }
            }
        }
        assert_eq!(short_decimal(b"0.032"), Some(0.032));
        assert_eq!(short_decimal_prefix(b"0.032,"), Some((0.032, 5)));
        assert_eq!(short_decimal_prefix(b"-12.5}"), Some((-12.5, 5)));
        for other in [
            "01", "1.", "1.e3", "1e3", "1.5e3", "1.2.3", "-", ".5", "-.5", "00.1",
        ] {
            assert_eq!(short_decimal_prefix(other.as_bytes()), None, "{other}");
        }
        assert_eq!(short_decimal(b"9007199254740993"), None);
        assert_eq!(short_decimal(b"1e3"), None);
    }
}
