//! Pure: straight-line fits of measured series (memory against kept Tasks,
//! memory against time).

/// `y = slope * x + intercept`.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct Fit {
    pub slope: f64,
    pub intercept: f64,
}

impl Fit {
    pub fn at(&self, x: f64) -> f64 {
        self.slope * x + self.intercept
    }
}

/// Ordinary least squares over `points`; None with fewer than two
/// distinct x values (no slope to speak of).
pub fn least_squares(points: &[(f64, f64)]) -> Option<Fit> {
    let n = points.len() as f64;
    if points.len() < 2 {
        return None;
    }
    let mx = points.iter().map(|p| p.0).sum::<f64>() / n;
    let my = points.iter().map(|p| p.1).sum::<f64>() / n;
    let sxx: f64 = points.iter().map(|p| (p.0 - mx).powi(2)).sum();
    let sxy: f64 = points.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum();
    if sxx <= f64::EPSILON * n * mx.abs().max(1.0) {
        return None;
    }
    let slope = sxy / sxx;
    Some(Fit {
        slope,
        intercept: my - slope * mx,
    })
}

/// The slope between each pair of neighbours, in the order given.
pub fn pairwise(points: &[(f64, f64)]) -> Vec<f64> {
    points
        .windows(2)
        .map(|w| {
            let dx = w[1].0 - w[0].0;
            if dx == 0.0 {
                f64::NAN
            } else {
                (w[1].1 - w[0].1) / dx
            }
        })
        .collect()
}

/// The points at or after `from` on the x axis (the warm-up left out).
pub fn after(points: &[(f64, f64)], from: f64) -> Vec<(f64, f64)> {
    points.iter().copied().filter(|p| p.0 >= from).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_line_is_recovered() {
        let pts: Vec<(f64, f64)> = [2000.0, 10000.0, 20000.0]
            .iter()
            .map(|&x| (x, 3.5 * x + 40_000.0))
            .collect();
        let f = least_squares(&pts).expect("a fit");
        assert!((f.slope - 3.5).abs() < 1e-9, "{f:?}");
        assert!((f.intercept - 40_000.0).abs() < 1e-6, "{f:?}");
        assert!((f.at(5000.0) - 57_500.0).abs() < 1e-6);
    }

    #[test]
    fn noisy_points_give_the_least_squares_slope() {
        // x = 0,1,2,3; y = 1,3,2,4: slope 0.8, intercept 1.3.
        let f = least_squares(&[(0.0, 1.0), (1.0, 3.0), (2.0, 2.0), (3.0, 4.0)]).expect("a fit");
        assert!((f.slope - 0.8).abs() < 1e-12, "{f:?}");
        assert!((f.intercept - 1.3).abs() < 1e-12, "{f:?}");
    }

    #[test]
    fn no_slope_without_two_distinct_x() {
        assert_eq!(least_squares(&[]), None);
        assert_eq!(least_squares(&[(1.0, 2.0)]), None);
        assert_eq!(least_squares(&[(5.0, 2.0), (5.0, 9.0)]), None);
    }

    #[test]
    fn a_flat_series_has_slope_zero() {
        let f = least_squares(&[(0.0, 7.0), (10.0, 7.0), (20.0, 7.0)]).expect("a fit");
        assert_eq!(f.slope, 0.0);
    }

    #[test]
    fn pairwise_slopes_between_neighbours() {
        let s = pairwise(&[(2000.0, 100.0), (10000.0, 900.0), (20000.0, 1400.0)]);
        assert_eq!(s, vec![0.1, 0.05]);
        assert!(pairwise(&[(1.0, 1.0)]).is_empty());
        assert!(pairwise(&[(1.0, 1.0), (1.0, 2.0)])[0].is_nan());
    }

    #[test]
    fn after_leaves_out_the_warm_up() {
        let pts = [(0.0, 1.0), (10.0, 2.0), (20.0, 3.0), (30.0, 4.0)];
        assert_eq!(after(&pts, 20.0), vec![(20.0, 3.0), (30.0, 4.0)]);
        assert!(after(&pts, 31.0).is_empty());
    }
}
