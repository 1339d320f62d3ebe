// A small W3C WebDriver client over HTTP (fetch), enough for tauri-driver + WebKitWebDriver.

const ELEMENT = "element-6066-11e4-a52e-4f735466cecf";

export class WebDriver {
  constructor(base) {
    this.base = base;
    this.id = null;
  }

  async req(method, path, body) {
    const url = this.base + (this.id && !path.startsWith("/session") ? `/session/${this.id}${path}` : path);
    const r = await fetch(url, {
      method,
      headers: { "content-type": "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await r.text();
    let json;
    try {
      json = JSON.parse(text);
    } catch {
      throw new Error(`${method} ${path}: ${r.status} ${text.slice(0, 300)}`);
    }
    if (!r.ok || (json.value && json.value.error)) {
      const v = json.value ?? {};
      throw new Error(`${method} ${path}: ${v.error ?? r.status}: ${v.message ?? text.slice(0, 300)}`);
    }
    return json.value;
  }

  /** Opens a session. tauri-driver starts WebKitWebDriver on the first request and proxies to
   * it; a request that arrives before the native driver listens is dropped ("fetch failed",
   * "other side closed"), so a dropped connection is tried again, a few times, a second apart.
   * A refusal the driver answers (a bad capability) is not retried. */
  async start(capabilities, attempts = 10) {
    for (let i = 1; ; i++) {
      try {
        const v = await this.req("POST", "/session", { capabilities: { alwaysMatch: capabilities } });
        this.id = v.sessionId;
        return v;
      } catch (e) {
        const dropped = e instanceof TypeError || /other side closed|ECONNRESET|ECONNREFUSED|: 5\d\d[ :]/.test(String(e.message));
        if (!dropped || i >= attempts) throw e;
        await new Promise((r) => setTimeout(r, 1000));
      }
    }
  }

  async quit() {
    if (!this.id) return;
    const id = this.id;
    this.id = null;
    await this.req("DELETE", `/session/${id}`).catch(() => {});
  }

  async find(css) {
    const v = await this.req("POST", "/element", { using: "css selector", value: css });
    return v[ELEMENT];
  }

  async findAll(css) {
    const v = await this.req("POST", "/elements", { using: "css selector", value: css });
    return v.map((e) => e[ELEMENT]);
  }

  click(el) {
    return this.req("POST", `/element/${el}/click`, {});
  }

  async type(el, text) {
    await this.req("POST", `/element/${el}/clear`, {});
    return this.req("POST", `/element/${el}/value`, { text });
  }

  text(el) {
    return this.req("GET", `/element/${el}/text`);
  }

  attr(el, name) {
    return this.req("GET", `/element/${el}/attribute/${name}`);
  }

  exec(script, ...args) {
    return this.req("POST", "/execute/sync", { script, args });
  }

  screenshot() {
    return this.req("GET", "/screenshot");
  }

  /** Polls `probe` until it returns a truthy value; its last error is reported on timeout. */
  async until(what, probe, timeoutMs = 60_000) {
    const end = Date.now() + timeoutMs;
    let last = null;
    while (Date.now() < end) {
      try {
        const v = await probe();
        if (v) return v;
      } catch (e) {
        last = e;
      }
      await new Promise((r) => setTimeout(r, 250));
    }
    throw new Error(`timed out waiting for ${what}${last ? `: ${last.message}` : ""}`);
  }

  /** Clicks `css`, finding it again when a re-render replaced it between find and click. */
  press(css, timeoutMs = 30_000) {
    return this.until(`a click on ${css}`, async () => {
      await this.click(await this.find(css));
      return true;
    }, timeoutMs);
  }

  /** The text of `css` once it is there and not empty, found again when a re-render replaced
   * the element between find and read (a view that fills in as its data arrives). */
  textOf(css, timeoutMs) {
    return this.until(`the text of ${css}`, async () => this.text(await this.find(css)), timeoutMs);
  }

  /** The element for `css` once it exists. */
  waitFor(css, timeoutMs) {
    return this.until(css, () => this.find(css), timeoutMs);
  }
}
