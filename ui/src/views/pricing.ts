// The Session view's cost section: what the recorded usage costs at the model table's prices,
// the "cost excludes …" notice, the session's models (unpriced ones first) and the budget figures
// that were assumed, with *Import a price list…* (the same import as `ctxlab models import`).
// Also the notes under a comparison's metrics table. Wording in ../pricing.ts.

import { open } from "@tauri-apps/plugin-dialog";
import { api } from "../api";
import type { PricingView } from "../bindings/PricingView";
import type { RunView } from "../bindings/RunView";
import { errorBox, h } from "../dom";
import { fmtInt } from "../format";
import { costLine, importSummary, modelRows, priceStatus, runNotes, tableLine } from "../pricing";
import { changed, store } from "../store";

let pricing: PricingView | null = null;
let pricingFor: number | null = null;
/** The session the section last showed figures for. */
let shownFor: number | null = null;
let loading: number | null = null;
let pricingError: string | null = null;
let importText: string | null = null;
let importError: string | null = null;
let importPath = "";

/** The "cost excludes …" notice, where a cost is shown. */
export function costNotice(text: string | null): HTMLElement | null {
  return text === null ? null : h("div.cost-notice", { testid: "cost-notice", role: "note" }, "⚠ ", text);
}

/** Under a comparison's metrics: what its costs leave out and which budget figures it assumed. */
export function compareNotes(runs: RunView[]): HTMLElement | null {
  const { notices, assumed } = runNotes(runs);
  if (!notices.length && !assumed.length) return null;
  return h("div.notes", { testid: "compare-notes" }, notices.map(costNotice), assumed.map((a) => h("div.small.muted", { testid: "budget-assumed" }, `budget: ${a}`)));
}

async function load(key: number) {
  if (loading === key) return;
  loading = key;
  try {
    pricing = await api.sessionPricing(key);
    pricingFor = key;
    pricingError = null;
  } catch (e) {
    pricing = null;
    pricingFor = key;
    pricingError = (e as { message: string }).message;
  }
  loading = null;
  changed();
}

async function runImport(path: string) {
  importError = null;
  importText = null;
  if (!path.trim()) {
    importError = "Name a price list file (LiteLLM's model_prices_and_context_window.json format).";
    changed();
    return;
  }
  try {
    const r = await api.importPriceList(path.trim());
    importText = importSummary(r);
    store.status = importText;
    // Every figure is priced again with the merged table: this session's now, replays next.
    if (store.current !== null) {
      pricingFor = null;
      await load(store.current);
    }
    store.runs = [];
  } catch (e) {
    importError = (e as { message: string }).message;
  }
  changed();
}

async function pickAndImport() {
  const picked = await open({ multiple: false, directory: false, title: "Import a price list (LiteLLM JSON)", filters: [{ name: "Price list", extensions: ["json"] }] });
  if (typeof picked === "string") {
    importPath = picked;
    await runImport(picked);
  }
}

/** Prices the session again at its next render (a followed log grew). */
export function invalidatePricing() {
  pricingFor = null;
}

/** The cost section of the Session view for open session `key` (read once, again after an
 *  import). */
export function pricingSection(key: number): HTMLElement {
  if (pricingFor !== key) {
    if (shownFor !== key) {
      importText = null;
      importError = null;
    }
    void load(key);
    // While the figures are read again, the ones shown stay.
    if (pricing === null || shownFor !== key) return h("div.muted", { testid: "pricing" }, "Pricing the session…");
  }
  shownFor = key;
  if (pricingError !== null || pricing === null) return h("div", { testid: "pricing" }, errorBox(pricingError ?? "no pricing"));
  const p = pricing;
  const rows = modelRows(p);
  const pathInput = h("input.path", { type: "text", value: importPath, placeholder: "path to model_prices_and_context_window.json", testid: "import-path", oninput: (e: Event) => (importPath = (e.target as HTMLInputElement).value) });
  pathInput.addEventListener("keydown", (e) => e.key === "Enter" && void runImport(importPath));
  const needsImport = rows.some((m) => !m.priced || !m.window_known);
  return h(
    "div.pricing",
    { testid: "pricing" },
    h("div", { testid: "session-cost" }, h("span.label", {}, "Cost "), costLine(p)),
    costNotice(p.notice),
    h("div.small.muted", {}, tableLine(p)),
    p.budget_error
      ? h("div.small", { testid: "budget-error" }, `Budget: ${p.budget_error}`)
      : h(
          "div.small",
          {},
          `Budget for replays: window ${fmtInt(p.context_window)}, max output ${fmtInt(p.max_output)}`,
          p.assumed.map((a) => h("div.muted", { testid: "budget-assumed" }, a)),
        ),
    rows.length
      ? h(
          "table.grid.models",
          { testid: "session-models" },
          h("thead", {}, h("tr", {}, ["Model in the log", "Calls", "Price", "Window"].map((t) => h("th", {}, t)))),
          h(
            "tbody",
            {},
            rows.map((m) =>
              h(
                "tr",
                { class: m.priced ? "" : "unpriced", "data-model": m.name, "data-priced": String(m.priced) },
                h("td", {}, m.name),
                h("td.num", {}, fmtInt(m.calls)),
                h("td", {}, priceStatus(m)),
                h("td", {}, m.window_known ? "from the table" : "assumed (see budget)"),
              ),
            ),
          ),
        )
      : h("div.small.muted", {}, "The log names no model: its calls cannot be priced."),
    h(
      "div.toolbar",
      {},
      h("button", { class: needsImport ? "primary" : "", onclick: () => void pickAndImport(), testid: "import-prices", title: `Merge a LiteLLM price list into ${p.user_table_path ?? "your models.toml"} (your own entries win), as ctxlab models import does` }, "Import a price list…"),
      pathInput,
      h("button", { onclick: () => void runImport(importPath), testid: "import-path-run" }, "Import"),
      h("span.muted.small", {}, "or add the model to models.toml"),
    ),
    importText ? h("div.small", { testid: "import-result" }, importText) : null,
    importError ? errorBox(importError) : null,
  );
}
