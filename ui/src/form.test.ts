import { describe, expect, it } from "vitest";
import type { ParamView } from "./bindings/ParamView";
import { collectParams, fieldOf, parseValue, rangeText } from "./form";

const p = (over: Partial<ParamView>): ParamView => ({
  name: "X",
  kind: "int",
  default: 0,
  min: null,
  max: null,
  choices: [],
  description: "",
  key: "",
  ...over,
});

const cutover = p({ name: "CutoverAt", kind: "int", default: 120000, min: 1000, max: 2000000, description: "Hard cut", key: "ContextBudget.CutoverAt" });
const ratio = p({ name: "Ratio", kind: "float", default: 0.1, min: 0, max: 1 });
const mode = p({ name: "Mode", kind: "enum", default: "llm", choices: ["llm", "intent", "hybrid"] });
const on = p({ name: "Enabled", kind: "bool", default: true });
const agents = p({ name: "ExcludeAgents", kind: "string_list", default: [] });
const keep = p({ name: "KeepLast", kind: "int_list", default: [8, 4, 2], min: 1 });
const caps = p({ name: "ToolResultCharOverrides", kind: "int_map", default: {} });

describe("fieldOf", () => {
  it("gives each parameter type its input, default and documentation", () => {
    const f = fieldOf(cutover);
    expect(f.input).toBe("number");
    expect(f.step).toBe("1");
    expect(f.min).toBe(1000);
    expect(f.initial).toBe("120000");
    expect(f.help).toBe("Hard cut · range 1,000 – 2,000,000 · config: ContextBudget.CutoverAt");
    expect(fieldOf(ratio).step).toBe("any");
    expect(fieldOf(mode)).toMatchObject({ input: "select", choices: ["llm", "intent", "hybrid"], initial: "llm" });
    expect(fieldOf(on)).toMatchObject({ input: "checkbox", initial: true });
    expect(fieldOf(keep).initial).toBe("8, 4, 2");
    expect(fieldOf(p({ kind: "int_map", default: { read: 2000, grep: 500 } })).initial).toBe("read=2000, grep=500");
  });
  it("describes open ranges", () => {
    expect(rangeText(p({ min: 1 }))).toBe("≥ 1");
    expect(rangeText(p({ max: 5 }))).toBe("≤ 5");
    expect(rangeText(p({}))).toBe("");
  });
});

describe("parseValue", () => {
  it("enforces whole numbers and ranges", () => {
    expect(parseValue(cutover, "150,000")).toEqual({ ok: true, value: 150000 });
    expect(parseValue(cutover, "12.5")).toMatchObject({ ok: false });
    expect(parseValue(cutover, "10")).toEqual({ ok: false, error: "CutoverAt must be at least 1,000" });
    expect(parseValue(ratio, "1.5")).toEqual({ ok: false, error: "Ratio must be at most 1" });
    expect(parseValue(ratio, "abc")).toMatchObject({ ok: false });
  });
  it("parses choices, flags, lists and maps", () => {
    expect(parseValue(mode, "intent")).toEqual({ ok: true, value: "intent" });
    expect(parseValue(mode, "magic")).toMatchObject({ ok: false });
    expect(parseValue(on, false)).toEqual({ ok: true, value: false });
    expect(parseValue(agents, "planner, critic,")).toEqual({ ok: true, value: ["planner", "critic"] });
    expect(parseValue(keep, "6, 3")).toEqual({ ok: true, value: [6, 3] });
    expect(parseValue(keep, "6, 0")).toMatchObject({ ok: false });
    expect(parseValue(caps, "read=2000, grep = 500")).toEqual({ ok: true, value: { read: 2000, grep: 500 } });
    expect(parseValue(caps, "read")).toMatchObject({ ok: false });
  });
});

describe("collectParams", () => {
  it("sends only what differs from the defaults and reports every bad value", () => {
    const { params, errors } = collectParams([cutover, ratio, mode, on], {
      CutoverAt: "120000",
      Ratio: "0.25",
      Mode: "nope",
      Enabled: true,
    });
    expect(params).toEqual({ Ratio: 0.25 });
    expect(Object.keys(errors)).toEqual(["Mode"]);
  });
});
