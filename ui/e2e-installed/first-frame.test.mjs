// The app as the .deb installs it (scripts/package-test.sh unpacks the package into a throwaway
// root and runs this through scripts/app-e2e.sh with E2E_DIR pointing here): it starts under
// Xvfb to its first frame and lists the built-in strategies it found in its own system folder
// (<root>/usr/lib/ctxlab/plugins), with no CTXLAB_PLUGIN_PATH and no build folder to fall back on.
// It opens a real log first: the compare view offers strategies for an open session.

import assert from "node:assert/strict";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { WebDriver } from "../e2e/webdriver.mjs";

const need = (name) => {
  const v = process.env[name];
  if (!v) throw new Error(`${name} is not set: run this with scripts/package-test.sh`);
  return v;
};
const wd = new WebDriver(need("WEBDRIVER_URL"));

describe("the installed app", () => {
  before(async () => {
    await wd.start({ "tauri:options": { application: need("CTXLAB_APP") }, "wdio:enforceWebDriverClassic": true });
  });
  after(async () => {
    await wd.quit();
  });

  it("starts to its first frame, opens a log and offers the packaged strategies", async () => {
    await wd.until("the app to start", async () => (await wd.exec("return document.querySelectorAll('[data-testid=tab-library]').length")) === 1);
    // Compare lists the strategies once a session is open.
    await wd.press('[data-testid="tab-library"]');
    await wd.waitFor('[data-testid="open-path-input"]');
    await wd.exec(
      `const el = document.querySelector('[data-testid="open-path-input"]');
       el.value = arguments[0];
       el.dispatchEvent(new Event('input', { bubbles: true }));
       el.dispatchEvent(new Event('change', { bubbles: true }));`,
      join(need("REAL_LOGS"), "claude-code_vr-forest/day1-02-footsteps-crickets-spatial-audio.jsonl"),
    );
    await wd.press('[data-testid="open-path-button"]');
    await wd.until("the session in the library", async () => (await wd.text(await wd.find('[data-testid="sessions"]'))).includes("claude-code"));
    await wd.press('[data-testid="tab-compare"]');
    for (const id of ["fuseraft.compaction", "phi-core.context", "librechat.agents"]) {
      await wd.waitFor(`[data-testid="pick-${id}"]`, 30_000);
    }
    const png = Buffer.from(await wd.screenshot(), "base64");
    assert.ok(png.length > 10_000, "a drawn frame, not an empty one");
    mkdirSync(need("SHOTS"), { recursive: true });
    writeFileSync(join(need("SHOTS"), "installed-first-frame.png"), png);
  });
});
