import { defineConfig } from "vite";

// Tauri serves dist/ from its own protocol: relative asset paths, no external URLs.
export default defineConfig({
  base: "./",
  clearScreen: false,
  // The chart scheme is the library's (../src/chart/scheme.json): the dev server may read it.
  server: { port: 5173, strictPort: true, fs: { allow: [".", "../src/chart"] } },
  build: { outDir: "dist", target: "es2022", sourcemap: false, chunkSizeWarningLimit: 1000 },
  test: { environment: "node", include: ["src/**/*.test.ts"] },
});
