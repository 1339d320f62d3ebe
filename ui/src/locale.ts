// WebKitGTK reports the POSIX locale as the language when LANG is unset or "C" (as under CI or a
// bare session): navigator.language === "C", which Intl rejects. uPlot builds an Intl formatter
// from navigator.language when it loads, so this module must be imported before anything else.

function valid(tag: string): boolean {
  try {
    new Intl.NumberFormat(tag);
    return true;
  } catch {
    return false;
  }
}

if (!valid(navigator.language)) {
  Object.defineProperty(navigator, "language", { value: "en-US", configurable: true });
  Object.defineProperty(navigator, "languages", { value: ["en-US"], configurable: true });
}
