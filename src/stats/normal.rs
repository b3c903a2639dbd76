//! The standard normal quantile, Φ⁻¹(p): Wichura's algorithm AS 241 (Applied Statistics 37(3),
//! 1988), accurate to about 1 part in 10¹⁶, which R's `qnorm` also uses.

/// Φ⁻¹(p) for `p` in (0, 1): the z with P(Z ≤ z) = p for a standard normal Z. Values outside
/// (0, 1) give ∓infinity (0 and below, 1 and above).
pub fn quantile(p: f64) -> f64 {
    if p <= 0.0 {
        return f64::NEG_INFINITY;
    }
    if p >= 1.0 {
        return f64::INFINITY;
    }
    let q = p - 0.5;
    if q.abs() <= 0.425 {
        let r = 0.180_625 - q * q;
        return q * horner(&A, r) / horner(&B, r);
    }
    let tail = if q < 0.0 { p } else { 1.0 - p };
    let r = (-tail.ln()).sqrt();
    let value = if r <= 5.0 {
        horner(&C, r - 1.6) / horner(&D, r - 1.6)
    } else {
        horner(&E, r - 5.0) / horner(&F, r - 5.0)
    };
    if q < 0.0 { -value } else { value }
}

/// The polynomial with `coefficients` (constant term first) at `x`.
fn horner(coefficients: &[f64; 8], x: f64) -> f64 {
    coefficients.iter().rev().fold(0.0, |acc, c| acc * x + c)
}

// AS 241's coefficients, constant term first: A/B near the centre, C/D for tails down to
// e^-25, E/F beyond.
const A: [f64; 8] = [
    3.387_132_872_796_366_5,
    133.141_667_891_784_38,
    1_971.590_950_306_551_3,
    13_731.693_765_509_46,
    45_921.953_931_549_87,
    67_265.770_927_008_7,
    33_430.575_583_588_13,
    2_509.080_928_730_122_7,
];
const B: [f64; 8] = [
    1.0,
    42.313_330_701_600_91,
    687.187_007_492_057_9,
    5_394.196_021_424_751,
    21_213.794_301_586_597,
    39_307.895_800_092_71,
    28_729.085_735_721_943,
    5_226.495_278_852_854,
];
const C: [f64; 8] = [
    1.423_437_110_749_683_5,
    4.630_337_846_156_545,
    5.769_497_221_460_691,
    3.647_848_324_763_204_5,
    1.270_458_252_452_368_4,
    2.417_807_251_774_506e-1,
    2.272_384_498_926_918_4e-2,
    7.745_450_142_783_414e-4,
];
const D: [f64; 8] = [
    1.0,
    2.053_191_626_637_759,
    1.676_384_830_183_803_8,
    6.897_673_349_851e-1,
    1.481_039_764_274_800_8e-1,
    1.519_866_656_361_645_7e-2,
    5.475_938_084_995_345e-4,
    1.050_750_071_644_416_8e-9,
];
const E: [f64; 8] = [
    6.657_904_643_501_103,
    5.463_784_911_164_114,
    1.784_826_539_917_291_3,
    2.965_605_718_285_048_7e-1,
    2.653_218_952_657_612_4e-2,
    1.242_660_947_388_078_4e-3,
    2.711_555_568_743_487_6e-5,
    2.010_334_399_292_288_1e-7,
];
const F: [f64; 8] = [
    1.0,
    5.998_322_065_558_88e-1,
    1.369_298_809_227_358e-1,
    1.487_536_129_085_061_5e-2,
    7.868_691_311_456_133e-4,
    1.846_318_317_510_054_8e-5,
    1.421_511_758_316_446e-7,
    2.044_263_103_389_939_7e-15,
];

/// The z of a two-sided interval at `confidence`: Φ⁻¹(1 − (1 − confidence)/2).
pub fn two_sided_z(confidence: f64) -> f64 {
    quantile(1.0 - (1.0 - confidence) / 2.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Reference values: the standard normal table (Abramowitz and Stegun, table 26.5) as printed
    /// to 15 digits by R's `qnorm`.
    #[test]
    fn matches_the_normal_table() {
        let cases = [
            (0.5, 0.0),
            (0.975, 1.959_963_984_540_054),
            (0.995, 2.575_829_303_548_901),
            (0.95, 1.644_853_626_951_472_2),
            (0.9, 1.281_551_565_544_601),
            (0.025, -1.959_963_984_540_054),
            (0.999_999_5, 4.891_638_475_698_87),
            (1e-12, -7.034_483_825_446_91),
        ];
        for (p, z) in cases {
            assert!((quantile(p) - z).abs() < 1e-9, "Φ⁻¹({p}) = {}", quantile(p));
        }
        assert!((two_sided_z(0.95) - 1.959_963_984_540_054).abs() < 1e-12);
        assert_eq!(quantile(0.0), f64::NEG_INFINITY);
        assert_eq!(quantile(1.0), f64::INFINITY);
    }
}
