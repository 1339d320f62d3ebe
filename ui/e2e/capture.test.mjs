// End to end, a capture followed live (issue #26 points 3 and 4): the real app under Xvfb on the
// real llm-trace capture of Claude Code (8 agents, Anthropic SSE), written to a file exchange by
// exchange as `ctxlab capture` appends them. The Session view follows it: the per-agent chart and
// the call count grow with each batch, and what fills the context is the whole request (system
// prompt and tool schemas counted from its text). Compare replays a strategy on what was captured
// so far, and again after more exchanges arrive, each time over every call captured by then.
// scripts/app-e2e.sh sets CTXLAB_APP, WEBDRIVER_URL, SHOTS, REAL_LOGS.

import assert from "node:assert/strict";
import { appendFileSync, existsSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { App, need } from "./app.mjs";

const REAL_LOGS = need("REAL_LOGS");
const CAPTURE = join(REAL_LOGS, "llm-trace-proxy_wang0618/claude-code.jsonl");
assert.ok(existsSync(CAPTURE), `${CAPTURE} is missing: ../shared/real-logs must sit beside the checkout`);
const work = mkdtempSync(join(tmpdir(), "ctxlab-e2e-capture-"));
const wd = new App();





/** Calls of the open session, as the Session view shows them. */
const sessionCalls = async () => Number(await wd.attr(await wd.find('[data-testid="session-summary"]'), "data-calls"));
const chartPoints = async () => Number(await wd.attr(await wd.find('[data-testid="chart"]'), "data-points"));

/** Runs the comparison with `none` and fuseraft's compaction and waits for both runs to cover
 *  `calls` calls (the table of the previous run stays on screen until the new one replaces it);
 *  on a timeout, says what the table showed. */
async function replay(calls) {
  await wd.tab("compare");
  for (const id of ["none", "fuseraft.compaction"]) {
    await wd.waitFor(`[data-testid="pick-${id}"]`, 60_000);
    if (!(await wd.exec(`return document.querySelector('[data-testid="pick-${id}"]').checked`))) await wd.press(`[data-testid="pick-${id}"]`);
  }
  await wd.press('[data-testid="run-compare"]');
  const runs = () => wd.exec(`return [...document.querySelectorAll('[data-testid="metrics-table"] tbody tr')].map(r => [r.dataset.strategy, Number(r.dataset.calls)])`);
  try {
    await wd.until(`two runs over ${calls} calls`, async () => {
      const r = await runs();
      return r.length === 2 && r.every(([, n]) => n === calls);
    }, 300_000);
  } catch (e) {
    assert.fail(`${e.message}; the table shows ${JSON.stringify(await runs())}`);
  }
  return Object.fromEntries(await runs());
}

describe("a capture followed live", () => {
  before(async () => {
    await wd.launch();
  });
  after(async () => {
    await wd.quit();
  });

  it("grows the chart as exchanges are appended and replays a strategy on what was captured so far", async () => {
    const lines = readFileSync(CAPTURE, "utf8").split("\n").filter((l) => l.length);
    assert.ok(lines.length >= 48, "the capture's exchanges");
    const live = join(work, "capture-live.jsonl");
    writeFileSync(live, lines.slice(0, 16).join("\n") + "\n");
    await wd.openPath(live);
    await wd.until("the capture open", async () => (await wd.text(await wd.find('[data-testid="sessions"]'))).includes("capture-live"), 60_000);
    await wd.tab("session");
    await wd.until("its chart", async () => (await chartPoints()) > 0, 60_000);
    const calls0 = await sessionCalls();
    const points0 = await chartPoints();
    assert.ok(calls0 > 0 && calls0 <= 16, `calls of the first 16 exchanges: ${calls0}`);

    // What fills the context is the whole request: its tool schemas are a kind of their own.
    await wd.waitFor('[data-testid="composition-whole"]', 60_000);
    const kinds = await wd.exec(`return [...document.querySelectorAll('[data-testid="composition-bar"] .comp-seg')].map(s => s.title.split(':')[0])`);
    assert.ok(kinds.includes("system") && kinds.includes("tool schemas"), `segments: ${kinds}`);

    await wd.press('[data-testid="follow-toggle"]');
    await wd.waitFor('[data-testid="live"]');
    appendFileSync(live, lines.slice(16, 32).join("\n") + "\n");
    await wd.until("the appended exchanges on the chart", async () => (await chartPoints()) > points0 && (await sessionCalls()) > calls0, 60_000);
    const calls1 = await sessionCalls();
    assert.match(await wd.text(await wd.find('[data-testid="live"]')), /live · \+\d+ calls/);
    await wd.exec(`document.querySelector('[data-testid="chart"]').scrollIntoView()`);
    await wd.shot("16-capture-live");

    // What if: a strategy replayed over every call captured so far, while the capture goes on.
    let runs = await replay(calls1);
    assert.deepEqual(runs, { none: calls1, "fuseraft.compaction": calls1 }, "the replay covers what was captured so far");
    await wd.shot("17-capture-replay");

    appendFileSync(live, lines.slice(32).join("\n") + "\n");
    await wd.tab("session");
    await wd.until("the last exchanges in", async () => (await sessionCalls()) > calls1, 60_000);
    const calls2 = await sessionCalls();
    runs = await replay(calls2);
    assert.deepEqual(runs, { none: calls2, "fuseraft.compaction": calls2 }, "the replay grows with the capture");
    await wd.tab("session");
    await wd.press('[data-testid="follow-toggle"]');
    await wd.until("following stopped", async () => (await wd.findAll('[data-testid="live"]')).length === 0);
    await wd.exec(`document.querySelector('[data-testid="composition"]').scrollIntoView()`);
    await wd.shot("18-capture-composition");
  });
});
