// What every end-to-end file does with the app: its environment (set by scripts/app-e2e.sh),
// starting it, screenshots, typing into a field, switching views and opening a path.

import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { WebDriver } from "./webdriver.mjs";

/** An environment variable scripts/app-e2e.sh sets. */
export function need(name) {
  const v = process.env[name];
  if (!v) throw new Error(`${name} is not set: run the end-to-end tests with scripts/app-e2e.sh`);
  return v;
}

export class App extends WebDriver {
  constructor() {
    super(need("WEBDRIVER_URL"));
    this.shots = need("SHOTS");
  }

  /** Starts the app binary and waits until its strategies are listed (the first render replaces
   * the whole page). */
  async launch() {
    await this.start({ "tauri:options": { application: need("CTXLAB_APP") }, "wdio:enforceWebDriverClassic": true });
    await this.until("the app to start", async () => (await this.exec("return document.querySelectorAll('[data-testid=tab-library]').length")) === 1 && (await this.exec("return !!window.__TAURI_INTERNALS__")));
    await new Promise((r) => setTimeout(r, 500));
  }

  /** Saves a screenshot as SHOTS/<name>.png and returns it. */
  async shot(name) {
    mkdirSync(this.shots, { recursive: true });
    const png = Buffer.from(await this.screenshot(), "base64");
    writeFileSync(join(this.shots, `${name}.png`), png);
    return png;
  }

  /** Sets the field `testid` as a user's typing would (input and change events). */
  async setInput(testid, value) {
    await this.exec(
      `const el = document.querySelector('[data-testid="${testid}"]');
       if (!el) throw new Error('no ${testid}');
       el.value = arguments[0];
       el.dispatchEvent(new Event('input', { bubbles: true }));
       el.dispatchEvent(new Event('change', { bubbles: true }));`,
      value,
    );
  }

  tab(name) {
    return this.press(`[data-testid="tab-${name}"]`);
  }

  /** Opens a log or folder through the Library's path field. */
  async openPath(path) {
    await this.tab("library");
    await this.waitFor('[data-testid="open-path-input"]');
    await this.setInput("open-path-input", path);
    await this.press('[data-testid="open-path-button"]');
  }
}
