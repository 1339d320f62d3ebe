import { describe, expect, it } from "vitest";
import type { ModelPriceView } from "./bindings/ModelPriceView";
import type { PricingView } from "./bindings/PricingView";
import type { RunView } from "./bindings/RunView";
import { costLine, importSummary, modelRows, priceStatus, runNotes, tableLine } from "./pricing";

const model = (over: Partial<ModelPriceView>): ModelPriceView => ({ name: "m", calls: 1, entry: "m", matched_by: "id", priced: true, window_known: true, ...over });

const pricing = (over: Partial<PricingView>): PricingView => ({
  user_table: null, user_table_path: "/home/u/.local/share/ctxlab/models.toml", table_date: "2026-11-26", builtin_date: null,
  models: [], recorded_usd: 1.5, priced_calls: 3, unpriced_calls: 0, notice: null, assumed: [], budget_error: null,
  context_window: 200000, max_output: 64000, tool_cost_calls: 0, tool_cost_usd: 0, cost_usd_on_tool_calls: 0, ...over,
});

const run = (cost_notice: string | null, budget_assumed: string[]) => ({ cost_notice, budget_assumed }) as unknown as RunView;

describe("runNotes", () => {
  it("says each notice once, in the runs' order", () => {
    const n = "cost excludes 12 calls of glm-4-7: no price — add it to models.toml or import a price list (ctxlab models import)";
    const a = "context window 200,000 assumed: glm-4-7 is not in the model table; …";
    expect(runNotes([run(n, [a]), run(n, [a]), run(null, [])])).toEqual({ notices: [n], assumed: [a] });
    expect(runNotes([run(null, [])])).toEqual({ notices: [], assumed: [] });
  });
});

describe("priceStatus and modelRows", () => {
  it("words how each model is priced", () => {
    expect(priceStatus(model({}))).toBe("priced");
    expect(priceStatus(model({ name: "claude-sonnet-4.6", entry: "claude-sonnet-4-6", matched_by: "alias" }))).toBe("priced (alias of claude-sonnet-4-6)");
    expect(priceStatus(model({ name: "claude-haiku-4-5-20251001", entry: "claude-haiku-4-5", matched_by: "suffix" }))).toBe("priced as claude-haiku-4-5");
    expect(priceStatus(model({ entry: null, matched_by: null, priced: false }))).toBe("unpriced: not in the model table");
    expect(priceStatus(model({ name: "gpt-5.3-codex-spark", entry: "gpt-5.3-codex-spark", priced: false }))).toBe("unpriced: gpt-5.3-codex-spark has no price");
  });
  it("puts what needs attention first: unpriced, then assumed windows, most calls first", () => {
    const p = pricing({
      models: [
        model({ name: "a", calls: 90 }),
        model({ name: "b", calls: 5, window_known: false }),
        model({ name: "c", calls: 2, priced: false, entry: null }),
        model({ name: "d", calls: 7, priced: false, entry: null }),
      ],
    });
    expect(modelRows(p).map((m) => m.name)).toEqual(["d", "c", "b", "a"]);
  });
});

describe("costLine and tableLine", () => {
  it("puts the tool's recorded cost beside ctxlab's, with the difference", () => {
    expect(costLine(pricing({}))).toBe("$1.50 for the usage the log recorded, at the model table's prices (3 priced calls)");
    const l = costLine(pricing({ tool_cost_calls: 2, tool_cost_usd: 1.0, cost_usd_on_tool_calls: 0.98 }));
    expect(l).toContain("the tool itself recorded $1.00 on 2 of them, ctxlab's prices give $0.9800 (−2.0 %)");
  });
  it("says which table priced, and its date", () => {
    expect(tableLine(pricing({}))).toBe("Model table: built-in, checked 2026-11-26");
    expect(tableLine(pricing({ user_table: "/u/models.toml", table_date: "2026-11-27", builtin_date: "2026-11-26" }))).toBe(
      "Model table: /u/models.toml (2026-11-27) over the built-in one (checked 2026-11-26)",
    );
  });
});

describe("importSummary", () => {
  it("counts what the import changed", () => {
    const s = importSummary({ from: "/t/prices.json", into: "/u/models.toml", read: 3, skipped: 1, added: ["x", "y"], updated: [], kept: ["z: input 1 → 2"], unchanged: 0, warnings: [] });
    expect(s).toBe("Imported 3 models from /t/prices.json into /u/models.toml: 2 added, 0 updated, 1 of yours kept, 0 unchanged; 1 entries skipped (not chat models, or no price or limit)");
  });
});
