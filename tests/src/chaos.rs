//! What the chaos cases share: a seeded generator, so a failing run can be
//! repeated from its seed, and their settings from the environment.

/// A small deterministic generator (a 64-bit LCG).
pub struct Lcg(pub u64);

impl Lcg {
    /// The next number in `0..n`.
    pub fn next(&mut self, n: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 33) % n
    }
}

/// `k` from the environment as a number, else `default`.
pub fn env_u64(k: &str, default: u64) -> u64 {
    std::env::var(k)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_same_numbers_within_bounds() {
        let (mut a, mut b) = (Lcg(42), Lcg(42));
        let xs: Vec<u64> = (0..100).map(|_| a.next(7)).collect();
        let ys: Vec<u64> = (0..100).map(|_| b.next(7)).collect();
        assert_eq!(xs, ys);
        assert!(xs.iter().all(|x| *x < 7));
        assert!(xs.iter().any(|x| *x != xs[0]), "not constant");
    }
}
