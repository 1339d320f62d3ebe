// What the UI says about costs (issue #20): the "cost excludes …" notice wherever a cost is
// shown, the session's models with how the model table prices them, and the budget figures that
// were assumed. Figures and notices come from the library (`ctxlab::models::session_pricing`,
// `Cost::notice`); this module only words and orders them.

import type { ModelPriceView } from "./bindings/ModelPriceView";
import type { PricingView } from "./bindings/PricingView";
import type { RunView } from "./bindings/RunView";
import type { ImportView } from "./bindings/ImportView";
import { fmtInt, fmtUsd } from "./format";

/** The notes a comparison's runs carry, each said once: cost notices (runs of one session
 *  leave out the same calls) and budget figures assumed, in the order the runs give them. */
export function runNotes(runs: RunView[]): { notices: string[]; assumed: string[] } {
  const notices: string[] = [];
  const assumed: string[] = [];
  for (const r of runs) {
    if (r.cost_notice !== null && !notices.includes(r.cost_notice)) notices.push(r.cost_notice);
    for (const a of r.budget_assumed) if (!assumed.includes(a)) assumed.push(a);
  }
  return { notices, assumed };
}

/** How the table prices a model, in words: "unpriced", "priced", "priced as claude-opus-4-5". */
export function priceStatus(m: ModelPriceView): string {
  if (!m.priced) return m.entry === null ? "unpriced: not in the model table" : `unpriced: ${m.entry} has no price`;
  if (m.entry === null || m.matched_by === "id") return "priced";
  return m.matched_by === "alias" ? `priced (alias of ${m.entry})` : `priced as ${m.entry}`;
}

/** The session's models, those that need the user's attention first (unpriced, then window
 *  assumed), most calls first within each group. */
export function modelRows(p: PricingView): ModelPriceView[] {
  const rank = (m: ModelPriceView) => (!m.priced ? 0 : !m.window_known ? 1 : 2);
  return [...p.models].sort((a, b) => rank(a) - rank(b) || b.calls - a.calls || a.name.localeCompare(b.name));
}

/** The line under the cost: ctxlab's price of the recorded usage and, where the log records
 *  the tool's own cost, both side by side with their difference. */
export function costLine(p: PricingView): string {
  let s = `${fmtUsd(p.recorded_usd)} for the usage the log recorded, at the model table's prices (${fmtInt(p.priced_calls)} priced call${p.priced_calls === 1 ? "" : "s"})`;
  if (p.tool_cost_calls > 0 && p.tool_cost_usd > 0) {
    const d = ((p.cost_usd_on_tool_calls - p.tool_cost_usd) / p.tool_cost_usd) * 100;
    s += `; the tool itself recorded ${fmtUsd(p.tool_cost_usd)} on ${fmtInt(p.tool_cost_calls)} of them, ctxlab's prices give ${fmtUsd(p.cost_usd_on_tool_calls)} (${d >= 0 ? "+" : "−"}${Math.abs(d).toFixed(1)} %)`;
  }
  return s;
}

/** Where the prices come from: the built-in table's date, and the user's own table over it. */
export function tableLine(p: PricingView): string {
  if (p.user_table === null) return `Model table: built-in, checked ${p.table_date ?? "undated"}`;
  return `Model table: ${p.user_table} (${p.table_date ?? "undated"}) over the built-in one (checked ${p.builtin_date ?? "undated"})`;
}

/** What an import did, in one sentence. */
export function importSummary(r: ImportView): string {
  const parts = [`${fmtInt(r.added.length)} added`, `${fmtInt(r.updated.length)} updated`, `${fmtInt(r.kept.length)} of yours kept`, `${fmtInt(r.unchanged)} unchanged`];
  let s = `Imported ${fmtInt(r.read)} models from ${r.from} into ${r.into}: ${parts.join(", ")}`;
  if (r.skipped) s += `; ${fmtInt(r.skipped)} entries skipped (not chat models, or no price or limit)`;
  if (r.warnings.length) s += `; ${fmtInt(r.warnings.length)} could not be read`;
  return s;
}
