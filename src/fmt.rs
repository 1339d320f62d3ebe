//! How the host writes numbers for people: every token count a user reads has thousands
//! separators. Presentation belongs to the host; plugins keep the SDK's formatter for the texts
//! of their own events, which is not part of this module's contract.

/// `120431` → `"120,431"`.
pub fn fmt_tokens(n: u64) -> String {
    let digits = n.to_string();
    let head = digits.len() % 3;
    let mut out = String::with_capacity(digits.len() * 4 / 3);
    out.push_str(&digits[..head]);
    for group in digits.as_bytes()[head..].chunks(3) {
        if !out.is_empty() {
            out.push(',');
        }
        out.push_str(std::str::from_utf8(group).unwrap_or_default());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::fmt_tokens;

    #[test]
    fn groups_of_three_from_the_right() {
        for (n, s) in [
            (0, "0"),
            (7, "7"),
            (999, "999"),
            (1_000, "1,000"),
            (120_431, "120,431"),
            (1_234_567, "1,234,567"),
            (u64::MAX, "18,446,744,073,709,551,615"),
        ] {
            assert_eq!(fmt_tokens(n), s);
        }
    }
}
