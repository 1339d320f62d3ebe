// Colour assignment for the charts (#21): in Compare, colour = strategy everywhere (both charts,
// the legend, the metrics table, the kept-at-call view) and agent = line style; in the Session
// view, one colour family per top-level agent, its subagents in lighter or darker shades of it.

/** Ten hues far apart, readable on the dark and the light panel. */
export const PALETTE = ["#4e9ce6", "#e5894a", "#52b788", "#c77dff", "#e05d6f", "#d8b83a", "#4cc9c0", "#9c9c9c", "#7d8ce8", "#b5835a"];

/** Line styles by agent rank: solid for the first (the main agent), then dashes and dots. */
export const AGENT_DASHES: (number[] | undefined)[] = [undefined, [7, 4], [2, 3], [10, 3, 2, 3], [4, 4], [1, 5], [12, 6], [6, 2, 2, 2, 2, 2]];

/** The line style of the agent of rank `i` (after the styles run out, they repeat). */
export function agentDash(i: number): number[] | undefined {
  return AGENT_DASHES[i % AGENT_DASHES.length];
}

/** A distinct colour for each strategy, by the order the strategies were run: the palette first,
 *  then hues spread by the golden angle (never equal to each other or to a palette colour). */
export function strategyColors(strategies: readonly string[]): Map<string, string> {
  const out = new Map<string, string>();
  let n = 0;
  for (const s of strategies) {
    if (out.has(s)) continue;
    out.set(s, n < PALETTE.length ? PALETTE[n] : goldenHue(n - PALETTE.length));
    n++;
  }
  return out;
}

function goldenHue(k: number): string {
  const hue = (17 + k * 137.508) % 360;
  // Alternate lightness so neighbours in the sequence also differ in brightness.
  const light = k % 2 === 0 ? 62 : 48;
  return `hsl(${hue.toFixed(1)}, 65%, ${light}%)`;
}

export interface AgentLike {
  index: number;
  parent: number | null;
}

/** Per agent: its colour (subagents take a shade of their top-level ancestor's colour) and its
 *  depth under that ancestor. */
export function agentFamilies(agents: readonly AgentLike[]): Map<number, { color: string; family: number; depth: number }> {
  const byIndex = new Map(agents.map((a) => [a.index, a]));
  const root = (a: AgentLike): { root: number; depth: number } => {
    let cur = a;
    let depth = 0;
    const seen = new Set<number>();
    while (cur.parent !== null && byIndex.has(cur.parent) && !seen.has(cur.index)) {
      seen.add(cur.index);
      cur = byIndex.get(cur.parent)!;
      depth++;
    }
    return { root: cur.index, depth };
  };
  const roots: number[] = [];
  const info = agents.map((a) => ({ a, ...root(a) }));
  for (const i of info) if (!roots.includes(i.root)) roots.push(i.root);
  const out = new Map<number, { color: string; family: number; depth: number }>();
  const shadeCount = new Map<number, number>();
  for (const i of info) {
    const family = roots.indexOf(i.root);
    const base = family < PALETTE.length ? PALETTE[family] : goldenHue(family - PALETTE.length);
    if (i.depth === 0) {
      out.set(i.a.index, { color: base, family, depth: 0 });
      continue;
    }
    const k = shadeCount.get(i.root) ?? 0;
    shadeCount.set(i.root, k + 1);
    out.set(i.a.index, { color: shade(base, k), family, depth: i.depth });
  }
  return out;
}

/** The k-th shade of a colour for a subagent: lighter and darker in turn, further each pair. */
export function shade(color: string, k: number): string {
  const rgb = parseColor(color);
  if (!rgb) return color;
  const step = 0.28 + 0.12 * Math.floor(k / 2);
  const t = Math.min(0.7, step);
  const mix = k % 2 === 0 ? 255 : 0;
  const c = rgb.map((v) => Math.round(v + (mix - v) * t));
  return `#${c.map((v) => v.toString(16).padStart(2, "0")).join("")}`;
}

function parseColor(c: string): [number, number, number] | null {
  const m = /^#([0-9a-f]{6})$/i.exec(c);
  if (m) {
    const n = parseInt(m[1], 16);
    return [(n >> 16) & 255, (n >> 8) & 255, n & 255];
  }
  const hsl = /^hsl\(([\d.]+),\s*([\d.]+)%,\s*([\d.]+)%\)$/.exec(c);
  if (hsl) return hslToRgb(Number(hsl[1]), Number(hsl[2]) / 100, Number(hsl[3]) / 100);
  return null;
}

function hslToRgb(h: number, s: number, l: number): [number, number, number] {
  const k = (n: number) => (n + h / 30) % 12;
  const a = s * Math.min(l, 1 - l);
  const f = (n: number) => l - a * Math.max(-1, Math.min(k(n) - 3, Math.min(9 - k(n), 1)));
  return [Math.round(f(0) * 255), Math.round(f(8) * 255), Math.round(f(4) * 255)];
}
