// The app's chart rules answer the cases the library's do (src/chart/scheme.cases.json, checked
// on the Rust side by tests/chart_scheme.rs): colour = strategy, agents' colour families, lane
// thinning and composition shaping are one definition, drawn alike by the app, the PNG/SVG
// charts and the HTML report.

import { describe, expect, it } from "vitest";
import cases from "../../src/chart/scheme.cases.json";
import type { CompositionView } from "./bindings/CompositionView";
import { agentFamilies, strategyColors, toHex } from "./colors";
import { compareLanes } from "./comparelanes";
import { agentAreas, callsOf } from "./composition";
import { run } from "./testruns";
import { describe as describeTick, type Tick, type TickKind, thinTicks } from "./lanes";

describe("the shared chart cases", () => {
  it("colour = strategy, in the library's colours", () => {
    const names = cases.strategyColors.strategies;
    const c = strategyColors(names);
    expect(names.map((n) => toHex(c.get(n)!))).toEqual(cases.strategyColors.colors);
  });

  it("agents' colour families", () => {
    const agents = cases.agentFamilies.parents.map((p, index) => ({ index, parent: p }));
    const f = agentFamilies(agents);
    expect(agents.map((a) => ({ ...f.get(a.index)!, color: toHex(f.get(a.index)!.color) }))).toEqual(cases.agentFamilies.styles);
  });

  it("lane thinning", () => {
    const t = cases.thinTicks;
    const ticks: Tick[] = t.ticks.map((x) => ({ call: x.call, kind: x.kind as TickKind, label: `tick at ${x.call}`, tokens: x.tokens }));
    const drawn = thinTicks(ticks, (c) => c * t.pxPerCall, t.xmin, t.xmax, t.minGap);
    const fmt = (n: number) => n.toLocaleString("en-US");
    expect(drawn.map((d) => ({ x: d.x, kind: d.kind, first: d.first.call, last: d.last.call, count: d.count, tokens: d.tokens, text: describeTick(d, fmt) }))).toEqual(t.drawn);
  });

  it("composition shaping", () => {
    // The view as the app's `composition` command builds it: kinds in stacking order, tools by
    // name within theirs.
    const order = ["system", "tools", "user", "injected", "summaries", "assistant", "reasoning", "tool_calls", "tool_results"];
    const labels: Record<string, string> = { system: "system", tools: "tool schemas", user: "user text", injected: "injected (reminders, attachments)", summaries: "summaries", assistant: "assistant text", reasoning: "reasoning", tool_calls: "tool calls", tool_results: "tool results" };
    const a = cases.agentAreas;
    const keyOf = (s: { kind: string; tool?: string }) => `${s.kind}\u0000${s.tool ?? ""}`;
    const keys = [...new Map(a.calls.flatMap((c) => c.slices).map((s) => [keyOf(s), s])).values()].sort((p, q) => order.indexOf(p.kind) - order.indexOf(q.kind) || (p.tool ?? "").localeCompare(q.tool ?? ""));
    const v: CompositionView = {
      counter: "heuristic",
      overhead: [null, null],
      whole_requests: false,
      keys: keys.map((k) => ({ kind: k.kind, label: labels[k.kind], tool: k.tool ?? null })),
      agent: a.calls.map((c) => c.agent),
      total: a.calls.map((c) => c.slices.reduce((s, x) => s + x.tokens, 0)),
      values: keys.map((k) => a.calls.map((c) => c.slices.find((s) => keyOf(s) === keyOf(k))?.tokens ?? 0)),
    };
    const bands = agentAreas(v, callsOf(v, a.agent), a.maxTools);
    expect(bands.map((b) => ({ label: b.label, color: toHex(b.color), top: b.top }))).toEqual(a.bands);
  });

  it("a run's lane: compactions with their reasons, per-call pruning", () => {
    const l = cases.laneTicks;
    const base = run("s");
    const r = run("s", { agents: l.agents, compactions: l.compactions, events: l.events, series: { ...base.series, ...l.series } });
    const [lane] = compareLanes([r], new Map([["s", "#000000"]]), new Set(), (n) => n.toLocaleString("en-US"));
    expect(lane.ticks.map((t) => ({ call: t.call, kind: t.kind, label: t.label }))).toEqual(l.ticks);
  });
});
