// A uPlot line chart over a session's calls with compaction markers (vertical dashed lines),
// threshold lines (horizontal dashed: warn yellow, cutover red, trigger violet), a hover box,
// wheel zoom, drag-to-zoom, shift+wheel pan and double-click reset. Whatever the series length,
// only the min-max decimation of the visible range is handed to uPlot, re-done on every zoom.

import uPlot from "uplot";
import { PALETTE } from "./colors";
import { decimateIndices, pick } from "./decimate";
import { fmtInt, fmtShort } from "./format";
import { type Lane, type Thinned, describe, thinTicks } from "./lanes";

export { PALETTE };

export interface ChartLine {
  label: string;
  values: (number | null)[];
  color?: string;
  dash?: number[];
  /** Line width in CSS px (1.5 when not given). */
  width?: number;
  /** Fill below the line to 0 (stacked areas: give the top band first). */
  fill?: string;
}

export interface ChartMarker {
  call: number;
  label: string;
  color?: string;
}

export interface ChartThreshold {
  tokens: number;
  kind: string;
  label: string;
}

export interface ChartSpec {
  title: string;
  yLabel: string;
  x: number[];
  lines: ChartLine[];
  markers: ChartMarker[];
  thresholds: ChartThreshold[];
  /** Marker lanes under the plot (compactions and per-call pruning as ticks, thinned). */
  lanes?: Lane[];
  /** false: no uPlot legend (the view draws its own). */
  legend?: boolean;
  height?: number;
  /** HTML lines for the hover box at one call. */
  hover?: (call: number) => string;
  onPick?: (call: number) => void;
  /** Called once, after the chart is first drawn. */
  onDrawn?: () => void;
}


/** Threshold colours follow the theme (style.css: --warn, --cutover, --trigger). */
function thresholdColor(kind: string): string {
  const fallback: Record<string, string> = { warn: "#d6a400", cutover: "#e0483e", trigger: "#9b59d0" };
  return kind in fallback ? cssVar(`--${kind}`, fallback[kind]) : cssVar("--fg-muted", "#888");
}

/** Text on the plot with a box of the panel's colour behind it, so lines crossing it do not
 *  hide it. */
function label(ctx: CanvasRenderingContext2D, text: string, x: number, y: number, color: string, px: number) {
  const w = ctx.measureText(text).width;
  ctx.save();
  ctx.globalAlpha = 0.85;
  ctx.fillStyle = cssVar("--panel", "#fff");
  ctx.fillRect(x - 2 * px, y - 10 * px, w + 4 * px, 13 * px);
  ctx.restore();
  ctx.fillStyle = color;
  ctx.fillText(text, x, y);
}

function cssVar(name: string, fallback: string): string {
  const v = getComputedStyle(document.documentElement).getPropertyValue(name).trim();
  return v || fallback;
}

export class Chart {
  readonly root: HTMLElement;
  private plot: uPlot | null = null;
  private spec: ChartSpec;
  private redecimating = false;
  private hoverBox: HTMLDivElement;
  private resizeObserver: ResizeObserver;
  private laneCanvas: HTMLCanvasElement | null = null;
  /** Drawn ticks per lane, for the lanes' hover. */
  private laneTicks: Thinned[][] = [];

  constructor(parent: HTMLElement, spec: ChartSpec) {
    this.spec = spec;
    this.root = document.createElement("div");
    this.root.className = "chart";
    this.root.dataset.testid = "chart";
    const title = document.createElement("div");
    title.className = "chart-title";
    title.textContent = spec.title;
    this.root.append(title);
    this.hoverBox = document.createElement("div");
    this.hoverBox.className = "chart-hover";
    this.hoverBox.hidden = true;
    parent.append(this.root);
    this.build();
    if (spec.lanes && spec.lanes.length) this.buildLanes();
    this.root.append(this.hoverBox);
    this.resizeObserver = new ResizeObserver(() => this.resize());
    this.resizeObserver.observe(this.root);
  }

  private width(): number {
    return Math.max(300, this.root.clientWidth - 8);
  }

  /** The columns uPlot gets for x in [lo, hi]. */
  private dataFor(lo: number, hi: number): uPlot.AlignedData {
    const { x, lines } = this.spec;
    const a = Math.max(0, Math.floor(lo));
    const b = Math.min(x.length, Math.ceil(hi) + 1);
    const idx = decimateIndices(
      lines.map((l) => l.values),
      a,
      b,
      this.width(),
    );
    return [Array.from(idx, (i) => x[i]), ...lines.map((l) => pick(l.values, idx))] as uPlot.AlignedData;
  }

  private build() {
    const { spec } = this;
    const axisColor = cssVar("--fg-muted", "#888");
    const gridColor = cssVar("--grid", "rgba(128,128,128,0.15)");
    const n = spec.x.length;
    const opts: uPlot.Options = {
      width: this.width(),
      height: spec.height ?? 300,
      scales: { x: { time: false }, y: { range: (_u, _min, max) => [0, Math.max(max, ...spec.thresholds.map((t) => t.tokens)) * 1.08 || 1] } },
      axes: [
        { stroke: axisColor, grid: { stroke: gridColor }, ticks: { stroke: gridColor }, label: "call", values: (_u, ts) => ts.map((t) => fmtInt(t)) },
        { stroke: axisColor, grid: { stroke: gridColor }, ticks: { stroke: gridColor }, label: spec.yLabel, size: 60, values: (_u, ts) => ts.map((t) => fmtShort(t)) },
      ],
      series: [
        { label: "call", value: (_u, v) => (v === null ? "—" : fmtInt(v)) },
        ...spec.lines.map((l, i) => ({
          label: l.label,
          stroke: l.color ?? PALETTE[i % PALETTE.length],
          width: l.width ?? 1.5,
          dash: l.dash,
          fill: l.fill,
          spanGaps: true,
          points: { show: false },
          value: (_u: uPlot, v: number | null) => (v === null ? "—" : fmtInt(v)),
        })),
      ],
      cursor: { drag: { x: true, y: false, setScale: true }, points: { size: 6 } },
      legend: { show: spec.legend !== false, live: true },
      hooks: {
        draw: [(u) => this.drawOverlays(u)],
        setScale: [
          (u, key) => {
            if (key !== "x" || this.redecimating) return;
            const min = u.scales.x.min ?? 0;
            const max = u.scales.x.max ?? n - 1;
            this.redecimating = true;
            u.setData(this.dataFor(min, max), false);
            this.redecimating = false;
          },
        ],
        setCursor: [(u) => this.hover(u)],
      },
    };
    this.plot = new uPlot(opts, this.dataFor(0, n - 1), this.root);
    const over = this.plot.over;
    over.addEventListener("wheel", (e) => this.wheel(e), { passive: false });
    over.addEventListener("dblclick", () => this.resetZoom());
    over.addEventListener("click", () => {
      const i = this.plot?.cursor.idx;
      if (i !== null && i !== undefined && this.plot) {
        const call = this.plot.data[0][i];
        if (call !== undefined) spec.onPick?.(call as number);
      }
    });
  }

  resetZoom() {
    const n = this.spec.x.length;
    this.plot?.setScale("x", { min: 0, max: Math.max(1, n - 1) });
  }

  private wheel(e: WheelEvent) {
    const u = this.plot;
    if (!u) return;
    e.preventDefault();
    const n = this.spec.x.length;
    const min = u.scales.x.min ?? 0;
    const max = u.scales.x.max ?? n - 1;
    const span = max - min;
    if (e.shiftKey) {
      const shift = (span * Math.sign(e.deltaY || e.deltaX)) / 10;
      const lo = Math.max(0, Math.min(n - 1 - span, min + shift));
      u.setScale("x", { min: lo, max: lo + span });
      return;
    }
    const at = u.posToVal(e.offsetX, "x");
    const factor = e.deltaY < 0 ? 0.8 : 1.25;
    const newSpan = Math.min(n - 1, Math.max(10, span * factor));
    const lo = Math.max(0, at - ((at - min) / span) * newSpan);
    u.setScale("x", { min: lo, max: Math.min(n - 1, lo + newSpan) });
  }

  private hover(u: uPlot) {
    const i = u.cursor.idx;
    if (i === null || i === undefined || !this.spec.hover || u.cursor.left === undefined || u.cursor.left < 0) {
      this.hoverBox.hidden = true;
      return;
    }
    const call = u.data[0][i] as number;
    this.hoverBox.innerHTML = this.spec.hover(call);
    this.hoverBox.hidden = false;
    const left = (u.cursor.left ?? 0) + u.over.offsetLeft + 16;
    const flip = left + 260 > this.root.clientWidth;
    this.hoverBox.style.left = `${flip ? left - 290 : left}px`;
    this.hoverBox.style.top = `${(u.cursor.top ?? 0) + u.over.offsetTop + 10}px`;
  }

  private drawOverlays(u: uPlot) {
    if (this.spec.onDrawn) {
      const f = this.spec.onDrawn;
      this.spec.onDrawn = undefined;
      f();
    }
    const ctx = u.ctx;
    const { left, top, width, height } = u.bbox;
    const px = devicePixelRatio || 1;
    ctx.save();
    ctx.beginPath();
    ctx.rect(left, top, width, height);
    ctx.clip();
    ctx.font = `${11 * px}px system-ui, sans-serif`;
    // uPlot leaves the context as its last axis label set it (right- or centre-aligned).
    ctx.textAlign = "left";
    ctx.textBaseline = "alphabetic";
    let markers = 0;
    const muted = cssVar("--fg-muted", "#888");
    ctx.setLineDash([5 * px, 4 * px]);
    ctx.lineWidth = 1 * px;
    const xmin = u.scales.x.min ?? 0;
    const xmax = u.scales.x.max ?? 0;
    let lastLabelEnd = -Infinity;
    // Labels are drawn after every line, so no later line crosses an earlier label.
    const labels: [string, number, number, string][] = [];
    for (const m of this.spec.markers) {
      if (m.call < xmin || m.call > xmax) continue;
      const x = Math.round(u.valToPos(m.call, "x", true));
      ctx.strokeStyle = m.color ?? muted;
      ctx.beginPath();
      ctx.moveTo(x, top);
      ctx.lineTo(x, top + height);
      ctx.stroke();
      // Labels never overlap: one that would touch the previous is left out (the line stays).
      const w = ctx.measureText(m.label).width;
      // Right of the line, or left of it where the plot ends (else the label is cut off).
      const lx = x + 3 * px + w > left + width ? x - 3 * px - w : x + 3 * px;
      if (lx > lastLabelEnd + 4 * px) {
        labels.push([m.label, lx, top + 12 * px, m.color ?? muted]);
        lastLabelEnd = lx + w;
      }
      markers++;
    }
    let thresholds = 0;
    const drawn = new Set<string>();
    // Label boxes already placed, so close thresholds get their labels side by side.
    const placed: { x: number; y: number }[] = [];
    for (const t of this.spec.thresholds) {
      const key = `${t.kind}:${t.tokens}`;
      if (drawn.has(key)) continue;
      drawn.add(key);
      const y = Math.round(u.valToPos(t.tokens, "y", true));
      if (y < top || y > top + height) continue;
      const color = thresholdColor(t.kind);
      ctx.strokeStyle = color;
      ctx.setLineDash([8 * px, 5 * px]);
      ctx.lineWidth = 1.5 * px;
      ctx.beginPath();
      ctx.moveTo(left, y);
      ctx.lineTo(left + width, y);
      ctx.stroke();
      const text = `${t.kind} ${fmtInt(t.tokens)} (${t.label})`;
      let tx = left + width - ctx.measureText(text).width - 6 * px;
      for (const p of placed) if (Math.abs(p.y - y) < 14 * px && tx + ctx.measureText(text).width > p.x - 12 * px) tx = p.x - ctx.measureText(text).width - 16 * px;
      labels.push([text, tx, y - 4 * px, color]);
      placed.push({ x: tx, y });
      thresholds++;
    }
    ctx.setLineDash([]);
    for (const [text, x, y, color] of labels) label(ctx, text, x, y, color, px);
    ctx.restore();
    // What the end-to-end tests (and screen readers via the caption) can see of a canvas.
    this.root.dataset.markers = String(markers);
    this.root.dataset.thresholds = String(thresholds);
    this.root.dataset.points = String(u.data[0].length);
    this.root.dataset.series = String(this.spec.lines.length);
    this.drawLanes(u);
  }

  static readonly LANE_H = 14;

  private buildLanes() {
    const c = document.createElement("canvas");
    c.className = "chart-lanes";
    c.dataset.testid = "marker-lanes";
    this.laneCanvas = c;
    this.root.append(c);
    c.addEventListener("mousemove", (e) => this.laneHover(e));
    c.addEventListener("mouseleave", () => (this.hoverBox.hidden = true));
    if (this.plot) this.drawLanes(this.plot);
  }

  /** One row per lane under the plot, aligned with its x axis: the lane's name at the left,
   *  compactions as full-height ticks, per-call pruning as short ticks at the bottom with a
   *  triangle where a stretch of it starts. */
  private drawLanes(u: uPlot) {
    const c = this.laneCanvas;
    const lanes = this.spec.lanes;
    if (!c || !lanes) return;
    const px = devicePixelRatio || 1;
    const cssW = u.width;
    const cssH = lanes.length * Chart.LANE_H + 4;
    c.style.width = `${cssW}px`;
    c.style.height = `${cssH}px`;
    c.width = Math.round(cssW * px);
    c.height = Math.round(cssH * px);
    const ctx = c.getContext("2d");
    if (!ctx) return;
    ctx.scale(px, px);
    const left = u.bbox.left / px;
    const width = u.bbox.width / px;
    const xmin = u.scales.x.min ?? 0;
    const xmax = u.scales.x.max ?? 0;
    const toPx = (call: number) => u.valToPos(call, "x");
    ctx.font = "10px system-ui, sans-serif";
    ctx.textBaseline = "middle";
    const grid = cssVar("--grid", "rgba(128,128,128,0.15)");
    const muted = cssVar("--fg-muted", "#888");
    this.laneTicks = [];
    let drawn = 0;
    lanes.forEach((lane, li) => {
      const y = li * Chart.LANE_H + 2;
      ctx.fillStyle = grid;
      ctx.fillRect(left, y, width, Chart.LANE_H - 2);
      ctx.fillStyle = lane.color;
      ctx.textAlign = "right";
      const name = lane.label.length > 12 ? `${lane.label.slice(0, 11)}…` : lane.label;
      ctx.fillText(name, left - 4, y + (Chart.LANE_H - 2) / 2);
      const ticks = thinTicks(lane.ticks, toPx, xmin, xmax);
      this.laneTicks.push(ticks);
      for (const t of ticks) {
        const x = left + t.x;
        ctx.strokeStyle = t.kind === "recorded" ? muted : lane.color;
        ctx.fillStyle = lane.color;
        if (t.kind === "pruning") {
          ctx.lineWidth = 1;
          ctx.globalAlpha = 0.55;
          ctx.beginPath();
          ctx.moveTo(x, y + Chart.LANE_H - 6);
          ctx.lineTo(x, y + Chart.LANE_H - 2);
          ctx.stroke();
          ctx.globalAlpha = 1;
          if (t.first.label.startsWith("per-call pruning starts")) {
            ctx.beginPath();
            ctx.moveTo(x - 4, y + 1);
            ctx.lineTo(x + 4, y + 1);
            ctx.lineTo(x, y + 7);
            ctx.closePath();
            ctx.fill();
          }
        } else {
          ctx.lineWidth = t.count > 1 ? 3 : 2;
          ctx.beginPath();
          ctx.moveTo(x, y + 1);
          ctx.lineTo(x, y + Chart.LANE_H - 3);
          ctx.stroke();
        }
        drawn++;
      }
    });
    this.root.dataset.lanes = String(lanes.length);
    this.root.dataset.laneTicks = String(drawn);
  }

  private laneHover(e: MouseEvent) {
    const u = this.plot;
    if (!u || !this.spec.lanes) return;
    const li = Math.floor((e.offsetY - 2) / Chart.LANE_H);
    const ticks = this.laneTicks[li];
    const left = u.bbox.left / (devicePixelRatio || 1);
    if (!ticks) {
      this.hoverBox.hidden = true;
      return;
    }
    let best: Thinned | null = null;
    for (const t of ticks) if (Math.abs(left + t.x - e.offsetX) <= 5 && (!best || Math.abs(left + t.x - e.offsetX) < Math.abs(left + best.x - e.offsetX))) best = t;
    if (!best) {
      this.hoverBox.hidden = true;
      return;
    }
    const lane = this.spec.lanes[li];
    const box = this.hoverBox;
    box.innerHTML = "";
    const head = document.createElement("div");
    head.innerHTML = `<b></b>`;
    (head.firstChild as HTMLElement).textContent = lane.label;
    const body = document.createElement("div");
    body.textContent = describe(best, fmtInt);
    box.append(head, body);
    box.hidden = false;
    const canvas = this.laneCanvas as HTMLCanvasElement;
    const x = e.offsetX + canvas.offsetLeft + 12;
    box.style.left = `${x + 280 > this.root.clientWidth ? x - 300 : x}px`;
    box.style.top = `${canvas.offsetTop + li * Chart.LANE_H - 40}px`;
  }

  private resize() {
    if (!this.plot) return;
    const w = this.width();
    if (Math.abs(w - this.plot.width) > 2) this.plot.setSize({ width: w, height: this.spec.height ?? 300 });
  }

  destroy() {
    this.resizeObserver.disconnect();
    this.plot?.destroy();
    this.root.remove();
  }
}
