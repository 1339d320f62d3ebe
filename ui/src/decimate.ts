// Min-max decimation: a line chart of a million points looks the same when, per pixel column,
// only the first, last, lowest and highest point of each series is drawn. The indices kept are
// shared by every series (they share the x axis), so a chart stays consistent while zooming.

export type Column = ArrayLike<number | null>;

/**
 * Indices of `[lo, hi)` to draw at `width` pixel columns: for each column, the first and last
 * index and the index of each series' minimum and maximum. Sorted, without duplicates.
 * A range no longer than 4 × width is returned whole (nothing to gain).
 */
export function decimateIndices(columns: Column[], lo: number, hi: number, width: number): Uint32Array {
  lo = Math.max(0, Math.floor(lo));
  hi = Math.max(lo, Math.ceil(hi));
  const n = hi - lo;
  const buckets = Math.max(1, Math.floor(width));
  if (n <= buckets * 4) {
    const all = new Uint32Array(n);
    for (let i = 0; i < n; i++) all[i] = lo + i;
    return all;
  }
  const marks = new Uint8Array(n);
  const per = n / buckets;
  for (let b = 0; b < buckets; b++) {
    const start = lo + Math.floor(b * per);
    const end = Math.min(hi, lo + Math.floor((b + 1) * per));
    if (end <= start) continue;
    marks[start - lo] = 1;
    marks[end - 1 - lo] = 1;
    for (const col of columns) {
      let minI = -1;
      let maxI = -1;
      let min = Infinity;
      let max = -Infinity;
      for (let i = start; i < end; i++) {
        const v = col[i];
        if (v === null || v === undefined) continue;
        if (v < min) {
          min = v;
          minI = i;
        }
        if (v > max) {
          max = v;
          maxI = i;
        }
      }
      if (minI >= 0) marks[minI - lo] = 1;
      if (maxI >= 0) marks[maxI - lo] = 1;
    }
  }
  let count = 0;
  for (let i = 0; i < n; i++) count += marks[i];
  const out = new Uint32Array(count);
  let k = 0;
  for (let i = 0; i < n; i++) if (marks[i]) out[k++] = lo + i;
  return out;
}

/** The columns restricted to `indices`. */
export function pick(column: Column, indices: Uint32Array): (number | null)[] {
  const out = new Array<number | null>(indices.length);
  for (let i = 0; i < indices.length; i++) {
    const v = column[indices[i]];
    out[i] = v === undefined ? null : v;
  }
  return out;
}
