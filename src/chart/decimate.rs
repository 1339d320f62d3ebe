//! Min-max decimation: a line of a million points drawn into a thousand pixel columns looks the
//! same as the first, lowest, highest and last point of each column, in x order. Drawing then
//! costs O(width) whatever the series length, and an SVG stays small.

/// The points of each of `columns` equal slices of `[x_min, x_max]`: first, min, max, last (each
/// once, in x order). `points` must be sorted by x; points outside the range are dropped.
pub fn min_max(points: &[(f64, f64)], x_min: f64, x_max: f64, columns: usize) -> Vec<(f64, f64)> {
    if columns == 0 || points.is_empty() {
        return Vec::new();
    }
    if points.len() <= columns * 4 {
        return points
            .iter()
            .copied()
            .filter(|p| p.0 >= x_min && p.0 <= x_max)
            .collect();
    }
    let span = (x_max - x_min).max(f64::MIN_POSITIVE);
    let column = |x: f64| (((x - x_min) / span * columns as f64) as usize).min(columns - 1);
    let mut out = Vec::with_capacity(columns * 4);
    let mut i = 0;
    while i < points.len() {
        let p = points[i];
        if p.0 < x_min || p.0 > x_max {
            i += 1;
            continue;
        }
        let c = column(p.0);
        // One pass over the column's points: indexes of first, min, max, last.
        let (first, mut lo, mut hi, mut last) = (i, i, i, i);
        let mut j = i + 1;
        while j < points.len() && points[j].0 <= x_max && column(points[j].0) == c {
            if points[j].1 < points[lo].1 {
                lo = j;
            }
            if points[j].1 > points[hi].1 {
                hi = j;
            }
            last = j;
            j += 1;
        }
        let mut keep = [first, lo, hi, last];
        keep.sort_unstable();
        let mut prev = usize::MAX;
        for k in keep {
            if k != prev {
                out.push(points[k]);
                prev = k;
            }
        }
        i = j;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_first_min_max_last_of_each_column_in_order() {
        // 100 points over 10 columns: each column holds x = 10c .. 10c+9.
        let pts: Vec<(f64, f64)> = (0..100)
            .map(|i| (i as f64, ((i * 37) % 101) as f64))
            .collect();
        let d = min_max(&pts, 0.0, 100.0, 10);
        for c in 0..10 {
            let col: Vec<_> = pts[c * 10..c * 10 + 10].to_vec();
            let kept: Vec<_> = d
                .iter()
                .filter(|p| p.0 >= (c * 10) as f64 && p.0 < (c * 10 + 10) as f64)
                .collect();
            let lo = col.iter().map(|p| p.1).fold(f64::INFINITY, f64::min);
            let hi = col.iter().map(|p| p.1).fold(f64::NEG_INFINITY, f64::max);
            assert!(
                kept.iter().any(|p| p.1 == lo),
                "column {c} lost its minimum"
            );
            assert!(
                kept.iter().any(|p| p.1 == hi),
                "column {c} lost its maximum"
            );
            assert_eq!(kept.first().unwrap().0, col[0].0);
            assert_eq!(kept.last().unwrap().0, col[9].0);
            assert!(kept.len() <= 4);
        }
        assert!(d.windows(2).all(|w| w[0].0 < w[1].0), "x order kept");
    }

    #[test]
    fn short_series_are_kept_whole() {
        let pts = vec![(0.0, 1.0), (1.0, 5.0), (2.0, 2.0)];
        assert_eq!(min_max(&pts, 0.0, 2.0, 100), pts);
    }

    #[test]
    fn a_million_points_become_at_most_four_per_column() {
        let pts: Vec<(f64, f64)> = (0..1_000_000)
            .map(|i| {
                (
                    i as f64,
                    (i as f64 * 0.001).sin() * 1000.0 + i as f64 * 0.01,
                )
            })
            .collect();
        let d = min_max(&pts, 0.0, 999_999.0, 1000);
        assert!(d.len() <= 4000, "{}", d.len());
        let hi = pts.iter().map(|p| p.1).fold(f64::NEG_INFINITY, f64::max);
        let lo = pts.iter().map(|p| p.1).fold(f64::INFINITY, f64::min);
        assert!(d.iter().any(|p| p.1 == hi) && d.iter().any(|p| p.1 == lo));
    }
}
