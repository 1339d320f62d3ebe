// Colour assignment for the charts (#21): in Compare, colour = strategy everywhere (both charts,
// the legend, the metrics table, the kept-at-call view) and agent = line style; in the Session
// view, one colour family per top-level agent, its subagents in lighter or darker shades of it.
// The constants are the library's (src/chart/scheme.json, also read by the PNG/SVG charts and the
// HTML report), and src/chart/scheme.cases.json holds cases both sides must answer alike.

import scheme from "../../src/chart/scheme.json";

/** Ten hues far apart, readable on the dark and the light panel. */
export const PALETTE: readonly string[] = scheme.palette;

/** Line styles by agent rank: solid for the first (the main agent), then dashes and dots. */
export const AGENT_DASHES: (number[] | undefined)[] = scheme.agentDashes.map((d) => (d.length ? d : undefined));

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
  const g = scheme.goldenHue;
  const hue = (g.start + k * g.step) % 360;
  // Alternate lightness so neighbours in the sequence also differ in brightness.
  const light = g.lightness[k % 2];
  return `hsl(${hue.toFixed(1)}, ${g.saturation}%, ${light}%)`;
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
  const step = scheme.shade.first + scheme.shade.step * Math.floor(k / 2);
  const t = Math.min(scheme.shade.max, step);
  const mix = k % 2 === 0 ? 255 : 0;
  const c = rgb.map((v) => Math.round(v + (mix - v) * t));
  return `#${c.map((v) => v.toString(16).padStart(2, "0")).join("")}`;
}

/** A colour of this module as `#rrggbb` (what the library's charts write). */
export function toHex(color: string): string {
  const rgb = parseColor(color);
  return rgb ? `#${rgb.map((v) => v.toString(16).padStart(2, "0")).join("")}` : color;
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
