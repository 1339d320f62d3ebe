// End to end: the real app (debug build with the UI embedded) under Xvfb, driven through
// tauri-driver and WebKitWebDriver. scripts/app-e2e.sh starts all of it and sets:
//   CTXLAB_APP      the app binary
//   WEBDRIVER_URL   tauri-driver's address
//   SHOTS           where screenshots go (target/e2e-shots)
//   REAL_LOGS       ../shared/real-logs
// Each step saves a screenshot; DOCS_SHOT=path also saves the compare view there.

import assert from "node:assert/strict";
import { appendFileSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { App, need } from "./app.mjs";

const REAL_LOGS = need("REAL_LOGS");
const FOREST = join(REAL_LOGS, "claude-code_vr-forest/day1-02-footsteps-crickets-spatial-audio.jsonl");
// Claude Code behind a logging proxy: 8 agents, one a subagent of the main one (issue #21).
const AGENTS_LOG = join(REAL_LOGS, "llm-trace-proxy_wang0618/claude-code.jsonl");
const work = mkdtempSync(join(tmpdir(), "ctxlab-e2e-"));
const wd = new App();





describe("ctxlab app", () => {
  before(async () => {
    await wd.launch();
  });
  after(async () => {
    await wd.quit();
  });

  it("opens a log and shows its agents and estimate fidelity", async () => {
    await wd.openPath(FOREST);
    await wd.until("the session in the library", async () => (await wd.text(await wd.find('[data-testid="sessions"]'))).includes("claude-code"));
    await wd.tab("session");
    assert.match(await wd.textOf('[data-testid="fidelity"] strong'), /^±\d+\.\d%$/);
    const agents = await wd.textOf('[data-testid="agents"]');
    assert.match(agents, /\d{1,3}(,\d{3})+/, "token counts with thousands separators");
    await wd.until("the calls chart", async () => Number(await wd.attr(await wd.find('[data-testid="chart"]'), "data-points")) > 100);
    await wd.shot("01-session");
  });

  it("replays two strategies and shows charts with markers, thresholds and the metrics table", async () => {
    await wd.tab("compare");
    await wd.press('[data-testid="pick-none"]');
    await wd.press('[data-testid="pick-fuseraft.compaction"]');
    await wd.setInput("param-fuseraft.compaction-WarnAt", "400000");
    await wd.setInput("param-fuseraft.compaction-CutoverAt", "600000");
    await wd.press('[data-testid="run-compare"]');
    const table = await wd.waitFor('[data-testid="metrics-table"]', 180_000);
    const rows = await wd.findAll('[data-testid="metrics-table"] tbody tr');
    assert.equal(rows.length, 2);
    const text = await wd.text(table);
    assert.match(text, /none/);
    assert.match(text, /fuseraft\.compaction/);
    assert.match(text, /\d{1,3}(,\d{3}){2,}/, "totals in the millions, with separators");
    const charts = await wd.findAll('[data-testid="chart"]');
    assert.equal(charts.length, 2, "cumulative and occupancy, separate");
    const cumulative = charts[0];
    // Compactions are ticks on the strategies' marker lanes under the plot (issue #21).
    assert.equal(await wd.attr(cumulative, "data-lanes"), "2", "one marker lane per strategy");
    await wd.until("compaction ticks drawn", async () => Number(await wd.attr(cumulative, "data-lane-ticks")) > 0);
    assert.ok(Number(await wd.attr(cumulative, "data-thresholds")) >= 2, "warn and cutover lines");
    const titles = await wd.exec(`return [...document.querySelectorAll('.chart-title')].map(e => e.textContent)`);
    assert.match(titles[0], /Cumulative input tokens/);
    assert.match(titles[1], /Context occupancy/);
    const png = await wd.shot("02-compare");
    if (process.env.DOCS_SHOT) writeFileSync(process.env.DOCS_SHOT, png);
  });

  it("shows what each strategy kept at a call, side by side", async () => {
    await wd.setInput("kept-call", "120");
    await wd.exec(`document.querySelector('[data-testid="show-kept"]').scrollIntoView()`);
    await wd.press('[data-testid="show-kept"]');
    await wd.waitFor('[data-testid="kept-1"]', 60_000);
    const none = await wd.text(await wd.find('[data-testid="kept-0"] .context-head'));
    const fr = await wd.text(await wd.find('[data-testid="kept-1"] .context-head'));
    assert.match(none, /call 120/);
    const tokens = (s) => Number(s.match(/([\d,]+) tokens/)[1].replace(/,/g, ""));
    assert.ok(tokens(fr) < tokens(none), `fuseraft kept less than none at call 120: ${fr} vs ${none}`);
    await wd.exec(`document.querySelector('[data-testid="kept"]').scrollIntoView()`);
    await wd.shot("03-kept");
  });

  it("sweeps a 2×2 grid and shows the Pareto chart and why the picked set compacted", async () => {
    await wd.tab("tune");
    await wd.waitFor('[data-testid="tune-strategy"]');
    await wd.exec(
      `const s = document.querySelector('[data-testid="tune-strategy"]');
       s.value = 'fuseraft.compaction'; s.dispatchEvent(new Event('change', { bubbles: true }));`,
    );
    await wd.press('[data-testid="sweep-TriggerTurnCount"]');
    await wd.setInput("sweep-TriggerTurnCount-from", "20");
    await wd.setInput("sweep-TriggerTurnCount-to", "40");
    await wd.press('[data-testid="sweep-CutoverAt"]');
    await wd.setInput("sweep-CutoverAt-from", "450000");
    await wd.setInput("sweep-CutoverAt-to", "800000");
    await wd.press('[data-testid="run-tune"]');
    await wd.waitFor('[data-testid="tune-candidates"]', 300_000);
    const rows = await wd.findAll('[data-testid="tune-candidates"] tbody tr');
    assert.equal(rows.length, 4, "2 × 2 parameter sets");
    await wd.until("the Pareto chart drawn", async () => (await wd.exec(`return document.querySelectorAll('[data-testid="pareto-chart"] canvas').length`)) === 1);
    const table = await wd.text(await wd.find('[data-testid="tune-candidates"]'));
    assert.match(table, /best \(cost\)/);
    assert.match(table, /Pareto/);
    const why = await wd.text(await wd.waitFor('[data-testid="tune-why"]', 60_000));
    assert.match(why, /fired at call \d/);
    await wd.exec(`document.querySelector('[data-testid="tune-progress"], .tune-grid').scrollIntoView()`);
    await wd.shot("04-tune");
  });

  it("exports the tuned parameters to a config file that reads back", async () => {
    await wd.tab("export");
    await wd.waitFor('[data-testid="export-strategy"]');
    await wd.exec(
      `const s = document.querySelector('[data-testid="export-strategy"]');
       s.value = 'fuseraft.compaction'; s.dispatchEvent(new Event('change', { bubbles: true }));`,
    );
    const out = join(work, "fuseraft.yaml");
    await wd.setInput("export-path", out);
    await wd.press('[data-testid="export-write"]');
    await wd.waitFor('[data-testid="export-written"]', 30_000);
    const text = readFileSync(out, "utf8");
    assert.match(text, /CutoverAt: 600000/);
    assert.match(text, /WarnAt: 400000/);
    assert.equal(await wd.text(await wd.find('[data-testid="export-text"]')), text.trimEnd());
    await wd.shot("05-export");
    await wd.tab("library");
    const stored = await wd.text(await wd.waitFor('[data-testid="stored"]'));
    assert.match(stored, /claude-code/, "the opened log is in the SQLite library");
  });

  it("draws one line per agent of a log with subagents, and what fills the context", async () => {
    await wd.openPath(AGENTS_LOG);
    await wd.until("the multi-agent log open", async () => (await wd.text(await wd.find('[data-testid="sessions"]'))).includes("http-capture"));
    await wd.tab("session");
    const agents = (await wd.findAll('[data-testid="agents"] tbody tr')).length;
    assert.equal(agents, 8);
    const chart = await wd.waitFor('[data-testid="chart"][data-agent-series]', 30_000);
    await wd.until("the per-agent chart drawn", async () => Number(await wd.attr(chart, "data-points")) > 0);
    assert.equal(Number(await wd.attr(chart, "data-agent-series")), agents, "one series per agent");
    // Recorded and estimate per agent; never one line across agents.
    assert.equal(Number(await wd.attr(chart, "data-series")), 2 * agents);
    const legend = await wd.exec(`return [...document.querySelectorAll('[data-testid="session-legend"] [data-agent]')].map(e => e.textContent)`);
    assert.equal(legend.length, agents);
    assert.equal(legend.filter((t) => t.startsWith("↳")).length, 1, "the subagent is tied to its parent");
    assert.ok(Number(await wd.attr(chart, "data-lanes")) >= 1, "recorded compactions on their agent's lane");
    await wd.shot("09-session-agents");

    // What fills the context at the last call, then at another one picked by the user.
    const sums = async () =>
      wd.exec(`const bar = document.querySelector('[data-testid="composition-bar"]');
        const segs = [...bar.querySelectorAll('.comp-seg')].map(s => Number(s.dataset.tokens));
        return { call: Number(bar.dataset.call), total: Number(bar.dataset.total), sum: segs.reduce((a, b) => a + b, 0), n: segs.length,
                 shown: Number(document.querySelector('[data-testid="composition-total"]').textContent.replace(/,/g, '')) };`);
    await wd.waitFor('[data-testid="composition-bar"]', 60_000);
    let c = await sums();
    assert.equal(c.call, 48);
    assert.ok(c.total > 0 && c.n >= 2, JSON.stringify(c));
    assert.equal(c.sum, c.total, "the bar sums to the call's context");
    assert.equal(c.shown, c.total);
    await wd.setInput("context-call", "20");
    await wd.press('[data-testid="show-context"]');
    await wd.until("the composition of call 20", async () => (await sums()).call === 20, 30_000);
    c = await sums();
    assert.equal(c.sum, c.total, "call 20 sums too");
    // The provider's record of the call stands beside what the kinds explain of it.
    const rec = await wd.exec(`return [...document.querySelectorAll('[data-testid="composition-recorded"], [data-testid="composition-unexplained"]')].map(e => Number(e.textContent.replace(/,/g, '')))`);
    assert.equal(rec.length, 2, "recorded and unexplained rows");
    assert.ok(rec[0] > 0, "the call's recorded context");
    assert.equal(rec[0] - c.total, rec[1], "unexplained = recorded − reconstructed");
    await wd.until("the stacked areas drawn", async () => (await wd.exec(`return document.querySelectorAll('[data-testid="composition-areas"] canvas').length`)) >= 1, 30_000);
    await wd.exec(`document.querySelector('[data-testid="composition"]').scrollIntoView()`);
    await wd.shot("10-composition");
  });

  it("compares seven strategies: a colour each, one chart per strategy, marker lanes", async () => {
    await wd.openPath(FOREST);
    await wd.until("the forest log selected", async () => (await wd.exec(`return document.querySelector('[data-testid="sessions"] tr.selected')?.textContent ?? ''`)).includes("day1-02"), 60_000);
    await wd.tab("compare");
    const ids = ["none", "recorded", "fuseraft.compaction", "phi-core.context", "fim-one.context-guard", "librechat.agents", "codetether.compression"];
    for (const id of ids) {
      const checked = await wd.exec(`return document.querySelector('[data-testid="pick-${id}"]').checked`);
      if (!checked) await wd.press(`[data-testid="pick-${id}"]`);
    }
    await wd.press('[data-testid="run-compare"]');
    await wd.until("seven runs", async () => (await wd.exec(`return document.querySelectorAll('[data-testid="metrics-table"] tbody tr').length`)) === 7, 300_000);
    const legend = await wd.exec(`return [...document.querySelectorAll('[data-testid="compare-legend"] [data-strategy]')].map(e => [e.dataset.strategy, e.dataset.color])`);
    assert.deepEqual(legend.map((l) => l[0]).sort(), [...ids].sort(), "legend entries = strategies");
    assert.equal(new Set(legend.map((l) => l[1])).size, 7, "no two strategies share a colour");
    // The metrics table's swatches carry the same colours.
    const swatches = await wd.exec(`return [...document.querySelectorAll('[data-testid="metrics-table"] tbody tr')].map(r => [r.dataset.strategy, getComputedStyle(r.querySelector('.swatch')).backgroundColor])`);
    assert.equal(new Set(swatches.map((s) => s[1])).size, 7);
    assert.equal(await wd.exec(`return document.querySelector('[data-testid="per-strategy"]').checked`), true, "one chart per strategy above four");
    const charts = await wd.findAll('[data-testid="charts"] [data-testid="chart"]');
    assert.equal(charts.length, 14, "cumulative and occupancy for each strategy");
    const lanes = await wd.exec(`return [...document.querySelectorAll('[data-testid="charts"] [data-testid="chart"]')].map(c => [Number(c.dataset.lanes), Number(c.dataset.laneTicks)])`);
    assert.ok(lanes.every((l) => l[0] === 1), "a marker lane under every chart");
    assert.equal(await wd.exec(`return document.querySelectorAll('[data-testid="charts"] [data-testid="marker-lanes"]').length`), 14);
    assert.ok(lanes.some((l) => l[1] > 0), "compactions or pruning on some lane");
    await wd.shot("11-compare-seven");
    // Overlaid: still one legend entry per strategy, lanes one per strategy under each chart.
    await wd.press('[data-testid="per-strategy"]');
    await wd.until("two overlaid charts", async () => (await wd.findAll('[data-testid="charts"] [data-testid="chart"]')).length === 2);
    assert.equal(Number(await wd.attr((await wd.findAll('[data-testid="charts"] [data-testid="chart"]'))[1], "data-lanes")), 7);
    await wd.shot("12-compare-overlaid");
    // The same views in the other theme.
    await wd.press('[data-testid="theme"]');
    await new Promise((r) => setTimeout(r, 400));
    await wd.shot("13-compare-overlaid-other-theme");
    await wd.tab("session");
    await wd.waitFor('[data-testid="composition-bar"]', 60_000);
    await wd.exec(`document.querySelector('[data-testid="composition"]').scrollIntoView()`);
    await new Promise((r) => setTimeout(r, 400));
    await wd.shot("14-composition-other-theme");
    await wd.exec(`window.scrollTo(0, 0); document.querySelector('[data-testid="chart"]').scrollIntoView()`);
    await wd.shot("15-session-other-theme");
    await wd.press('[data-testid="theme"]');
  });

  it("names a broken file and why it could not be read", async () => {
    const broken = join(work, "broken.jsonl");
    writeFileSync(broken, "this is not a session log\n{\"half\": \n");
    await wd.openPath(broken);
    const box = await wd.waitFor('[data-testid="load-errors"] [data-testid="error"]');
    const msg = await wd.text(box);
    assert.match(msg, /broken\.jsonl/);
    assert.match(msg, /not a session log ctxlab can read/);
    await wd.shot("06-broken-file");
  });

  it("follows a log while it is written: new calls appear on the chart", async () => {
    const lines = readFileSync(FOREST, "utf8").split("\n").filter((l) => l.length);
    const live = join(work, "live.jsonl");
    const half = Math.floor(lines.length / 2);
    writeFileSync(live, lines.slice(0, half).join("\n") + "\n");
    await wd.openPath(live);
    await wd.until("the live log open", async () => (await wd.text(await wd.find('[data-testid="sessions"]'))).includes("live.jsonl"));
    await wd.tab("session");
    await wd.until("its chart", async () => Number(await wd.attr(await wd.find('[data-testid="chart"]'), "data-points")) > 0);
    const before = Number(await wd.attr(await wd.find('[data-testid="chart"]'), "data-points"));
    await wd.press('[data-testid="follow-toggle"]');
    await wd.waitFor('[data-testid="live"]');
    appendFileSync(live, lines.slice(half).join("\n") + "\n");
    await wd.until("the appended calls on the chart", async () => Number(await wd.attr(await wd.find('[data-testid="chart"]'), "data-points")) > before, 30_000);
    assert.match(await wd.text(await wd.find('[data-testid="live"]')), /live · \+\d+ calls/);
    await wd.shot("07-live");
    await wd.press('[data-testid="follow-toggle"]');
  });
  // Last: runs after the steps above in the same window: the open log, the comparison and the sweep
  // are still there, so every view has something to show.
  it("switches the theme and every view still reads", async () => {
    const before = await wd.exec("return document.documentElement.dataset.theme");
    // The nav is drawn again at every change (the followed log's polls): a click can land and
    // still report its button stale, and a retried press would switch back. So look first, and
    // click only while the theme has not switched.
    const after = await wd.until("the theme to switch", async () => {
      const t = await wd.exec("return document.documentElement.dataset.theme");
      if (t !== before) return t;
      await wd.click(await wd.find('[data-testid="theme"]')).catch(() => {});
      return false;
    });
    assert.ok(after === "dark" || after === "light");
    // The charts are drawn again in the theme's colours: the axis text follows the theme.
    for (const view of ["library", "session", "compare", "tune", "export"]) {
      await wd.tab(view);
      if (view === "compare") {
        // The comparison again, on the log open now (the live one): its charts in this theme.
        await wd.press('[data-testid="run-compare"]');
        await wd.waitFor('[data-testid="metrics-table"]', 180_000);
      }
      if (view === "tune") {
        // The sweep again too (its grid is still ticked): the Pareto chart in this theme.
        await wd.press('[data-testid="run-tune"]');
        await wd.waitFor('[data-testid="tune-candidates"]', 300_000);
        await wd.until("the Pareto chart drawn", async () => (await wd.exec(`return document.querySelectorAll('[data-testid="pareto-chart"] canvas').length`)) === 1);
      }
      if (view === "session" || view === "compare") await wd.waitFor('[data-testid="chart"] canvas', 30_000);
      await new Promise((r) => setTimeout(r, 300));
      await wd.shot(`08-${after}-${view}`);
    }
    await wd.press('[data-testid="theme"]');
    assert.equal(await wd.exec("return document.documentElement.dataset.theme"), before);
  });
});
