// End to end, costs and names (issues #20 and #21 point 6): the real app under Xvfb on real logs
// from ../shared/real-logs. A mini-swe-agent run on x-ai/grok-4-fast, a model the built-in table
// neither prices nor sizes: the Session view says what its cost leaves out and lists the model as
// unpriced with its window assumed; Compare says it under the metrics; importing a LiteLLM price
// list from the Session view prices it. Logs without a title entry are named by their first
// prompt and project folder, never a bare UUID, in the picker and the Library.
// scripts/app-e2e.sh sets CTXLAB_APP, WEBDRIVER_URL, SHOTS, REAL_LOGS.

import assert from "node:assert/strict";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { App, need } from "./app.mjs";

const REAL_LOGS = need("REAL_LOGS");
const GROK = join(REAL_LOGS, "mini-swe-agent_yudai/last_mini_run.traj.json");
const UNTITLED = [
  join(REAL_LOGS, "codex-cli_raze/codex-session.jsonl"),
  join(REAL_LOGS, "claude-code_posthog-impact/claude-session.jsonl"),
  join(REAL_LOGS, "pi-agent_pi-mono/session.jsonl"),
];
for (const p of [GROK, ...UNTITLED]) assert.ok(existsSync(p), `${p} is missing: ../shared/real-logs must sit beside the checkout`);
const work = mkdtempSync(join(tmpdir(), "ctxlab-e2e-costs-"));
const wd = new App();
// Where the app keeps the user's model table (XDG_DATA_HOME is the script's own folder).
const userTable = join(need("XDG_DATA_HOME"), "ctxlab", "models.toml");
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;



const text = async (css) => wd.text(await wd.find(css));


describe("costs and names in the app", () => {
  before(async () => {
    rmSync(userTable, { force: true });
    await wd.launch();
  });
  after(async () => {
    await wd.quit();
    // The import wrote the user's table: leave the next test file the built-in one.
    rmSync(userTable, { force: true });
  });

  it("says what the Session view's cost leaves out and lists the unpriced model", async () => {
    await wd.openPath(GROK);
    await wd.until("the log in the library", async () => (await text('[data-testid="sessions"]')).includes("swe-agent"));
    await wd.tab("session");
    // Read by selector, found again when the view re-renders as its figures arrive.
    const notice = await wd.textOf('[data-testid="pricing"] [data-testid="cost-notice"]', 60_000);
    assert.match(notice, /cost excludes \d+ calls of x-ai\/grok-4-fast: no price — add it to models\.toml or import a price list/);
    const row = '[data-testid="session-models"] tr[data-model="x-ai/grok-4-fast"]';
    assert.equal(await wd.until("the model's row", async () => wd.attr(await wd.find(row), "data-priced")), "false");
    const rowText = await wd.textOf(row);
    assert.match(rowText, /unpriced: not in the model table/);
    assert.match(rowText, /assumed/);
    const assumed = await wd.exec(`return [...document.querySelectorAll('[data-testid="pricing"] [data-testid="budget-assumed"]')].map(e => e.textContent)`);
    assert.ok(assumed.some((a) => /^context window [\d,]+ assumed: x-ai\/grok-4-fast is not in the model table/.test(a)), assumed.join("\n"));
    assert.match(await text('[data-testid="session-cost"]'), /\$0\.0000 for the usage the log recorded/);
    await wd.exec(`document.querySelector('[data-testid="pricing"]').scrollIntoView()`);
    await wd.shot("costs-01-session-unpriced");
  });

  it("says it again under a comparison's metrics", async () => {
    await wd.tab("compare");
    await wd.press('[data-testid="pick-none"]');
    await wd.press('[data-testid="run-compare"]');
    await wd.waitFor('[data-testid="metrics-table"]', 180_000);
    const notes = await wd.text(await wd.waitFor('[data-testid="compare-notes"]'));
    assert.match(notes, /cost excludes \d+ calls of x-ai\/grok-4-fast: no price/);
    assert.match(notes, /budget: context window [\d,]+ assumed/);
    assert.match(await text('[data-testid="metrics-table"]'), /unpriced/);
    // After the last re-render (which keeps the scroll position), show the notes.
    await new Promise((r) => setTimeout(r, 500));
    await wd.exec(`document.querySelector('[data-testid="compare-notes"]').scrollIntoView({ block: "center" })`);
    await wd.shot("costs-02-compare-notice");
  });

  it("imports a LiteLLM price list from the Session view, and the model is priced", async () => {
    await wd.tab("session");
    await wd.waitFor('[data-testid="import-path"]');
    // LiteLLM's model_prices_and_context_window.json format, written here: per-token prices.
    const list = join(work, "prices.json");
    writeFileSync(
      list,
      JSON.stringify({
        "x-ai/grok-4-fast": { litellm_provider: "xai", mode: "chat", input_cost_per_token: 2e-7, output_cost_per_token: 5e-7, cache_read_input_token_cost: 5e-8, max_input_tokens: 2000000, max_output_tokens: 30000 },
        "text-embedding-3-small": { litellm_provider: "openai", mode: "embedding", input_cost_per_token: 2e-8 },
      }),
    );
    await wd.setInput("import-path", list);
    await wd.press('[data-testid="import-path-run"]');
    const result = await wd.text(await wd.waitFor('[data-testid="import-result"]', 30_000));
    assert.match(result, /Imported 1 models from .*prices\.json into .*models\.toml: 1 added/);
    assert.match(result, /1 entries skipped/);
    assert.ok(existsSync(userTable), "the user's models.toml written");
    await wd.until("the model priced", async () => (await wd.attr(await wd.find('[data-testid="session-models"] tr[data-model="x-ai/grok-4-fast"]'), "data-priced")) === "true");
    assert.equal(await wd.exec(`return document.querySelectorAll('[data-testid="pricing"] [data-testid="cost-notice"]').length`), 0, "no notice once priced");
    const cost = await text('[data-testid="session-cost"]');
    const usd = Number(cost.match(/^Cost \$([\d.,]+)/)[1].replace(/,/g, ""));
    assert.ok(usd > 0, cost);
    assert.match(await text('[data-testid="pricing"]'), /window 2,000,000, max output 30,000/);
    await wd.exec(`document.querySelector('[data-testid="pricing"]').scrollIntoView()`);
    await wd.shot("costs-03-imported");
  });

  it("names logs without a title by their first prompt and folder, never a bare UUID", async () => {
    // The picker's options, without its "— session —" placeholder.
    const pickerNames = `return [...document.querySelectorAll('select.session-pick option')].map(o => o.textContent).filter(t => t !== '— session —')`;
    for (const [i, p] of UNTITLED.entries()) {
      await wd.openPath(p);
      try {
        await wd.until(`${p} open`, async () => (await wd.exec(pickerNames)).length >= 2 + i);
      } catch (e) {
        await wd.shot("costs-04-names-failed");
        throw new Error(`${e.message}; the picker lists: ${(await wd.exec(pickerNames)).join(" | ")}; page: ${(await wd.exec("return document.body.innerText")).slice(0, 600)}`);
      }
    }
    const picker = await wd.exec(pickerNames);
    for (const name of picker) assert.doesNotMatch(name.trim(), UUID, `picker: ${picker.join(" | ")}`);
    assert.ok(picker.some((n) => n.endsWith(" · agno")), `the Codex log by prompt · folder: ${picker.join(" | ")}`);
    assert.ok(picker.some((n) => n.endsWith(" · pi-mono")), picker.join(" | "));
    const listed = await wd.exec(`return [...document.querySelectorAll('[data-testid="sessions"] tbody tr td:first-child > div:first-child')].map(e => e.textContent)`);
    assert.ok(listed.length >= 1 + UNTITLED.length, listed.join(" | "));
    for (const name of listed) assert.doesNotMatch(name.trim(), UUID, `library: ${listed.join(" | ")}`);
    await wd.shot("costs-04-names");
  });
});
